// ShardedReader: what the shard-file layouts (wds, tfrecord, recordio) share as readers.
//
// Shards come from dspack.json when present (names, sizes, hashes, sample counts are then checked)
// or, for foreign data, from the files with the layout's extension in the directory (sorted by
// name), or from the single file given. The format's Open fills entries_ (one per sample: shard
// and byte range) from its index or by scanning; Get reads the range with one pread and hands it
// to Decode, then checks the sample's CRC32C against dspack.crc when dspack.json lists it (every
// read, of every sample). Verify checks each shard's size and hash and every other listed file
// against dspack.json, decodes every sample, and reports each problem as one line naming file,
// offset and key.
#pragma once

#include <optional>
#include <set>
#include <string>
#include <vector>

#include "formats/interop/layout_meta.h"
#include "formats/interop/sample_crc.h"
#include "formats/layout.h"
#include "src/fd.h"

namespace ds {

class ShardedReader : public LayoutReader {
 public:
  uint64_t size() const override { return entries_.size(); }
  Result<Sample> Get(uint64_t i) const override;
  Result<SampleLocation> Locate(uint64_t i) const override;
  nlohmann::json Info() const override;
  std::vector<std::string> DataFiles() const override {
    std::vector<std::string> v;
    for (uint32_t s = 0; s < shards_.size(); s++) {
      if (!shards_[s].absent) v.push_back(ShardPath(s));
    }
    return v;
  }
  // Before Load: open only these shards of the dataset's listed ones (a subset view,
  // formats/subset.h); the others are absent: their samples keep their numbers but are never
  // read (a SubsetReader hides them). REQUIRES: the path is a directory with dspack.json.
  void SetPresentShards(std::set<std::string> names) { present_ = std::move(names); }
  // Before Load: the backend the dataset is read from (default: local files).
  void UseStorage(std::shared_ptr<Storage> storage) { storage_ = std::move(storage); }
  Status Verify(LayoutVerifyReport* report, const LayoutProgress& progress) const override;
  // Bytes of each sample's record or member (headers included), from the open-time table.
  Result<std::vector<uint64_t>> SampleSizes() const override;
  Result<std::vector<ShardRange>> ShardRanges() const override;

 protected:
  bool has_extents() const override { return true; }
  Result<SampleExtent> Extent(uint64_t i) const override;
  Result<Sample> DecodeExtent(uint64_t i, const SampleExtent& e,
                              std::string_view bytes) const override;

  struct Shard {
    std::string name;                        // relative to dir_
    std::unique_ptr<RandomAccessFile> file;  // through storage_
    uint64_t size = 0;
    std::optional<uint64_t> xxh3;  // from dspack.json
    bool absent = false;           // not in the subset view: no file, never read
  };
  struct Entry {
    uint32_t shard = 0;
    uint64_t begin = 0;
    uint64_t end = 0;
  };

  // Finds and opens the shards of `path` (a dataset directory or one shard file) in storage_.
  Status OpenShards(const std::string& path, std::string_view ext);
  // For an absent shard: its samples' entries (empty ranges, numbers kept, count from
  // dspack.json) and true; the format's scan skips the shard. False for a present shard.
  bool SkipAbsent(uint32_t s);
  // Decodes the bytes [begin, begin + bytes.size()) of shard s as sample i.
  virtual Result<Sample> Decode(uint32_t s, uint64_t begin, std::string_view bytes,
                                uint64_t i) const = 0;
  // Extra per-dataset facts for Info().
  virtual void AddInfo(nlohmann::json*) const {}
  // After OpenShards and the format's scan: checks the entry count against dspack.json.
  Status CheckAgainstMeta() const;
  std::string Where(uint32_t s, uint64_t offset) const;
  std::string ShardPath(uint32_t s) const { return dir_ + "/" + shards_[s].name; }

  std::string dir_;
  std::vector<Shard> shards_;
  std::vector<Entry> entries_;
  std::optional<LayoutMeta> meta_;
  std::optional<SampleCrcTable> crcs_;  // dspack.crc when dspack.json lists it
  std::optional<std::set<std::string>> present_;

 private:
  // Decode, then the sample's CRC against dspack.crc.
  Result<Sample> DecodeChecked(uint64_t i, std::string_view bytes) const;
};

// Creates an R and runs its Load(path), with only `present`'s shards opened when given.
template <class R>
Result<std::unique_ptr<LayoutReader>> OpenReader(const StorageRef& at,
                                                 const std::set<std::string>* present) {
  auto r = std::make_unique<R>();
  r->UseStorage(at.storage);
  if (present) r->SetPresentShards(*present);
  DS_RETURN_IF_ERROR(r->Load(at.path));
  return std::unique_ptr<LayoutReader>(std::move(r));
}

}  // namespace ds
