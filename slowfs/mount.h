// The slow file system (docs/dsbench.md#slowfs), as dsbench uses it: a dataset served through
// `dsbench-slowfs` (this folder's daemon, ops.h), a read-only FUSE passthrough that sleeps before
// answering each metadata request (LOOKUP, GETATTR, OPEN, READDIR...) and optionally each READ, as
// an NFS client waits for its server's round trips. Each request sleeps on its own thread, so
// requests in flight together overlap, as independent RPCs do. It answers "what happens to this
// dataset on NFS with 1 ms round trips?" without an NFS server.
//
// SlowfsMount starts `dsbench-slowfs SRC MNT -f ...` as a child process, waits until MNT is a mount
// point, and unmounts (fusermount3 -u, else a lazy umount) and reaps the child when destroyed.
// The binary is found next to the running executable (dsbench and dsbench-slowfs are built into
// the same directory), or at $DSBENCH_SLOWFS. Needs /dev/fuse and fusermount3 (fuse3).
//
// Not thread-safe; move-only. A mount outlives nothing: destroy it before exiting.
#pragma once

#include <sys/types.h>

#include <string>

#include "src/status.h"

namespace ds::bench {

struct SlowfsOptions {
  double meta_latency = 0.001;  // seconds per metadata request
  double read_latency = 0;      // seconds per READ request (the kernel asks up to 128 KiB each)
};

class SlowfsMount {
 public:
  // Mounts SRC (a directory) at MNT (an existing empty directory). With `mountpoint` empty, a
  // new directory under $TMPDIR (or /tmp) is made and removed again on unmount.
  static Result<SlowfsMount> Mount(const std::string& src, std::string mountpoint,
                                   const SlowfsOptions& options);
  SlowfsMount() = default;
  SlowfsMount(SlowfsMount&& o) noexcept { *this = std::move(o); }
  SlowfsMount& operator=(SlowfsMount&& o) noexcept;
  ~SlowfsMount();

  const std::string& mountpoint() const { return mountpoint_; }
  pid_t pid() const { return pid_; }
  bool mounted() const { return pid_ > 0; }
  // Unmounts and waits for the daemon; idempotent.
  Status Unmount();
  // Blocks until the daemon exits (e.g. it was unmounted from outside) or a stop is requested
  // (bench/common/stop.h). Returns the daemon's exit status as a Status.
  Status WaitUntilStopped();

 private:
  std::string mountpoint_;  // canonical
  std::string log_;
  pid_t pid_ = -1;
  bool own_dir_ = false;
};

// Where dsbench-slowfs is: $DSBENCH_SLOWFS, else next to /proc/self/exe.
Result<std::string> SlowfsBinary();

// Wraps a dataset path in a slow mount: a directory is mounted itself; a file (a .zip) through
// its parent directory. *path_inside is where the dataset appears under the mount.
Result<SlowfsMount> MountDataset(const std::string& dataset, const SlowfsOptions& options,
                                 std::string* path_inside);

// "1 ms metadata, 0.2 ms read round trips"
std::string SlowfsText(const SlowfsOptions& options);

}  // namespace ds::bench
