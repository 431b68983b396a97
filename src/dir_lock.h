// LockDirectory: one writer per directory, for the whole run; LockDirectoryShared: no reader
// opens a directory while a writer holds it
// (docs/formats/README.md#output-directory).
//
// An exclusive, non-blocking flock(2) on the directory itself: no lock file to create, leave
// behind or race on, and the lock ends with the process however it ends (kill -9 included),
// so a crashed run never leaves a stale lock. A second writer gets kAlreadyExists naming the
// holder's PID (read from /proc/locks by the directory's device and inode; "another process" when
// that is not visible). After the lock is taken, the path is checked to still name the locked
// directory (a concurrent writer may have removed and re-created it); if not, kAlreadyExists.
//
// Where flock is refused (EOPNOTSUPP, ENOLCK, or EBADF: NFS emulates flock with a POSIX lock,
// which a directory opened read-only cannot take), the run goes on unlocked and *warning says
// so; on NFS and on FUSE file systems flock may also be local to one client, so two writers on
// different machines are not excluded. Thread-safety: pure function; the fd is the lock.
#pragma once

#include <string>

#include "src/fd.h"
#include "src/status.h"

namespace ds {

// The fd holds the lock until it is closed. REQUIRES: dir exists. A lock held only by readers
// (LockDirectoryShared) is waited for up to kWriterLockRetries x 10 ms; a writer's is refused
// at once.
inline constexpr int kWriterLockRetries = 200;
Result<OwnedFd> LockDirectory(const std::string& dir, std::string* warning);

// A reader's guard while it opens the dataset in `dir`: a shared, non-blocking flock. When a
// writer holds the directory, kAlreadyExists "DIR: is being written by PID N; wait for it to
// finish", so a reader never opens a half-written dataset, or the old one half-removed by
// --force. A lock whose holder /proc/locks no longer lists (released in between) is tried
// again, so the refusal names the writer's PID wherever /proc/locks shows it. Hold the fd while
// opening the dataset's files and close it after: the files opened stay the ones read (a later
// --force unlinks them; their bytes stay readable through the open descriptors). Where flock is
// refused, the fd holds nothing and the open goes on.
Result<OwnedFd> LockDirectoryShared(const std::string& dir);

// The PID holding a flock on (dev, ino), from /proc/locks text; 0 when none is listed.
// *exclusive (when given) tells a writer's lock from a reader's.
long FlockHolder(std::string_view proc_locks, unsigned dev_major, unsigned dev_minor,
                 unsigned long ino, bool* exclusive = nullptr);

}  // namespace ds
