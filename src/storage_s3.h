// The s3:// backend of the storage interface (src/storage.h; src/storage_s3.cc, docs/s3.md):
// S3 and S3-compatible stores (Ceph's RADOS Gateway, MinIO) over HTTP through libcurl, SigV4,
// the AWS CLI's configuration chain (src/s3_client.h). OpenStorage registers it for "s3".
//
// s3://BUCKET/PREFIX/PATH: a path is an object key; a "directory" is a key prefix ending in '/'
// (ListObjectsV2 with delimiter '/'); MakeDirs writes a zero-byte marker object "DIR/", as the
// AWS console does, so that an empty directory exists. Reads are ranged GETs with If-Match on the
// ETag seen at open (an object replaced under a reader is kCorruption naming it, never a mix of
// two objects). Create buffers and uploads with one PUT, or multipart above the part size
// (8 MiB), each part retried; an upload dropped without Commit() is aborted. Rename is a
// server-side copy and a delete: not atomic (caps().atomic_rename is false). There are no locks
// (LockWriter warns) and no page cache.
#pragma once

#include <memory>

#include "src/status.h"
#include "src/storage.h"

namespace ds {

// The backend for s3://BUCKET/...: URLs of one bucket, endpoint and keys share one backend (and
// its connections) while it lives. Errors: no credentials or a bad URL argument is
// kInvalidArgument; the bucket is not checked until the first request (Stat of the root asks).
Result<std::shared_ptr<Storage>> OpenS3Storage(const StorageUri& uri);

}  // namespace ds
