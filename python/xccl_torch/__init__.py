"""xccl as a torch.distributed backend.

    import xccl_torch                      # registers the backend "xccl"
    torch.distributed.init_process_group("xccl")

Importing the package registers the backend under the name in XCCL_TORCH_BACKEND
(default "xccl"). Later PyTorch releases reserve "xccl" for Intel GPUs; there, set
XCCL_TORCH_BACKEND=xmccl (any free name) before the import, or call register("xmccl").

The communicator of every group is made through the c10d store torch.distributed hands
the backend (init_process_group's, a PrefixStore per new_group), so env://, file://,
tcp:// and torchrun all work with no variable of xccl's own. xccl's settings (XCCL_*:
rails, timeouts, algorithms) apply as they do to any xccl program; an operation whose
peer died fails with xccl's message after XCCL_TIMEOUT_MS (default 30 s).

XCCL_TORCH_REGISTERED_MEMORY=1 (or use_registered_memory()) allocates CPU tensors of at
least 1 MiB (XCCL_TORCH_REGISTERED_MIN_BYTES) with xcclMemAlloc, so peers on this host
read them in place.
"""
import os

import torch.distributed as dist

from ._C import ProcessGroupXccl, use_registered_memory, version

__all__ = ["ProcessGroupXccl", "register", "backend_name", "use_registered_memory", "version"]

backend_name = None


def register(name=None):
    """Registers the backend under `name` (default: XCCL_TORCH_BACKEND or "xccl").

    Registering the same name again does nothing; a name another backend holds is an error.
    """
    global backend_name
    name = (name or os.environ.get("XCCL_TORCH_BACKEND") or "xccl").lower()
    if name == backend_name:
        return name
    if name.upper() in dist.Backend._plugins or hasattr(dist.Backend, name.upper()):
        raise RuntimeError(
            f"xccl_torch: the torch.distributed backend name {name!r} is taken; "
            "set XCCL_TORCH_BACKEND to another name (or call xccl_torch.register(name))")

    def create(store, rank, size, timeout):
        return ProcessGroupXccl(store, rank, size, timeout, name)

    dist.Backend.register_backend(name, create)
    backend_name = name
    return name


register()

if os.environ.get("XCCL_TORCH_REGISTERED_MEMORY", "0") not in ("", "0"):
    use_registered_memory(int(os.environ.get("XCCL_TORCH_REGISTERED_MIN_BYTES", 1 << 20)))
