#include "formats/native/native_verify.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <memory>
#include <optional>

#include "formats/native/global_index.h"
#include "formats/native/manifest.h"
#include "formats/native/native_format.h"
#include "formats/native/native_shard.h"
#include "src/checksum.h"
#include "src/endian.h"
#include "src/fd.h"
#include "src/human.h"

namespace ds::native {
namespace {

constexpr size_t kChunk = 8 << 20;

// Order-independent digest of (key hash, sample) pairs, to compare the key table with the keys
// found in the shards without holding either in memory.
// Drops a leading "<prefix>: " from a message, when present.
std::string After(const std::string& msg, const std::string& prefix) {
  if (msg.size() > prefix.size() + 2 && msg.compare(0, prefix.size(), prefix) == 0 &&
      msg.compare(prefix.size(), 2, ": ") == 0) {
    return msg.substr(prefix.size() + 2);
  }
  return msg;
}

uint64_t PairMix(uint64_t hash, uint64_t sample) {
  uint64_t buf[2] = {hash, sample};
  return Xxh3_64(buf, sizeof buf);
}

class ShardChecker {
 public:
  ShardChecker(const StorageRef& at, const Manifest& m, const GlobalIndex* gi, VerifyReport* r,
               const VerifyProgress& progress)
      : dir_(at.path), m_(m), gi_(gi), r_(r), progress_(progress), storage_(*at.storage) {}

  void Check(uint32_t shard_no, uint64_t* key_digest) {
    const FileMeta& meta = m_.shards[shard_no];
    name_ = meta.name;
    std::string path = dir_ + "/" + meta.name;
    auto file = storage_.OpenRead(path);
    if (!file.ok()) return Problem(0, "", "cannot open: " + file.status().message());
    file_ = std::move(file).value();
    size_ = file_->size();
    if (size_ != meta.size) {
      Problem(size_, "",
              fmt::format("file is {} bytes, manifest says {} (truncated or appended)", size_,
                          meta.size));
    }
    HashPass(meta);
    StructurePass(shard_no, meta, key_digest);
    r_->shards++;
  }

 private:
  // A read buffer of at least min(n, kChunk) bytes, kept for the next shard and not zeroed:
  // a fresh zeroed 8 MiB per shard cost 50x the reads under ASan (318 shards of 256 KiB).
  char* Scratch(uint64_t n) {
    size_t want = static_cast<size_t>(std::min<uint64_t>(std::max<uint64_t>(n, 1), kChunk));
    if (want > scratch_size_) {
      scratch_.reset(new char[want]);
      scratch_size_ = want;
    }
    return scratch_.get();
  }

  void Problem(uint64_t offset, std::string_view key, std::string_view what) {
    std::string line = fmt::format("{}: offset {}", name_, offset);
    if (!key.empty()) line += fmt::format(" (key {})", EscapeBytes(key));
    line += ": ";
    line += what;
    r_->problems.push_back(std::move(line));
  }

  void HashPass(const FileMeta& meta) {
    if (file_->fd() >= 0) ::posix_fadvise(file_->fd(), 0, 0, POSIX_FADV_SEQUENTIAL);
    Xxh3Hasher h;
    char* buf = Scratch(size_);
    uint64_t off = 0;
    while (off < size_) {
      size_t n = static_cast<size_t>(std::min<uint64_t>(kChunk, size_ - off));
      Status s = file_->ReadAt(off, buf, n, name_);
      if (!s.ok()) return Problem(off, "", s.message());
      h.Update(buf, n);
      off += n;
    }
    r_->bytes += size_;
    if (h.Digest() != meta.xxh3) {
      Problem(0, "",
              fmt::format("whole-file xxh3 {} does not match the manifest's {}", HexU64(h.Digest()),
                          HexU64(meta.xxh3)));
    }
  }

  bool ZerosAt(uint64_t off, uint64_t n) {
    char* buf = Scratch(n);
    while (n > 0) {
      size_t k = static_cast<size_t>(std::min<uint64_t>(n, kChunk));
      if (!file_->ReadAt(off, buf, k, name_).ok()) return false;
      if (std::any_of(buf, buf + k, [](char c) { return c; })) return false;
      off += k;
      n -= k;
    }
    return true;
  }

  // Checks the record at `off`; returns its record_len when its head is readable.
  std::optional<uint64_t> CheckRecord(uint64_t off, uint64_t limit, uint64_t sample,
                                      uint64_t* key_digest) {
    std::string where = fmt::format("{}: offset {}", name_, off);
    if (off + kRecordFixedSize + kRecordTrailerSize > limit) {
      Problem(off, "", "record runs past the end of the record area");
      return std::nullopt;
    }
    uint8_t fixed[kRecordFixedSize];
    if (!file_->ReadAt(off, fixed, sizeof fixed, where).ok()) {
      Problem(off, "", "unreadable record");
      return std::nullopt;
    }
    uint64_t len = LoadLE64(fixed + 8);
    if (len > limit - off) len = limit - off;  // the head check below will flag it
    auto head = ReadRecordHeadAt(*file_, off, std::max<uint64_t>(len, kRecordFixedSize + 4), where);
    if (!head.ok()) {
      Problem(off, "", After(head.status().message(), where));
      return std::nullopt;
    }
    const RecordHead& h = *head;
    uint32_t crc = 0;
    char* buf = Scratch(h.payload_len());
    uint64_t pos = off + h.payload_offset();
    uint64_t left = h.payload_len();
    while (left > 0) {
      size_t k = static_cast<size_t>(std::min<uint64_t>(left, kChunk));
      if (!file_->ReadAt(pos, buf, k, where).ok()) break;
      crc = Crc32cExtend(crc, buf, k);
      pos += k;
      left -= k;
    }
    uint8_t stored[4];
    if (left > 0 || !file_->ReadAt(off + h.record_len - 4, stored, 4, where).ok() ||
        LoadLE32(stored) != crc) {
      Problem(off, h.key, "data checksum mismatch");
    }
    *key_digest += PairMix(Xxh3_64(h.key), sample);
    return h.record_len;
  }

  void StructurePass(uint32_t shard_no, const FileMeta& meta, uint64_t* key_digest) {
    uint8_t head[kShardHeaderSize];
    uint32_t align = m_.align;
    uint64_t first = meta.first_sample;
    if (size_ < kShardHeaderSize || !file_->ReadAt(0, head, sizeof head, name_).ok()) {
      return Problem(0, "", "file too short for a shard header");
    }
    auto hdr = DecodeShardHeader(head, name_);
    if (!hdr.ok()) {
      Problem(0, "", After(hdr.status().message(), name_));
    } else if (hdr->shard_number != shard_no || hdr->first_sample != first || hdr->align != align) {
      Problem(
          0, "",
          fmt::format("header says shard {} first sample {} align {}; manifest says "
                      "shard {} first sample {} align {}",
                      hdr->shard_number, hdr->first_sample, hdr->align, shard_no, first, align));
    }
    uint64_t start = AlignUp(kShardHeaderSize, align);
    if (start > size_ || !ZerosAt(kShardHeaderSize, start - kShardHeaderSize)) {
      Problem(kShardHeaderSize, "", "header padding is not zero");
    }
    auto reader = ShardReader::Open(storage_, dir_ + "/" + meta.name, name_);
    if (reader.ok()) {
      const auto& index = reader->index();
      if (index.size() != meta.samples) {
        Problem(
            size_ - kFooterSize, "",
            fmt::format("footer counts {} records, manifest says {}", index.size(), meta.samples));
      }
      for (uint64_t i = 0; i < index.size(); i++) {
        const IndexEntry& e = index[i];
        uint64_t index_offset = size_ - kFooterSize - index.size() * kIndexEntrySize;
        auto len = CheckRecord(e.offset, index_offset, first + i, key_digest);
        if (len && *len != e.length) {
          Problem(e.offset, "",
                  fmt::format("record_len {} disagrees with the index ({})", *len, e.length));
        }
        uint64_t end = e.offset + e.length;
        uint64_t next = i + 1 < index.size() ? index[i + 1].offset : index_offset;
        if (next < end || !ZerosAt(end, next - end)) Problem(end, "", "record padding is not zero");
        if (gi_ && first + i < gi_->size()) {
          GlobalEntry g = gi_->entry(first + i);
          if (g.shard != shard_no || g.offset != e.offset || g.length != e.length) {
            Problem(e.offset, "",
                    fmt::format("global index entry for sample {} disagrees "
                                "(shard {}, offset {}, length {})",
                                first + i, g.shard, g.offset, g.length));
          }
        }
        r_->records++;
        if (progress_) progress_(r_->records, r_->bytes);
      }
      return;
    }
    // Footer or index damaged: report it, then walk records from the start to locate damage.
    Problem(size_ >= kFooterSize ? size_ - kFooterSize : 0, "",
            After(reader.status().message(), name_));
    uint64_t off = start;
    uint64_t limit = size_ >= kFooterSize ? size_ - kFooterSize : 0;
    for (uint64_t i = 0; i < meta.samples && off < limit; i++) {
      auto len = CheckRecord(off, limit, first + i, key_digest);
      if (!len) {
        Problem(off, "", "cannot find further records in this shard without its index");
        return;
      }
      off = AlignUp(off + *len, align);
      r_->records++;
    }
  }

  const std::string& dir_;
  const Manifest& m_;
  const GlobalIndex* gi_;
  VerifyReport* r_;
  const VerifyProgress& progress_;
  std::string name_;
  Storage& storage_;
  std::unique_ptr<RandomAccessFile> file_;
  std::unique_ptr<char[]> scratch_;
  size_t scratch_size_ = 0;
  uint64_t size_ = 0;
};

void CheckWholeFileHash(Storage& storage, const std::string& path, const FileMeta& meta,
                        VerifyReport* r) {
  auto data = ReadAll(storage, path);
  if (!data.ok()) {
    r->problems.push_back(meta.name + ": " + data.status().message());
    return;
  }
  if (data->size() != meta.size || Xxh3_64(*data) != meta.xxh3) {
    r->problems.push_back(
        fmt::format("{}: offset 0: size {} / xxh3 {} do not match the manifest "
                    "({} / {})",
                    meta.name, data->size(), HexU64(Xxh3_64(*data)), meta.size, HexU64(meta.xxh3)));
  }
}

}  // namespace

Status VerifyDataset(const StorageRef& at, VerifyReport* report, const VerifyProgress& progress) {
  Storage& storage = *at.storage;
  const std::string& dir = at.path;
  auto loaded = Manifest::Load(storage, dir);
  auto st = storage.Stat(dir, true);
  if (!loaded.ok() && loaded.status().code() == Code::kNotFound && st.ok() &&
      st->type == FileType::kDirectory) {
    // The directory is there but its commit point is not: a damaged or unfinished dataset is
    // bad data (exit 1), as a missing shard or index is; a missing DIR stays kNotFound.
    report->problems.push_back(loaded.status().message());
    return Status::Ok();
  }
  DS_ASSIGN_OR_RETURN(Manifest m, std::move(loaded));
  std::string index_path = dir + "/" + m.index.name;
  CheckWholeFileHash(storage, index_path, m.index, report);
  std::optional<GlobalIndex> gi;
  auto opened = GlobalIndex::Open(storage, index_path);
  if (opened.ok()) {
    gi = std::move(opened).value();
    if (!gi->TrailerHashMatches()) {
      report->problems.push_back(m.index.name + ": trailer hash does not match the file's content");
    }
    if (gi->size() != m.samples) {
      report->problems.push_back(fmt::format("{}: holds {} samples, manifest says {}", m.index.name,
                                             gi->size(), m.samples));
    }
  } else {
    report->problems.push_back(opened.status().message());
  }
  uint64_t shard_digest = 0;
  ShardChecker checker(at, m, gi ? &*gi : nullptr, report, progress);
  for (uint32_t s = 0; s < m.shards.size(); s++) checker.Check(s, &shard_digest);
  if (gi) {
    uint64_t table_digest = 0;
    uint64_t prev = 0;
    bool sorted = true;
    for (uint64_t i = 0; i < gi->size(); i++) {
      auto [hash, sample] = gi->key_entry(i);
      sorted = sorted && hash >= prev;
      prev = hash;
      table_digest += PairMix(hash, sample);
    }
    if (!sorted || table_digest != shard_digest) {
      report->problems.push_back(m.index.name +
                                 ": key table does not match the keys stored in "
                                 "the shards");
    }
  }
  if (!m.label_field.empty()) {
    FileMeta classes{kClassesName, 0, 0, 0, m.classes_xxh3};
    auto text = ReadAll(storage, dir + "/" + kClassesName);
    classes.size = text.ok() ? text->size() : 0;
    CheckWholeFileHash(storage, dir + "/" + kClassesName, classes, report);
  }
  return Status::Ok();
}

}  // namespace ds::native
