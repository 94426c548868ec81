// libxccl.so's own source: the library is the runtime (xm_xccl) linked whole; this file
// keeps the public header's version the project's, which also names the library file
// and its SONAME.
#include <xccl/xccl.h>

static_assert(XCCL_MAJOR == XM_VERSION_MAJOR && XCCL_MINOR == XM_VERSION_MINOR && XCCL_PATCH == XM_VERSION_PATCH,
              "include/xccl/xccl.h's XCCL_MAJOR/MINOR/PATCH differ from project(VERSION) in CMakeLists.txt");
