// The slow file system's operations (docs/dsbench.md#slowfs): a read-only passthrough of a
// source directory for the libfuse 3 high-level API that sleeps before answering each request,
// as an NFS client waits for its server's round trips.
//
//   meta_latency  LOOKUP and GETATTR (both reach getattr() in the high-level API), OPEN,
//                 OPENDIR, every READDIR batch, READLINK.
//   read_latency  READ (0 = not delayed).
//   Not delayed:  RELEASE, RELEASEDIR, FLUSH, STATFS, GETXATTR, LISTXATTR, LSEEK.
// Every modifying operation fails with EROFS (the mount is read-only in the kernel too).
//
// Paths are byte strings (any bytes work) and every one is resolved with *at() calls relative
// to the source's descriptor, opened before mounting, so a mount point that shadows part of the
// tree does not matter.
//
// Thread-safety: the operations run on libfuse's worker threads, concurrently; each request
// sleeps on its own thread, so requests in flight together overlap as independent RPCs do.
// The State is read-only once mounted except for its atomic counters; it must outlive the
// session (pass it to fuse_new as private_data).
#pragma once

#include <fuse.h>

#include <atomic>
#include <cstdint>
#include <string>

#include "src/fd.h"

namespace ds::slowfs {

// Requests served, per kind; printed when the daemon exits.
struct Stats {
  std::atomic<uint64_t> getattr{0}, open{0}, opendir{0}, readdir{0}, readlink{0}, read{0};
  std::atomic<uint64_t> read_bytes{0}, erofs{0};
};

struct State {
  OwnedFd root;           // the source directory, opened before the mount
  std::string root_proc;  // "/proc/self/fd/<root>", for the calls with no *at() form
  int64_t meta_latency_ns = 1000000;
  int64_t read_latency_ns = 0;
  double cache_timeout = 1.0;  // seconds the kernel keeps entries and attributes
  unsigned max_threads = 128;  // worker threads = requests in flight
  bool kernel_cache = true;    // keep a file's page cache across open()
  bool debug = false;
  Stats stats;
};

// The operations table; each op finds the State in fuse_get_context()->private_data.
fuse_operations MakeOps();

// "requests: getattr/lookup=N open=N opendir=N readdir=N readlink=N read=N (B bytes) erofs=N"
std::string StatsText(const Stats& s);

}  // namespace ds::slowfs
