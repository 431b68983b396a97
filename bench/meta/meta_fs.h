// The file system calls `dsbench meta` times (bench/meta/meta.h), behind one interface with two
// implementations:
//   - a local path: POSIX, relative to an open fd of the file's directory (openat / fstatat /
//     unlinkat), so that a latency is one lookup in that directory, not a walk from PATH; this is
//     what mdtest's POSIX backend does.
//   - a URL (nfs://): the storage interface (src/storage.h), as mdtest's LIBNFS backend goes
//     through libnfs's calls by path. Each call resolves its path on the server (LOOKUPs), which
//     the RPC bill of each phase shows.
// Errors name the path and the call ("DIR/f12: create: Permission denied"); err() is the errno.
// Thread-safety: the calls of one MetaFs may run from many threads at once; a Dir belongs to one.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "src/fd.h"
#include "src/status.h"
#include "src/storage.h"

namespace ds::bench {

class MetaFs {
 public:
  // A directory a thread works in: an open fd locally, the path alone through Storage.
  struct Dir {
    std::string path;
    OwnedFd fd;
  };

  // The backend for a run in `path` (a directory, or a URL naming one), and the path inside it.
  static Result<std::unique_ptr<MetaFs>> For(const std::string& path, std::string* inside);
  virtual ~MetaFs() = default;

  // Whether this is the local POSIX one (free space and inodes can be checked with statvfs).
  virtual bool local() const = 0;
  // "" when path is a directory; else a kInvalidArgument saying what it is instead.
  virtual Status CheckDir(const std::string& path) = 0;
  virtual Status MakeDir(const std::string& path) = 0;  // the parent exists; an existing one fails
  virtual Result<Dir> OpenDir(const std::string& path) = 0;
  // Creates name in d exclusively and writes size bytes of buf (buf holds min(size, chunk)).
  virtual Status Create(const Dir& d, const char* name, const char* buf, size_t chunk,
                        uint64_t size) = 0;
  virtual Result<uint64_t> StatSize(const Dir& d, const char* name) = 0;
  // Opens name and reads up to size bytes into buf, chunk bytes at a time (stopping early at its
  // end); returns the bytes read.
  virtual Result<uint64_t> Read(const Dir& d, const char* name, char* buf, size_t chunk,
                                uint64_t size) = 0;
  virtual Result<uint64_t> CountEntries(const Dir& d) = 0;    // "." and ".." left out
  virtual Status Unlink(const Dir& d, const char* name) = 0;  // a missing one: err() ENOENT
  virtual Status RemoveDir(const std::string& path) = 0;      // a missing one: err() ENOENT
  // How messages name a path: itself locally, the URL through Storage.
  virtual std::string Uri(const std::string& path) const { return path; }
  // The storage a URL run goes through (null for the local one): its RPC bill is measured.
  virtual const Storage* storage() const { return nullptr; }
};

}  // namespace ds::bench
