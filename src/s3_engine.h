// The "s3" IO engine (src/io_engine.h): many ranged GETs in flight on one thread, through a curl
// multi handle (its connections reused from request to request, as keep-alive). Made by the
// s3:// backend (Storage::NewEngine) for the reads that keep many requests in flight:
// LayoutReader::ReadBatch (Python's read_batch, MapDataset(batch_reads=True)).
//
// Files are opened by the engine (kEngineRemote): OpenPath HEADs the object (its size and ETag;
// a missing one is the backend's one-line error) and gives a handle that requests carry in
// IoRequest::fd. Queue adds a GET of exactly the request's range (clipped at the object's end,
// so a request past it completes short, 0 at or past the end), with If-Match on the ETag. A
// request that fails to connect, is cut short or is answered 5xx/SlowDown is sent again, up to
// the backend's retries; a request that still fails completes with -EIO, or -ESTALE for an
// object replaced since OpenPath (HTTP 412), and RequestError gives the one-line reason naming
// the object and the range. Writes are not supported here (-EOPNOTSUPP): uploads go through
// Storage::Create. One engine is one thread's.
#pragma once

#include <functional>
#include <memory>
#include <string>

#include "src/io_engine.h"
#include "src/s3_client.h"

namespace ds {

// What the engine needs of its storage: the object key of a path (or of a URI the storage's
// files name themselves by), and how a message names it.
struct S3EnginePaths {
  std::function<std::string(const std::string&)> key;
  std::function<std::string(const std::string&)> uri;
};

Result<std::unique_ptr<IoEngine>> MakeS3Engine(std::shared_ptr<S3Client> client,
                                               const EngineOptions& options, S3EnginePaths paths);

}  // namespace ds
