#include "collectives.h"

#include <ATen/ATen.h>
#include <c10/util/Exception.h>

#include "tensors.h"

namespace xccl_torch {
namespace {

void* ptr(const at::Tensor& t) { return t.data_ptr(); }

// call(i) for i in 0..n-1, stopping at the first failure: an operation's xccl calls.
template <typename Call>
xcclResult_t each(size_t n, Call call) {
  for (size_t i = 0; i < n; ++i)
    if (xcclResult_t e = call(i); e != xcclSuccess) return e;
  return xcclSuccess;
}

void check_same_type(const at::Tensor& output, const at::Tensor& input, const std::string& what) {
  TORCH_CHECK(output.scalar_type() == input.scalar_type(), what, ": output is ", output.scalar_type(), ", input ",
              input.scalar_type());
}
size_t count(const at::Tensor& t) { return size_t(t.numel()); }

// A tensor and the block xccl reads or writes it through: the tensor itself when it is
// contiguous, else a contiguous stand-in whose contents go back once the operation is done.
struct Staged {
  at::Tensor user, data;
  bool copied() const { return !user.is_same(data); }
};

// An input xccl reads in place, or a contiguous copy made once the earlier operations
// (which may write it) are done.
at::Tensor input(Communicator& c, const at::Tensor& t, const std::string& what) {
  at::Tensor d = dense(t, what);
  if (d.is_same(t)) return t;
  c.drain();
  return t.contiguous();
}
// A tensor the operation reads and overwrites (all-reduce, broadcast, reduce).
Staged stage(Communicator& c, const at::Tensor& t, const std::string& what) { return {t, input(c, t, what)}; }
// A tensor the operation only writes.
Staged output(const at::Tensor& t, const std::string& what) {
  at::Tensor d = dense(t, what);
  return {t, d.is_same(t) ? t : at::empty(t.sizes(), t.options())};
}

std::function<void()> copy_back(std::vector<Staged> staged) {
  std::vector<Staged> out;
  for (Staged& s : staged)
    if (s.copied()) out.push_back(std::move(s));
  if (out.empty()) return {};
  return [out = std::move(out)] {
    for (const Staged& s : out) s.user.copy_(s.data);
  };
}

// The tensors of `list` packed into one block (once the earlier operations are done), and
// how to copy it back out into them.
at::Tensor packed(Communicator& c, const Tensors& list) {
  c.drain();
  Tensors flat;
  for (const at::Tensor& t : list) flat.push_back(t.reshape(-1));
  return at::cat(flat);
}

std::function<void()> unpack_into(Tensors outputs, at::Tensor block) {
  return [outputs = std::move(outputs), block = std::move(block)] {
    int64_t at = 0;
    for (const at::Tensor& o : outputs) {
      o.copy_(block.narrow(0, at, o.numel()).view(o.sizes()));
      at += o.numel();
    }
  };
}

// What every rank must pass alike (checked with TORCH_DISTRIBUTED_DEBUG=DETAIL).
void agree(Communicator& c, const std::string& what, c10d::OpType type, const at::Tensor& t, int64_t out_numel = -1,
           int64_t root = -1, int op = -1) {
  c.agree(what, {int64_t(type), int64_t(t.scalar_type()), t.numel(), out_numel, root, op});
}

void check_root(const Communicator& c, int64_t root, const std::string& what) {
  TORCH_CHECK(root >= 0 && root < c.size(), what, ": root ", root, " is not a rank of 0..", c.size() - 1);
}

void check_peer(const Communicator& c, int peer, int tag, const std::string& what) {
  TORCH_CHECK(peer >= 0 && peer < c.size() && peer != c.rank(), what, ": peer ", peer, " is not another rank of 0..",
              c.size() - 1);
  TORCH_CHECK(tag == 0, what, ": xccl matches sends and receives in call order per peer and has no tags (tag ", tag, ")");
}

}  // namespace

WorkPtr allreduce(Communicator& c, Tensors& tensors, const c10d::AllreduceOptions& opts) {
  const std::string what = "xccl allreduce";
  Staged s = stage(c, single(tensors, what), what);
  Reduction r = reduction(s.data.scalar_type(), opts.reduceOp, what);
  at::Tensor d = s.data;
  agree(c, what, c10d::OpType::ALLREDUCE, d, -1, -1, int(opts.reduceOp.op_));
  return c.launch({what, c10d::OpType::ALLREDUCE, tensors, {d},
                   [d, r](xcclComm_t comm) { return xcclAllReduce(ptr(d), ptr(d), count(d), r.type, r.op, comm); },
                   copy_back({s})});
}

WorkPtr allreduce_coalesced(Communicator& c, Tensors& tensors, const c10d::AllreduceCoalescedOptions& opts) {
  const std::string what = "xccl allreduce_coalesced";
  std::vector<Staged> staged;
  std::vector<Reduction> reductions;
  for (const at::Tensor& t : tensors) {
    staged.push_back(stage(c, t, what));
    reductions.push_back(reduction(t.scalar_type(), opts.reduceOp, what));
  }
  Tensors data;
  for (const Staged& s : staged) data.push_back(s.data);
  // One group of all-reduces, one per tensor, each in place: no packing copy.
  for (const Staged& t : staged) agree(c, what, c10d::OpType::ALLREDUCE_COALESCED, t.data, -1, -1, int(opts.reduceOp.op_));
  return c.launch({what, c10d::OpType::ALLREDUCE_COALESCED, tensors, data,
                   [data, reductions](xcclComm_t comm) {
                     return each(data.size(), [&](size_t i) {
                       return xcclAllReduce(ptr(data[i]), ptr(data[i]), count(data[i]), reductions[i].type,
                                            reductions[i].op, comm);
                     });
                   },
                   copy_back(std::move(staged))});
}

WorkPtr broadcast(Communicator& c, Tensors& tensors, const c10d::BroadcastOptions& opts) {
  const std::string what = "xccl broadcast";
  check_root(c, opts.rootRank, what);
  Staged s = stage(c, single(tensors, what), what);
  at::Tensor d = s.data;
  xcclDataType_t type = xccl_type(d.scalar_type(), what);
  int root = int(opts.rootRank);
  agree(c, what, c10d::OpType::BROADCAST, d, -1, root);
  return c.launch({what, c10d::OpType::BROADCAST, tensors, {d},
                   [d, type, root](xcclComm_t comm) { return xcclBroadcast(ptr(d), ptr(d), count(d), type, root, comm); },
                   copy_back({s})});
}

WorkPtr reduce(Communicator& c, Tensors& tensors, const c10d::ReduceOptions& opts) {
  const std::string what = "xccl reduce";
  check_root(c, opts.rootRank, what);
  Staged s = stage(c, single(tensors, what), what);
  at::Tensor d = s.data;
  Reduction r = reduction(d.scalar_type(), opts.reduceOp, what);
  int root = int(opts.rootRank);
  agree(c, what, c10d::OpType::REDUCE, d, -1, root, int(opts.reduceOp.op_));
  return c.launch({what, c10d::OpType::REDUCE, tensors, {d},
                   [d, r, root](xcclComm_t comm) { return xcclReduce(ptr(d), ptr(d), count(d), r.type, r.op, root, comm); },
                   copy_back({s})});
}

WorkPtr allgather_base(Communicator& c, at::Tensor& output, at::Tensor& input) {
  const std::string what = "xccl _allgather_base";
  at::Tensor in = xccl_torch::input(c, input, what);
  Staged out = xccl_torch::output(output, what);
  check_same_type(output, input, what);
  TORCH_CHECK(output.numel() == input.numel() * c.size(), what, ": output has ", output.numel(), " elements, not ",
              c.size(), " x ", input.numel());
  at::Tensor o = out.data;
  xcclDataType_t type = xccl_type(in.scalar_type(), what);
  agree(c, what, c10d::OpType::_ALLGATHER_BASE, in, o.numel());
  return c.launch({what, c10d::OpType::_ALLGATHER_BASE, {output}, {in, o},
                   [in, o, type](xcclComm_t comm) { return xcclAllGather(ptr(in), ptr(o), count(in), type, comm); },
                   copy_back({out})});
}

namespace {

// All-gathers of several inputs as one group: `per_input[i]` receives every rank's
// inputs[i], one tensor per rank.
WorkPtr allgather_lists(Communicator& c, const std::vector<Tensors>& per_input, Tensors& inputs, c10d::OpType type,
                        Tensors results) {
  const std::string what = "xccl allgather";
  Tensors ins, blocks;
  std::vector<std::function<void()>> unpacks;
  for (size_t i = 0; i < inputs.size(); ++i) {
    at::Tensor in = input(c, inputs[i], what);
    TORCH_CHECK(per_input[i].size() == size_t(c.size()), what, ": ", per_input[i].size(), " outputs for ", c.size(), " ranks");
    check_same(per_input[i], in, what);
    for (const at::Tensor& o : per_input[i]) check(o, what);
    at::Tensor block = at::empty({in.numel() * c.size()}, in.options());
    ins.push_back(in);
    blocks.push_back(block);
    unpacks.push_back(unpack_into(per_input[i], block));
  }
  for (const at::Tensor& in : ins) agree(c, what, type, in);
  Tensors keep = ins;
  keep.insert(keep.end(), blocks.begin(), blocks.end());
  return c.launch({what, type, std::move(results), keep,
                   [ins, blocks, what](xcclComm_t comm) {
                     return each(ins.size(), [&](size_t i) {
                       return xcclAllGather(ptr(ins[i]), ptr(blocks[i]), count(ins[i]),
                                            xccl_type(ins[i].scalar_type(), what), comm);
                     });
                   },
                   [unpacks] {
                     for (auto& u : unpacks) u();
                   }});
}

}  // namespace

WorkPtr allgather(Communicator& c, std::vector<Tensors>& outputs, Tensors& inputs) {
  single(inputs, "xccl allgather");
  TORCH_CHECK(outputs.size() == 1, "xccl allgather: takes one list of outputs per process, got ", outputs.size());
  return allgather_lists(c, outputs, inputs, c10d::OpType::ALLGATHER, outputs[0]);
}

WorkPtr allgather_coalesced(Communicator& c, std::vector<Tensors>& outputs, Tensors& inputs) {
  // outputs[r][i] is rank r's inputs[i].
  TORCH_CHECK(outputs.size() == size_t(c.size()), "xccl allgather_coalesced: ", outputs.size(), " output lists for ",
              c.size(), " ranks");
  std::vector<Tensors> per_input(inputs.size());
  Tensors results;
  for (size_t r = 0; r < outputs.size(); ++r) {
    TORCH_CHECK(outputs[r].size() == inputs.size(), "xccl allgather_coalesced: rank ", r, "'s list holds ",
                outputs[r].size(), " tensors for ", inputs.size(), " inputs");
    for (size_t i = 0; i < inputs.size(); ++i) per_input[i].push_back(outputs[r][i]);
    results.insert(results.end(), outputs[r].begin(), outputs[r].end());
  }
  return allgather_lists(c, per_input, inputs, c10d::OpType::ALLGATHER_COALESCED, std::move(results));
}

WorkPtr gather(Communicator& c, std::vector<Tensors>& outputs, Tensors& inputs, const c10d::GatherOptions& opts) {
  const std::string what = "xccl gather";
  check_root(c, opts.rootRank, what);
  c.drain();  // the root copies its own part on this thread
  at::Tensor in = input(c, single(inputs, what), what);
  const int root = int(opts.rootRank), me = c.rank(), n = c.size();
  std::vector<Staged> staged;
  if (me == root) {
    TORCH_CHECK(outputs.size() == 1 && outputs[0].size() == size_t(n), what, ": the root needs one list of ", n, " outputs");
    check_same(outputs[0], in, what);
    for (const at::Tensor& o : outputs[0]) staged.push_back(output(o, what));
  } else {
    TORCH_CHECK(outputs.empty() || (outputs.size() == 1 && outputs[0].empty()), what, ": only the root passes outputs");
  }
  Tensors slots, keep{in}, results = me == root ? outputs[0] : Tensors{};
  for (const Staged& s : staged) slots.push_back(s.data), keep.push_back(s.data);
  xcclDataType_t type = xccl_type(in.scalar_type(), what);
  agree(c, what, c10d::OpType::GATHER, in, -1, root);
  return c.launch({what, c10d::OpType::GATHER, results, keep,
                   [in, slots, type, root, me, n](xcclComm_t comm) {
                     if (me != root) return xcclSend(ptr(in), count(in), type, root, comm);
                     slots[me].copy_(in);
                     return each(size_t(n), [&](size_t p) {
                       return int(p) == me ? xcclSuccess : xcclRecv(ptr(slots[p]), count(in), type, int(p), comm);
                     });
                   },
                   copy_back(std::move(staged))});
}

WorkPtr scatter(Communicator& c, Tensors& outputs, std::vector<Tensors>& inputs, const c10d::ScatterOptions& opts) {
  const std::string what = "xccl scatter";
  check_root(c, opts.rootRank, what);
  c.drain();  // the root copies its own part on this thread
  Staged out = output(single(outputs, what), what);
  const int root = int(opts.rootRank), me = c.rank(), n = c.size();
  Tensors parts;
  if (me == root) {
    TORCH_CHECK(inputs.size() == 1 && inputs[0].size() == size_t(n), what, ": the root needs one list of ", n, " inputs");
    check_same(inputs[0], out.data, what);
    for (const at::Tensor& t : inputs[0]) parts.push_back(input(c, t, what));
  } else {
    TORCH_CHECK(inputs.empty() || (inputs.size() == 1 && inputs[0].empty()), what, ": only the root passes inputs");
  }
  at::Tensor o = out.data;
  Tensors keep = parts;
  keep.push_back(o);
  xcclDataType_t type = xccl_type(o.scalar_type(), what);
  agree(c, what, c10d::OpType::SCATTER, o, -1, root);
  return c.launch({what, c10d::OpType::SCATTER, outputs, keep,
                   [o, parts, type, root, me, n](xcclComm_t comm) {
                     if (me != root) return xcclRecv(ptr(o), count(o), type, root, comm);
                     o.copy_(parts[me]);
                     return each(size_t(n), [&](size_t p) {
                       return int(p) == me ? xcclSuccess : xcclSend(ptr(parts[p]), count(o), type, int(p), comm);
                     });
                   },
                   copy_back({out})});
}

WorkPtr reduce_scatter_base(Communicator& c, at::Tensor& output, at::Tensor& input, const c10d::ReduceScatterOptions& opts) {
  const std::string what = "xccl _reduce_scatter_base";
  at::Tensor in = xccl_torch::input(c, input, what);
  Staged out = xccl_torch::output(output, what);
  check_same_type(output, input, what);
  TORCH_CHECK(input.numel() == output.numel() * c.size(), what, ": input has ", input.numel(), " elements, not ", c.size(),
              " x ", output.numel());
  Reduction r = reduction(in.scalar_type(), opts.reduceOp, what);
  at::Tensor o = out.data;
  agree(c, what, c10d::OpType::_REDUCE_SCATTER_BASE, in, o.numel(), -1, int(opts.reduceOp.op_));
  return c.launch({what, c10d::OpType::_REDUCE_SCATTER_BASE, {output}, {in, o},
                   [in, o, r](xcclComm_t comm) { return xcclReduceScatter(ptr(in), ptr(o), count(o), r.type, r.op, comm); },
                   copy_back({out})});
}

WorkPtr reduce_scatter(Communicator& c, Tensors& outputs, std::vector<Tensors>& inputs, const c10d::ReduceScatterOptions& opts) {
  const std::string what = "xccl reduce_scatter";
  const at::Tensor& output = single(outputs, what);
  TORCH_CHECK(inputs.size() == 1 && inputs[0].size() == size_t(c.size()), what, ": needs one list of ", c.size(), " inputs");
  check_same(inputs[0], output, what);
  for (const at::Tensor& t : inputs[0]) check(t, what);
  at::Tensor block = packed(c, inputs[0]), out = outputs[0];
  return reduce_scatter_base(c, out, block, opts);
}

WorkPtr alltoall_base(Communicator& c, at::Tensor& output, at::Tensor& input, std::vector<int64_t>& output_splits,
                      std::vector<int64_t>& input_splits) {
  const std::string what = "xccl alltoall_base";
  at::Tensor in = xccl_torch::input(c, input, what);
  Staged out = xccl_torch::output(output, what);
  check_same_type(output, input, what);
  const int n = c.size();
  // Splits count rows of dimension 0; none given: equal parts.
  auto counts = [&](const at::Tensor& t, const std::vector<int64_t>& splits, const char* side) {
    const int64_t rows = t.dim() == 0 ? 1 : t.size(0), row = rows == 0 ? 0 : t.numel() / rows;
    std::vector<size_t> cnt(n), displ(n);
    int64_t at = 0;
    if (splits.empty()) {
      TORCH_CHECK(rows % n == 0, what, ": the ", side, "'s ", rows, " rows do not split into ", n, " equal parts");
    } else {
      TORCH_CHECK(splits.size() == size_t(n), what, ": ", splits.size(), " ", side, " splits for ", n, " ranks");
    }
    for (int p = 0; p < n; ++p) {
      int64_t s = splits.empty() ? rows / n : splits[p];
      TORCH_CHECK(s >= 0, what, ": ", side, " split ", p, " is ", s);
      cnt[p] = size_t(s * row), displ[p] = size_t(at * row), at += s;
    }
    TORCH_CHECK(at == rows, what, ": the ", side, " splits add up to ", at, " rows, the tensor has ", rows);
    return std::make_pair(cnt, displ);
  };
  auto [sc, sd] = counts(in, input_splits, "input");
  auto [rc, rd] = counts(output, output_splits, "output");
  at::Tensor o = out.data;
  xcclDataType_t type = xccl_type(in.scalar_type(), what);
  // Uneven splits differ by rank: only the kind and type must agree.
  c.agree(what, {int64_t(c10d::OpType::ALLTOALL_BASE), int64_t(in.scalar_type())});
  return c.launch({what, c10d::OpType::ALLTOALL_BASE, {output}, {in, o},
                   [in, o, type, sc = sc, sd = sd, rc = rc, rd = rd](xcclComm_t comm) {
                     return xcclAllToAllv(ptr(in), sc.data(), sd.data(), ptr(o), rc.data(), rd.data(), type, comm);
                   },
                   copy_back({out})});
}

WorkPtr alltoall(Communicator& c, Tensors& outputs, Tensors& inputs) {
  const std::string what = "xccl alltoall";
  const size_t n = size_t(c.size());
  TORCH_CHECK(outputs.size() == n && inputs.size() == n, what, ": needs ", n, " inputs and outputs, got ", inputs.size(),
              " and ", outputs.size());
  for (size_t p = 0; p < n; ++p) {
    check(inputs[p], what), check(outputs[p], what);
    TORCH_CHECK(inputs[p].scalar_type() == inputs[0].scalar_type() && outputs[p].scalar_type() == inputs[0].scalar_type(),
                what, ": tensors of different types");
  }
  at::Tensor in = packed(c, inputs), block = at::empty({0}, inputs[0].options());
  int64_t received = 0;
  std::vector<size_t> sc(n), sd(n), rc(n), rd(n);
  for (size_t p = 0, s = 0; p < n; ++p) {
    sc[p] = size_t(inputs[p].numel()), sd[p] = s, s += sc[p];
    rc[p] = size_t(outputs[p].numel()), rd[p] = size_t(received), received += outputs[p].numel();
  }
  block = at::empty({received}, inputs[0].options());
  xcclDataType_t type = xccl_type(in.scalar_type(), what);
  c.agree(what, {int64_t(c10d::OpType::ALLTOALL), int64_t(in.scalar_type())});
  return c.launch({what, c10d::OpType::ALLTOALL, outputs, {in, block},
                   [in, block, type, sc, sd, rc, rd](xcclComm_t comm) {
                     return xcclAllToAllv(ptr(in), sc.data(), sd.data(), ptr(block), rc.data(), rd.data(), type, comm);
                   },
                   unpack_into(outputs, block)});
}

WorkPtr send(Communicator& c, Tensors& tensors, int peer, int tag) {
  const std::string what = "xccl send";
  check_peer(c, peer, tag, what);
  at::Tensor d = input(c, single(tensors, what), what);
  xcclDataType_t type = xccl_type(d.scalar_type(), what);
  return c.launch({what, c10d::OpType::SEND, tensors, {d},
                   [d, type, peer](xcclComm_t comm) { return xcclSend(ptr(d), count(d), type, peer, comm); }, {}, true});
}

WorkPtr recv(Communicator& c, Tensors& tensors, int peer, int tag) {
  const std::string what = "xccl recv";
  check_peer(c, peer, tag, what);
  Staged s = output(single(tensors, what), what);
  at::Tensor d = s.data;
  xcclDataType_t type = xccl_type(d.scalar_type(), what);
  return c.launch({what, c10d::OpType::RECV, tensors, {d},
                   [d, type, peer](xcclComm_t comm) { return xcclRecv(ptr(d), count(d), type, peer, comm); },
                   copy_back({s}), true});
}

WorkPtr barrier(Communicator& c) {
  // A one-element all-reduce, queued behind every earlier operation: it completes once
  // they have completed on this rank and every rank has reached it.
  at::Tensor one = at::zeros({1}, at::kFloat);
  return c.launch({"xccl barrier", c10d::OpType::BARRIER, {}, {one},
                   [one](xcclComm_t comm) { return xcclAllReduce(ptr(one), ptr(one), 1, xcclFloat32, xcclSum, comm); }, {}});
}

}  // namespace xccl_torch
