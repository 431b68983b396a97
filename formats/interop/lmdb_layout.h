// LMDB (docs/formats/lmdb.md): one environment, OUT/data.mdb, keys in sample order.
//   --lmdb-layout field (default): "%010d.<field>" -> the field's bytes, "%010d.__key__" -> key;
//                                  plain bytes per key, what python-lmdb loaders read directly.
//   --lmdb-layout sample:          "%010d" -> one value holding the key and all fields.
//   --lmdb-layout pickle:          "%010d" -> pickle of (image, label), "%010d.__key__" -> key,
//                                  "__keys__"/"__len__" pickled (the imagenet default)
//   --lmdb-layout caffe:           "%010d_<key>" -> caffe.Datum (formats/interop/lmdb_values.h)
//   meta keys "__len__" (ASCII count; pickle: pickled) and "__meta__" (JSON) sort after every
//   sample key.
// The writer builds OUT/data.mdb.tmp with MDB_APPEND in batched transactions (a commit once a
// batch holds kBatchBytes of keys and values or kBatchSamples samples), starting from the map
// size LayoutOptions::lmdb_map_size (address space only, the file grows as pages are written),
// doubles the map on MDB_MAP_FULL and retries the batch, and renames at the end.
// The reader checks the file before liblmdb maps it (lmdb_check.h), then opens
// MDB_RDONLY|MDB_NOLOCK|MDB_NORDAHEAD (no lock file needed, read-only media
// fine), reopens itself in a forked child, and falls back to LMDB's lock table (a consistent
// snapshot) when another process has the environment open, e.g. a writer.
#pragma once

#include <memory>
#include <set>
#include <string>

#include "formats/layout.h"

namespace ds::lmdb {

inline constexpr const char* kDataName = "data.mdb";
inline constexpr uint64_t kBatchBytes = 8ull << 20;
inline constexpr uint64_t kBatchSamples = 4096;

Result<std::unique_ptr<LayoutWriter>> CreateWriter(const std::string& out,
                                                   const WriterOptions& options);
// `present` is ignored: data.mdb is the one shard, so a subset view holds all of it or none
// (formats/subset.h opens no reader for none).
Result<std::unique_ptr<LayoutReader>> Open(const StorageRef& at,
                                           const std::set<std::string>* present = nullptr);

}  // namespace ds::lmdb
