#include "slowfs/init_fixup.h"

#include <linux/fuse.h>  // the kernel's protocol structs
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdio>
#include <cstring>

namespace ds::slowfs {

namespace {

std::atomic<bool> g_init_done{false};
std::atomic<uint64_t> g_init_unique{0};
std::atomic<bool> g_kernel_parallel_dirops{false};
std::atomic<bool> g_debug{false};

// Notes whether the kernel's INIT request offers parallel dirops, and the request's id.
ssize_t IoRead(int fd, void* buf, size_t len, void*) {
  ssize_t n = ::read(fd, buf, len);
  if (!g_init_done.load(std::memory_order_acquire) &&
      n >= static_cast<ssize_t>(sizeof(fuse_in_header) + offsetof(fuse_init_in, flags2))) {
    fuse_in_header h;
    std::memcpy(&h, buf, sizeof h);
    if (h.opcode == FUSE_INIT) {
      fuse_init_in in;
      std::memset(&in, 0, sizeof in);
      std::memcpy(&in, static_cast<const char*>(buf) + sizeof h,
                  std::min(sizeof in, static_cast<size_t>(n) - sizeof h));
      g_kernel_parallel_dirops.store((in.flags & FUSE_PARALLEL_DIROPS) != 0);
      g_init_unique.store(h.unique, std::memory_order_release);
    }
  }
  return n;
}

// Adds FUSE_PARALLEL_DIROPS to the reply to that INIT request, when the kernel offered it.
ssize_t IoWritev(int fd, struct iovec* iov, int count, void*) {
  if (!g_init_done.load(std::memory_order_acquire) && count >= 2 &&
      iov[0].iov_len >= sizeof(fuse_out_header) &&
      iov[1].iov_len >= offsetof(fuse_init_out, flags) + sizeof(uint32_t)) {
    fuse_out_header h;
    std::memcpy(&h, iov[0].iov_base, sizeof h);
    if (h.error == 0 && h.unique != 0 && h.unique == g_init_unique.load()) {
      char* out = static_cast<char*>(iov[1].iov_base) + offsetof(fuse_init_out, flags);
      uint32_t flags;
      std::memcpy(&flags, out, sizeof flags);
      if (g_kernel_parallel_dirops.load()) {
        flags |= FUSE_PARALLEL_DIROPS;
        std::memcpy(out, &flags, sizeof flags);
      }
      if (g_debug.load()) {
        std::fprintf(stderr, "dsbench-slowfs: INIT reply flags=0x%08x (parallel dirops %s)\n",
                     flags,
                     (flags & FUSE_PARALLEL_DIROPS) != 0 ? "on" : "not offered by the kernel");
      }
      g_init_done.store(true, std::memory_order_release);
    }
  }
  return ::writev(fd, iov, count);
}

}  // namespace

Status InstallInitFixup(fuse_session* se, bool debug) {
  g_debug.store(debug);
  fuse_custom_io io;
  std::memset(&io, 0, sizeof io);
  io.read = IoRead;
  io.writev = IoWritev;
  if (fuse_session_custom_io(se, &io, fuse_session_fd(se)) != 0) {
    return Status(Code::kIOError, "could not install the session I/O hooks");
  }
  return Status::Ok();
}

}  // namespace ds::slowfs
