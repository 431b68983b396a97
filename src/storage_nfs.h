// The nfs:// backend of the storage interface (src/storage.h; src/storage_nfs.cc, docs/nfs.md):
// NFSv3 through libnfs, with no kernel mount. OpenStorage registers it for "nfs".
#pragma once

#include <memory>

#include "src/status.h"
#include "src/storage.h"

namespace ds {

// The backend for nfs://SERVER/EXPORT/PATH?ARGS: mounts the export (the shortest prefix of the
// path the server's MOUNT accepts) over `connections` TCP connections. URLs of one server, export
// and ARGS share one backend while it lives. Errors: a server that cannot be reached is kIOError,
// a path the server exports no prefix of is kNotFound, a bad argument kInvalidArgument.
Result<std::shared_ptr<Storage>> OpenNfsStorage(const StorageUri& uri);

}  // namespace ds
