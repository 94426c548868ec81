#include "communicator.h"

#include <c10/util/Exception.h>

#include <cstdlib>
#include <cstring>
#include <stdexcept>

namespace xccl_torch {
namespace {

std::string last_error(const std::string& what, xcclResult_t r) {
  std::string detail = xcclGetLastError();
  return what + ": " + (detail.empty() ? xcclGetErrorString(r) : detail);
}

}  // namespace

Communicator::Communicator(const c10::intrusive_ptr<c10d::Store>& store, int rank, int size, const std::string& key)
    : rank_(rank), size_(size) {
  const char* debug = std::getenv("TORCH_DISTRIBUTED_DEBUG");
  check_agreement_ = debug && std::string(debug) == "DETAIL";
  xcclUniqueId id{};
  if (rank == 0) {
    xcclResult_t r = xcclGetUniqueId(&id);
    TORCH_CHECK(r == xcclSuccess, last_error("xccl: making the job's id", r));
    store->set(key, std::vector<uint8_t>(id.internal, id.internal + sizeof id.internal));
  } else {
    std::vector<uint8_t> got = store->get(key);
    TORCH_CHECK(got.size() == sizeof id.internal, "xccl: the store's ", key, " holds ", got.size(), " bytes, not an xccl id of ",
                sizeof id.internal);
    std::memcpy(id.internal, got.data(), got.size());
  }
  xcclResult_t r = xcclCommInitRank(&comm_, size, id, rank);
  TORCH_CHECK(r == xcclSuccess, last_error("xccl: rank " + std::to_string(rank) + " of " + std::to_string(size) + " joining", r));
  self_ = std::make_shared<Communicator*>(this);
  progress_ = std::thread([this] { progress(); });
}

Communicator::~Communicator() {
  flush();
  {
    std::lock_guard<std::mutex> lock(issue_mu_);
    *self_ = nullptr;
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  progress_.join();  // the queue drains first: every work completes, with its error if any
  xcclCommDestroy(comm_);
}

c10::intrusive_ptr<c10d::Work> Communicator::launch(Launch op) {
  auto work = c10::make_intrusive<WorkXccl>(rank_, op.type, op.what.c_str(), op.outputs);
  std::lock_guard<std::mutex> lock(issue_mu_);
  const bool coalescing = coalescing_ == std::this_thread::get_id();
  if (op.point_to_point && !coalescing) {
    work->set_before_wait([weak = std::weak_ptr<Communicator*>(self_)] {
      if (auto self = weak.lock(); self && *self) (*self)->flush();
    });
    held_.emplace_back(std::move(op), work);
    return work;
  }
  flush_locked();
  std::vector<std::pair<Launch, c10::intrusive_ptr<WorkXccl>>> one;
  one.emplace_back(std::move(op), work);
  std::string error = issue_group(one);  // inside coalescing: joins the open group
  TORCH_CHECK(error.empty(), error);
  return work;
}

std::string Communicator::issue_group(std::vector<std::pair<Launch, c10::intrusive_ptr<WorkXccl>>>& ops) {
  const bool coalescing = coalescing_ == std::this_thread::get_id();
  std::string error;
  xcclGroupStart();
  for (auto& [op, work] : ops)
    if (xcclResult_t r = op.issue(comm_); r != xcclSuccess) {
      error = last_error(op.what, r);
      break;
    }
  xcclRequest_t request = nullptr;
  xcclResult_t ended = xcclGroupEndAsync(&request);  // nested in a coalescing group: no request yet
  if (error.empty() && ended != xcclSuccess) error = last_error(ops.front().first.what, ended);
  if (!error.empty()) {
    if (request) xcclWait(request);  // what was queued before the failed call
    return error;
  }
  // Inside coalescing the works join the open group, completed when it ends.
  Pending fresh{ops.front().first.what, request, {}, {}, {}};
  Pending& into = coalescing ? coalesced_ : fresh;
  for (auto& [op, work] : ops) {
    into.works.push_back(work);
    if (op.finish) into.finishes.push_back(std::move(op.finish));
    for (at::Tensor& t : op.keep) into.keep.push_back(std::move(t));
  }
  if (!coalescing) enqueue(std::move(fresh));
  return "";
}

void Communicator::flush() {
  std::lock_guard<std::mutex> lock(issue_mu_);
  flush_locked();
}

void Communicator::flush_locked() {
  if (held_.empty()) return;
  auto ops = std::move(held_);
  held_.clear();
  if (std::string error = issue_group(ops); !error.empty()) {
    auto e = std::make_exception_ptr(std::runtime_error(error));
    for (auto& [op, work] : ops) work->complete(e);
  }
}

void Communicator::start_coalescing() {
  std::lock_guard<std::mutex> lock(issue_mu_);
  TORCH_CHECK(coalescing_ == std::thread::id(), "xccl: start_coalescing twice without end_coalescing");
  flush_locked();
  coalescing_ = std::this_thread::get_id();
  coalesced_ = Pending{};
  coalesced_.what = "xccl coalesced operations";
  xcclGroupStart();
}

void Communicator::end_coalescing() {
  std::lock_guard<std::mutex> lock(issue_mu_);
  TORCH_CHECK(coalescing_ == std::this_thread::get_id(), "xccl: end_coalescing without start_coalescing on this thread");
  coalescing_ = std::thread::id();
  xcclRequest_t request = nullptr;
  xcclResult_t r = xcclGroupEndAsync(&request);
  Pending p = std::move(coalesced_);
  p.request = request;
  if (r != xcclSuccess) {
    const std::string message = last_error(p.what, r);
    auto error = std::make_exception_ptr(std::runtime_error(message));
    for (auto& w : p.works) w->complete(error);
    TORCH_CHECK(false, message);
  }
  enqueue(std::move(p));
}

void Communicator::compare(const std::string& what, const std::vector<int64_t>& signature) {
  constexpr size_t kFields = 8;
  TORCH_INTERNAL_ASSERT(signature.size() <= kFields);
  std::vector<int64_t> mine(kFields, -1), all(kFields * size_t(size_));
  std::copy(signature.begin(), signature.end(), mine.begin());
  {
    std::lock_guard<std::mutex> lock(issue_mu_);
    flush_locked();
    xcclResult_t r = xcclAllGather(mine.data(), all.data(), kFields, xcclInt64, comm_);
    TORCH_CHECK(r == xcclSuccess, last_error(what + ": checking that the ranks agree", r));
  }
  auto describe = [&](int r) {
    std::string out = "rank " + std::to_string(r) + " (";
    for (size_t i = 0; i < signature.size(); ++i) out += (i ? " " : "") + std::to_string(all[size_t(r) * kFields + i]);
    return out + ")";
  };
  for (int r = 0; r < size_; ++r)
    TORCH_CHECK(std::equal(mine.begin(), mine.end(), all.begin() + long(r) * long(kFields)), what,
                ": the ranks disagree on the call (operation, type, element counts, root, op): ", describe(rank_),
                " against ", describe(r));
}

void Communicator::enqueue(Pending p) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    queue_.push_back(std::move(p));
  }
  cv_.notify_one();
}

void Communicator::progress() {
  for (;;) {
    Pending p;
    {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
      if (queue_.empty()) return;  // stopping, and nothing left
      p = std::move(queue_.front());
      queue_.pop_front();
      busy_ = true;
    }
    std::exception_ptr error;
    xcclResult_t r = p.request ? xcclWait(p.request) : xcclSuccess;
    if (r != xcclSuccess) {
      error = std::make_exception_ptr(std::runtime_error(last_error(p.what, r)));
    } else {
      try {
        for (auto& f : p.finishes) f();
      } catch (...) {
        error = std::current_exception();
      }
    }
    p.keep.clear();
    // No lock is held here: completing a future runs its callbacks (DDP's, Python's).
    for (auto& w : p.works) w->complete(error);
    {
      std::lock_guard<std::mutex> lock(mu_);
      busy_ = false;
    }
    idle_cv_.notify_all();
  }
}

void Communicator::drain() {
  flush();
  // From a future's callback (a DDP comm hook launching its next operation) the progress
  // thread itself asks: what it completed is final, and waiting on itself would hang.
  if (std::this_thread::get_id() == progress_.get_id()) return;
  std::unique_lock<std::mutex> lock(mu_);
  idle_cv_.wait(lock, [this] { return queue_.empty() && !busy_; });
}

}  // namespace xccl_torch
