// One xccl communicator as torch.distributed uses it: made through the c10d Store it is
// given, operations issued in call order (every rank must see the same order) each as
// one xccl group, and one progress thread that waits for them in that order, copies
// staged results back and completes their Work and futures.
//
// Nothing here depends on c10d::ProcessGroup: the ProcessGroup (PyTorch 1.13) or a
// c10d::Backend (2.x) forwards to it.
#pragma once

#include <torch/csrc/distributed/c10d/Store.hpp>
#include <xccl/xccl.h>

#include <condition_variable>
#include <deque>
#include <functional>
#include <initializer_list>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "work.h"

namespace xccl_torch {

// What an operation hands the communicator: its xccl calls (plain forms; they run as one
// group), the work to complete, what to do once the data is in place (copy staged
// outputs back) and the tensors to keep alive until then.
struct Launch {
  std::string what;  // "xccl allreduce", for messages
  c10d::OpType type;
  std::vector<at::Tensor> outputs;                 // the future's value
  std::vector<at::Tensor> keep;                    // inputs and staging
  std::function<xcclResult_t(xcclComm_t)> issue;   // the xccl calls
  std::function<void()> finish;                    // after success; may be empty
  bool point_to_point = false;                     // a send or receive: may be held back
};

class Communicator {
 public:
  // Joins rank `rank` of `size` through `store`: rank 0 makes the xccl id and sets it
  // under `key`, the others get it (waiting as the store does).
  Communicator(const c10::intrusive_ptr<c10d::Store>& store, int rank, int size, const std::string& key = "xccl/id");
  ~Communicator();  // lets issued operations finish, then frees the communicator
  Communicator(const Communicator&) = delete;
  Communicator& operator=(const Communicator&) = delete;

  int rank() const { return rank_; }
  int size() const { return size_; }

  // Issues `op`, after every operation launched before it. A send or receive outside
  // coalescing is held back and issued, together with the sends and receives after it,
  // as one group when anything waits on or polls one of them or another operation is
  // launched: so an isend followed by an irecv of the same exchange cannot deadlock (as
  // gloo's do not), while a send xccl could not buffer would block the receive behind it.
  c10::intrusive_ptr<c10d::Work> launch(Launch op);
  // Operations launched on this thread between these two are issued as one group (and
  // so may exchange with each other: batch_isend_irecv); their works complete together.
  void start_coalescing();
  void end_coalescing();
  // Waits until every operation launched so far has completed: before an operation
  // copies an input on the calling thread (staging, packing), so that the copy sees what
  // the earlier operations wrote, as it would if xccl read the tensor in place.
  void drain();
  // With TORCH_DISTRIBUTED_DEBUG=DETAIL (PyTorch's switch for the same check on gloo and
  // NCCL): every rank's `signature` of the collective it is about to launch (kind, type,
  // sizes, root), compared across ranks by one small all-gather; disagreement is an error
  // naming each rank's call. Off by default: like NCCL, xccl trusts the ranks to agree.
  void agree(const std::string& what, std::initializer_list<int64_t> signature) {
    if (check_agreement_) compare(what, signature);  // off: nothing built, nothing sent
  }

 private:
  struct Pending {
    std::string what;
    xcclRequest_t request = nullptr;  // null: nothing to wait for
    std::vector<c10::intrusive_ptr<WorkXccl>> works;
    std::vector<std::function<void()>> finishes;
    std::vector<at::Tensor> keep;
  };
  void compare(const std::string& what, const std::vector<int64_t>& signature);
  void progress();
  void enqueue(Pending p);
  void flush();         // issues the held-back sends and receives
  void flush_locked();  // the same, issue_mu_ held
  // Issues `ops` as one xccl group; their works complete together.
  // Returns the first failure's message (nothing was left queued), or "".
  std::string issue_group(std::vector<std::pair<Launch, c10::intrusive_ptr<WorkXccl>>>& ops);

  int rank_, size_;
  bool check_agreement_ = false;
  xcclComm_t comm_ = nullptr;
  std::mutex issue_mu_;  // xccl calls and queue order: one operation at a time
  std::thread::id coalescing_;  // the thread inside start/end_coalescing, if any
  Pending coalesced_;
  std::vector<std::pair<Launch, c10::intrusive_ptr<WorkXccl>>> held_;  // sends and receives not yet issued
  std::shared_ptr<Communicator*> self_;  // what held-back works flush through; null once destroyed

  std::mutex mu_;
  std::condition_variable cv_;
  std::condition_variable idle_cv_;
  std::deque<Pending> queue_;
  bool busy_ = false;  // the progress thread holds an operation taken off the queue
  bool stopping_ = false;
  std::thread progress_;
};

}  // namespace xccl_torch
