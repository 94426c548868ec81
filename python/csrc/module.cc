// xccl_torch._C: the backend's process group class, for the creator that
// xccl_torch/__init__.py registers with torch.distributed.
#include <pybind11/chrono.h>
#include <torch/csrc/utils/pybind.h>

#include <chrono>

#include "process_group.h"
#include "registered_allocator.h"

namespace py = pybind11;

PYBIND11_MODULE(_C, m) {
  m.doc() = "xccl's torch.distributed backend (see the xccl_torch package)";
  py::module::import("torch.distributed");  // registers c10d::ProcessGroup and Store with pybind11
  py::class_<xccl_torch::ProcessGroupXccl, c10d::ProcessGroup, c10::intrusive_ptr<xccl_torch::ProcessGroupXccl>>(
      m, "ProcessGroupXccl")
      .def(py::init([](const c10::intrusive_ptr<c10d::Store>& store, int rank, int size,
                       std::chrono::duration<float> /*timeout: xccl's own, XCCL_TIMEOUT_MS*/, std::string name) {
             return c10::make_intrusive<xccl_torch::ProcessGroupXccl>(store, rank, size, std::move(name));
           }),
           py::arg("store"), py::arg("rank"), py::arg("size"), py::arg("timeout"), py::arg("name") = "xccl",
           py::call_guard<py::gil_scoped_release>());  // the rendezvous waits on the store
  m.def("use_registered_memory", &xccl_torch::use_registered_memory, py::arg("min_bytes") = size_t(1) << 20,
        "Allocate CPU tensors of at least min_bytes with xcclMemAlloc from now on (this process).");
  m.def("version", [] {
    int v = 0;
    xcclGetVersion(&v);
    return v;
  });
}
