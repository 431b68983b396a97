#include "formats/native/global_index.h"

#include <fcntl.h>
#include <fmt/format.h>

#include <algorithm>
#include <cstring>

#include "src/checksum.h"
#include "src/endian.h"
#include "src/file_writer.h"

namespace ds::native {

Status GlobalIndexBuilder::Add(uint32_t shard, uint64_t offset, uint64_t length,
                               std::string_view key) {
  return AddHashed(shard, offset, length, Xxh3_64(key));
}

Status GlobalIndexBuilder::AddHashed(uint32_t shard, uint64_t offset, uint64_t length,
                                     uint64_t key_hash) {
  if (shard >= (1u << kShardBits) || length >= (1ull << kLengthBits)) {
    return Status(Code::kInvalidArgument,
                  fmt::format("global index limit: shard {} / record length {} exceed 2^24 shards "
                              "or 2^40-byte records",
                              shard, length));
  }
  keys_.emplace_back(key_hash, size());
  entries_.push_back(offset);
  entries_.push_back(static_cast<uint64_t>(shard) << kLengthBits | length);
  return Status::Ok();
}

Status GlobalIndexBuilder::Write(Storage& storage, const std::string& path, uint32_t shard_count,
                                 uint64_t* file_size, uint64_t* xxh3) {
  std::sort(keys_.begin(), keys_.end());
  DS_ASSIGN_OR_RETURN(auto f, storage.OpenWrite(path, WriteMode::kTruncate));
  FileWriter w(std::move(f));
  Xxh3Hasher h;
  auto put = [&](std::string_view s) {
    h.Update(s);
    return w.Append(s);
  };
  std::string head(kIndexHeaderSize, '\0');
  std::memcpy(head.data(), kIndexMagic, 8);
  StoreLE32(head.data() + 8, 1);
  StoreLE32(head.data() + 12, shard_count);
  uint64_t n = size();
  StoreLE64(head.data() + 16, n);
  StoreLE64(head.data() + 24, kIndexHeaderSize);
  StoreLE64(head.data() + 32, kIndexHeaderSize + n * kGlobalEntrySize);
  StoreLE32(head.data() + 60, Crc32c(head.data(), 60));
  DS_RETURN_IF_ERROR(put(head));
  DS_RETURN_IF_ERROR(
      put(std::string_view(reinterpret_cast<const char*>(entries_.data()), entries_.size() * 8)));
  std::string buf;
  for (const auto& [hash, sample] : keys_) {
    PutLE64(&buf, hash);
    PutLE64(&buf, sample);
    if (buf.size() >= (1 << 20)) {
      DS_RETURN_IF_ERROR(put(buf));
      buf.clear();
    }
  }
  DS_RETURN_IF_ERROR(put(buf));
  std::string trailer;
  PutLE64(&trailer, h.Digest());
  trailer.append(kIndexEndMagic, 8);
  h.Update(trailer);
  DS_RETURN_IF_ERROR(w.Append(trailer));
  *file_size = w.size();
  *xxh3 = h.Digest();
  return w.Close(/*sync=*/true);
}

Result<GlobalIndex> GlobalIndex::Open(Storage& storage, const std::string& path) {
  GlobalIndex g;
  if (storage.caps().mmap && storage.caps().local_fd) {
    DS_ASSIGN_OR_RETURN(g.map_, MappedFile::Open(path));
  } else {
    DS_ASSIGN_OR_RETURN(auto file, storage.OpenRead(path));
    g.copy_size_ = file->size();
    g.copy_.reset(new uint8_t[std::max<uint64_t>(g.copy_size_, 1)]);
    DS_RETURN_IF_ERROR(file->ReadAt(0, g.copy_.get(), g.copy_size_));
  }
  const uint8_t* p = g.data();
  uint64_t size = g.bytes();
  auto bad = [&](std::string_view why) {
    return Status(Code::kCorruption, fmt::format("{}: {}", path, why));
  };
  if (size < kIndexHeaderSize + kIndexTrailerSize) return bad("too short (truncated?)");
  if (std::memcmp(p, kIndexMagic, 8) != 0) return bad("offset 0: bad magic");
  if (LoadLE32(p + 60) != Crc32c(p, 60)) return bad("offset 0: header checksum mismatch");
  if (LoadLE32(p + 8) != 1) return bad("unsupported index version; upgrade dspack");
  g.shard_count_ = LoadLE32(p + 12);
  g.count_ = LoadLE64(p + 16);
  if (g.count_ > size / 32 ||
      size !=
          kIndexHeaderSize + g.count_ * (kGlobalEntrySize + kKeyEntrySize) + kIndexTrailerSize ||
      LoadLE64(p + 24) != kIndexHeaderSize ||
      LoadLE64(p + 32) != kIndexHeaderSize + g.count_ * kGlobalEntrySize) {
    return bad(
        fmt::format("header counts ({} samples) do not match the file size {}", g.count_, size));
  }
  if (std::memcmp(p + size - 8, kIndexEndMagic, 8) != 0)
    return bad("bad trailer magic (truncated?)");
  return g;
}

GlobalEntry GlobalIndex::entry(uint64_t i) const {
  const uint8_t* p = data() + kIndexHeaderSize + i * kGlobalEntrySize;
  uint64_t w = LoadLE64(p + 8);
  return {static_cast<uint32_t>(w >> kLengthBits), LoadLE64(p), w & ((1ull << kLengthBits) - 1)};
}

std::pair<uint64_t, uint64_t> GlobalIndex::key_entry(uint64_t i) const {
  const uint8_t* p = data() + kIndexHeaderSize + count_ * kGlobalEntrySize + i * kKeyEntrySize;
  return {LoadLE64(p), LoadLE64(p + 8)};
}

bool GlobalIndex::TrailerHashMatches() const {
  uint64_t body = bytes() - kIndexTrailerSize;
  return Xxh3_64(data(), body) == LoadLE64(data() + body);
}

std::vector<uint64_t> GlobalIndex::Candidates(std::string_view key) const {
  uint64_t h = Xxh3_64(key);
  uint64_t lo = 0, hi = count_;
  while (lo < hi) {
    uint64_t mid = lo + (hi - lo) / 2;
    if (key_entry(mid).first < h)
      lo = mid + 1;
    else
      hi = mid;
  }
  std::vector<uint64_t> out;
  for (uint64_t i = lo; i < count_ && key_entry(i).first == h; i++)
    out.push_back(key_entry(i).second);
  return out;
}

}  // namespace ds::native
