// The dataset-wide index `index.dsi` (docs/formats/native.md, "Global index"): sample number ->
// (shard, offset, length), plus a table of key hashes sorted for O(log n) lookup by key.
// Fixed-width entries (kGlobalEntrySize + kKeyEntrySize bytes a sample), so it is memory-mapped
// and scales to 2^40 samples.
//
// GlobalIndexBuilder collects entries in sample order (the same bytes of RAM a sample) and writes
// `path` directly, returning its size and XXH3-64; making that atomic is the caller's business
// (the native writer writes index.dsi.tmp and renames it).
// GlobalIndex maps a finished file read-only; Open() checks header, size and trailer (O(1));
// the whole-file hash is checked by verify against the manifest. Lookups are const and
// thread-safe.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "src/fd.h"
#include "src/status.h"
#include "src/storage.h"

namespace ds::native {

inline constexpr char kIndexMagic[8] = {'D', 'S', 'P', 'K', 'I', 'D', 'X', '1'};
inline constexpr char kIndexEndMagic[8] = {'D', 'S', 'P', 'K', 'I', 'E', 'N', 'D'};
inline constexpr size_t kIndexHeaderSize = 64;
inline constexpr size_t kIndexTrailerSize = 16;
inline constexpr size_t kGlobalEntrySize = 16;
inline constexpr size_t kKeyEntrySize = 16;
inline constexpr int kShardBits = 24;  // entry word 2 = shard << 40 | length
inline constexpr int kLengthBits = 40;

struct GlobalEntry {
  uint32_t shard = 0;
  uint64_t offset = 0;
  uint64_t length = 0;
};

class GlobalIndexBuilder {
 public:
  // REQUIRES: shard < 2^24, length < 2^40 (enforced: returns kInvalidArgument).
  Status Add(uint32_t shard, uint64_t offset, uint64_t length, std::string_view key);
  // The same with the key's XXH3-64 given (a partitioned write's parts carry hashes, not keys).
  Status AddHashed(uint32_t shard, uint64_t offset, uint64_t length, uint64_t key_hash);
  uint64_t size() const { return entries_.size() / 2; }
  // Avoids the 2x transient of vector growth when the count is known up front.
  void Reserve(uint64_t samples) {
    entries_.reserve(samples * 2);
    keys_.reserve(samples);
  }
  Status Write(Storage& storage, const std::string& path, uint32_t shard_count, uint64_t* file_size,
               uint64_t* xxh3);

 private:
  std::vector<uint64_t> entries_;                    // offset, shard<<40|length
  std::vector<std::pair<uint64_t, uint64_t>> keys_;  // xxh3(key), sample
};

class GlobalIndex {
 public:
  // Maps the file where storage can (caps().mmap), else reads it whole into memory (24 bytes a
  // sample): a remote index is fetched once, with one read.
  static Result<GlobalIndex> Open(Storage& storage, const std::string& path);
  uint64_t size() const { return count_; }
  uint32_t shard_count() const { return shard_count_; }
  GlobalEntry entry(uint64_t i) const;  // REQUIRES: i < size()
  // Samples whose key hashes to xxh3(key), ascending (usually 0 or 1 of them).
  std::vector<uint64_t> Candidates(std::string_view key) const;
  // The key table as stored: i-th (hash, sample) pair.
  std::pair<uint64_t, uint64_t> key_entry(uint64_t i) const;
  // Recomputes the trailer's XXH3-64 over the whole file (O(size); for verify).
  bool TrailerHashMatches() const;

 private:
  const uint8_t* data() const { return map_.data() ? map_.data() : copy_.get(); }
  uint64_t bytes() const { return map_.data() ? map_.size() : copy_size_; }

  MappedFile map_;
  std::shared_ptr<uint8_t[]> copy_;  // where not mapped
  uint64_t copy_size_ = 0;
  uint64_t count_ = 0;
  uint32_t shard_count_ = 0;
};

}  // namespace ds::native
