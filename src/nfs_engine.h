// The "nfs" IO engine (src/io_engine.h): fio's libnfs engine (fio engines/nfs.c) on dspack's
// NFS connection. Made by the nfs:// backend (Storage::NewEngine), so that it reaches the export
// of the storage it came from; dsbench io's `ioengine=nfs nfs_url=...` (docs/nfs.md, N1).
//
// One engine is one worker's: it mounts its own caller-driven NfsConnection (one TCP connection,
// as fio's engine makes one nfs_context per job) and turns its event loop in Reap, so an RPC
// passes no thread. Queue starts READ / WRITE at once with nfs_pread_async / nfs_pwrite_async;
// up to depth() are in flight on the one connection, matched by XID. A reply shorter than asked
// completes short (result < len), as fio's resid does; the caller decides. A failed RPC
// completes with -errno (an RPC that gets no reply fails with the connection's timeout); a
// connection that fails for good completes everything in flight with -EIO.
//
// Files are opened by the engine (kEngineRemote): OpenPath gives a handle that requests carry in
// IoRequest::fd and CloseFile closes; OpenFile of a local fd is kInvalidArgument.
#pragma once

#include <functional>
#include <memory>
#include <string>

#include "src/io_engine.h"
#include "src/nfs_connection.h"

namespace ds {

// What the engine needs of its storage: the path inside the export for a storage path (or the
// error naming it), and how a message names a path (its URL).
struct NfsEnginePaths {
  std::function<Result<std::string>(const std::string&)> rel;
  std::function<std::string(const std::string&)> uri;
};

// Mounts target on a new caller-driven connection (this thread's) for an engine of
// options.depth requests.
Result<std::unique_ptr<IoEngine>> MakeNfsEngine(const NfsTarget& target,
                                                const EngineOptions& options, NfsEnginePaths paths);

}  // namespace ds
