#include "formats/interop/wds.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>

#include <cstring>
#include <unordered_set>

#include "formats/interop/sharded_reader.h"
#include "formats/interop/sharded_writer.h"
#include "formats/interop/tar.h"
#include "src/checksum.h"
#include "src/endian.h"
#include "src/fd.h"
#include "src/human.h"

namespace ds::wds {

namespace {

bool IsMetaMember(std::string_view name) {
  // WebDataset's tariterators skip top-level "__*__" members (metadata); so do we.
  return name.find('/') == std::string_view::npos && name.size() >= 4 &&
         name.substr(0, 2) == "__" && name.substr(name.size() - 2) == "__";
}

uint64_t IndexDataSize(uint64_t count) { return AlignUp(16 * count + kTrailerSize, kBlock); }

class Writer : public ShardedWriter {
 public:
  Writer(std::string out, const WdsOptions& o, bool created)
      : ShardedWriter(Format::kWds, std::move(out), o, created, ".tar"),
        want_dali_(o.dali_index),
        index_sidecar_(o.index_sidecar) {}

 private:
  // Exact: the members' headers and padded data.
  uint64_t PlannedSize(std::string_view key, std::span<const FieldInfo> fields) const override {
    uint64_t n = 0;
    for (const auto& f : fields) {
      std::string name = JoinKeyField(key, f.name);
      n += tar::MemberHeadersSize(name, f.size) + AlignUp(f.size, kBlock);
    }
    return n;
  }
  // The index member (header and data: 16 bytes per sample and its trailer), the end of the
  // archive, and 16 bytes to spare.
  uint64_t TrailerSize(uint64_t samples) const override {
    return 16 + kBlock + IndexDataSize(samples) + 2 * kBlock;
  }

  Status SampleBegin(std::string_view key, std::span<const FieldInfo> fields) override {
    if (IsMetaMember(key)) {
      return Status(Code::kBadInput,
                    fmt::format("key '{}': WebDataset readers skip members named __*__, so this "
                                "sample would vanish; rename it or `exclude` it",
                                EscapeBytes(key)));
    }
    if (want_dali_) {
      for (const auto& f : fields) {
        std::string name = JoinKeyField(key, f.name);
        if (f.name.empty() || name.find_first_of(" \t\n") != std::string::npos) {
          return Status(Code::kBadInput,
                        fmt::format("'{}': DALI's wds2idx lines cannot list a member {}; drop "
                                    "`dali_index` or rename it",
                                    EscapeBytes(name),
                                    f.name.empty() ? "without an extension" : "with whitespace"));
        }
      }
    }
    key_.assign(key);
    fields_.assign(fields.begin(), fields.end());
    begin_ = shard_offset();
    dali_line_.clear();
    next_header_ = 0;
    return WriteHeadersUpTo(0);
  }

  // Writes the headers of fields [next_header_, f] (fields with no data need no FieldData call).
  Status WriteHeadersUpTo(size_t f) {
    for (; next_header_ <= f && next_header_ < fields_.size(); next_header_++) {
      const FieldInfo& fi = fields_[next_header_];
      if (next_header_ > 0) DS_RETURN_IF_ERROR(PadPrevious());
      std::string name = JoinKeyField(key_, fi.name);
      DS_RETURN_IF_ERROR(Write(tar::MemberHeaders(name, fi.size)));
      if (want_dali_) {
        dali_line_ += fmt::format("{}{} {} {} {}", dali_line_.empty() ? "" : " ", fi.name,
                                  shard_offset(), fi.size, name);
      }
    }
    return Status::Ok();
  }

  Status PadPrevious() {
    uint64_t size = fields_[next_header_ - 1].size;
    return WriteZeros(AlignUp(size, kBlock) - size);
  }

  Status FieldData(size_t f, std::string_view chunk) override {
    DS_RETURN_IF_ERROR(WriteHeadersUpTo(f));
    return Write(chunk);
  }

  Status SampleEnd() override {
    DS_RETURN_IF_ERROR(WriteHeadersUpTo(fields_.size()));
    if (!fields_.empty()) DS_RETURN_IF_ERROR(PadPrevious());
    PutLE64(&entries_, begin_);
    PutLE64(&entries_, shard_offset());
    if (want_dali_) dali_ += dali_line_ + "\n";
    return Status::Ok();
  }

  void ShardBegin() override {
    entries_.clear();
    dali_.clear();
  }

  Status ShardEnd(Sidecars* sidecars) override {
    uint64_t count = entries_.size() / 16;
    uint64_t data = IndexDataSize(count);
    std::string index = entries_;
    index.append(data - entries_.size() - kTrailerSize, '\0');
    index.append(kIndexMagic, sizeof(kIndexMagic));
    PutLE64(&index, count);
    PutLE64(&index, Xxh3_64(entries_));
    PutLE64(&index, 0);
    std::string tail;
    if (index_sidecar_) {
      sidecars->emplace_back(kIndexSidecarExt, std::move(index));
    } else {
      tail = tar::MemberHeaders(kIndexMember, data) + index;
    }
    tail.append(2 * kBlock, '\0');  // end of archive
    DS_RETURN_IF_ERROR(Write(tail));
    if (want_dali_) sidecars->emplace_back(".idx", fmt::format("v1.2 {}\n", count) + dali_);
    return Status::Ok();
  }

  bool want_dali_;
  bool index_sidecar_;  // the index in shard-N.dsidx, not a member
  std::string dali_;    // wds2idx v1.2 lines of this shard (when dali_)
  std::string dali_line_;
  std::string key_;
  std::vector<FieldInfo> fields_;
  size_t next_header_ = 0;
  uint64_t begin_ = 0;
  std::string entries_;  // this shard's index entries
};

class Reader : public ShardedReader {
 public:
  std::optional<Format> format() const override { return Format::kWds; }

  Status Load(const std::string& path) {
    DS_RETURN_IF_ERROR(OpenShards(path, ".tar"));
    for (uint32_t s = 0; s < shards_.size(); s++) {
      if (SkipAbsent(s)) continue;
      bool indexed = false;
      DS_RETURN_IF_ERROR(LoadIndex(s, &indexed));
      if (!indexed) DS_RETURN_IF_ERROR(Scan(s, &entries_));
    }
    return CheckAgainstMeta();
  }

 private:
  tar::ReadFn ReadFrom(uint32_t s) const {
    return [this, s](uint64_t off, uint64_t n) -> Result<std::string> {
      std::string buf(n, '\0');
      uint64_t avail = off < shards_[s].size ? std::min(n, shards_[s].size - off) : 0;
      buf.resize(avail);
      DS_RETURN_IF_ERROR(shards_[s].file->ReadAt(off, buf.data(), avail, ShardPath(s)));
      return buf;
    };
  }

  // The sample index of shard s, when present and consistent with the file: its sidecar
  // shard-N.dsidx, or else the __dspack_index__ member; otherwise *ok=false (the caller scans).
  Status LoadIndex(uint32_t s, bool* ok) {
    uint64_t size = shards_[s].size;
    std::string tar_path = ShardPath(s);
    std::string sidecar = tar_path.substr(0, tar_path.size() - 4) + kIndexSidecarExt;
    if (auto side = storage_->OpenRead(sidecar); side.ok()) {
      uint64_t side_size = (*side)->size();
      if (side_size < kTrailerSize || side_size > size) return Status::Ok();
      std::string index(static_cast<size_t>(side_size), '\0');
      DS_RETURN_IF_ERROR((*side)->ReadAt(0, index.data(), index.size(), sidecar));
      // The samples end where the tar's end-of-archive blocks begin.
      return ParseIndex(s, index, size - 2 * kBlock, ok);
    }
    if (size < 3 * kBlock + kTrailerSize) return Status::Ok();
    std::string tail(2 * kBlock + kTrailerSize, '\0');
    DS_RETURN_IF_ERROR(
        shards_[s].file->ReadAt(size - tail.size(), tail.data(), tail.size(), tar_path));
    if (tail.find_first_not_of('\0', kTrailerSize) != std::string::npos) return Status::Ok();
    if (std::memcmp(tail.data(), kIndexMagic, 8) != 0) return Status::Ok();
    uint64_t count = LoadLE64(&tail[8]);
    if (count > size / kBlock) return Status::Ok();
    uint64_t data = IndexDataSize(count);
    if (data + 3 * kBlock > size) return Status::Ok();
    uint64_t data_off = size - 2 * kBlock - data;
    std::string index(data, '\0');
    DS_RETURN_IF_ERROR(shards_[s].file->ReadAt(data_off, index.data(), data, tar_path));
    // The samples end at the index member's own header.
    return ParseIndex(s, index, data_off - kBlock, ok);
  }

  // An index's data (entries, padding, trailer: docs/formats/wds.md), whose samples must tile
  // [0, samples_end) of shard s.
  Status ParseIndex(uint32_t s, const std::string& index, uint64_t samples_end, bool* ok) {
    const char* trailer = index.data() + index.size() - kTrailerSize;
    if (std::memcmp(trailer, kIndexMagic, 8) != 0) return Status::Ok();
    uint64_t count = LoadLE64(trailer + 8);
    if (count > index.size() / 16 || index.size() != IndexDataSize(count)) return Status::Ok();
    std::string_view entries(index.data(), 16 * count);
    if (Xxh3_64(entries) != LoadLE64(trailer + 16)) return Status::Ok();
    uint64_t prev = 0;
    std::vector<Entry> mine;
    for (uint64_t i = 0; i < count; i++) {
      uint64_t b = LoadLE64(&entries[16 * i]), e = LoadLE64(&entries[16 * i + 8]);
      if (b != prev || e <= b || e % kBlock) return Status::Ok();
      mine.push_back({s, b, e});
      prev = e;
    }
    if (prev != samples_end) return Status::Ok();
    entries_.insert(entries_.end(), mine.begin(), mine.end());
    *ok = true;
    return Status::Ok();
  }

  // Groups the members of shard s into samples (appended to out), refusing a non-adjacent one.
  Status Scan(uint32_t s, std::vector<Entry>* out) const {
    auto read = ReadFrom(s);
    std::unordered_set<uint64_t> seen;  // key hashes of this shard's finished samples
    std::string key;
    Entry cur{s, 0, 0};
    uint64_t cur_begin_key_off = 0;
    uint64_t off = 0;
    bool open = false;
    for (;;) {
      tar::Member m;
      DS_ASSIGN_OR_RETURN(bool more, tar::ReadMember(read, off, shards_[s].size, ShardPath(s), &m));
      if (!more) break;
      off = m.next();
      if (m.type != '0' || IsMetaMember(m.name)) {
        if (open) {
          out->push_back(cur);
          seen.insert(Xxh3_64(key));
          open = false;
        }
        continue;
      }
      std::string k(SplitPath(m.name).key);
      if (open && k == key) {
        cur.end = m.next();
        continue;
      }
      if (open) {
        out->push_back(cur);
        seen.insert(Xxh3_64(key));
      }
      if (seen.count(Xxh3_64(k))) {
        return Status(
            Code::kCorruption,
            fmt::format("{}: key '{}' reappears at offset {} after other samples began "
                        "(the last one at offset {}): the fields of a sample must be "
                        "adjacent members; repack the tar with each sample's files "
                        "together (sorted by name)",
                        ShardPath(s), EscapeBytes(k), m.header_offset, cur_begin_key_off));
      }
      key = k;
      cur = {s, m.header_offset, m.next()};
      cur_begin_key_off = m.header_offset;
      open = true;
    }
    if (open) out->push_back(cur);
    return Status::Ok();
  }

  Result<Sample> Decode(uint32_t s, uint64_t begin, std::string_view bytes,
                        uint64_t i) const override {
    auto read = [&](uint64_t off, uint64_t n) -> Result<std::string> {
      uint64_t rel = off - begin;
      if (rel >= bytes.size()) return std::string();
      return std::string(bytes.substr(rel, n));
    };
    Sample out;
    uint64_t off = begin, end = begin + bytes.size();
    while (off < end) {
      tar::Member m;
      DS_ASSIGN_OR_RETURN(bool more, tar::ReadMember(read, off, end, ShardPath(s), &m));
      if (!more) break;
      off = m.next();
      if (m.type != '0' || IsMetaMember(m.name)) continue;
      KeyField kf = SplitPath(m.name);
      if (out.fields.empty()) {
        out.key.assign(kf.key);
      } else if (kf.key != out.key) {
        // The index does not match the members (the shard was rewritten): the scan says why,
        // typically a sample whose members are not adjacent.
        std::vector<Entry> scanned;
        DS_RETURN_IF_ERROR(Scan(s, &scanned));
        return Status(
            Code::kCorruption,
            fmt::format("{}: sample {} holds member '{}' of another key than '{}' "
                        "(the index does not match the members)",
                        Where(s, m.header_offset), i, EscapeBytes(m.name), EscapeBytes(out.key)));
      }
      out.fields.push_back(
          {std::string(kf.field), std::string(bytes.substr(m.data_offset - begin, m.size))});
    }
    if (out.fields.empty()) {
      return Status(Code::kCorruption,
                    fmt::format("{}: sample {} has no members", Where(s, begin), i));
    }
    return out;
  }

  // Key and field sizes from the member headers alone (a pread of 512 bytes per member), so
  // `ls` and a convert's listing pass do not read the payload.
  Result<SampleHead> Head(uint64_t i) const override {
    const Entry& e = entries_[i];
    auto read = ReadFrom(e.shard);
    SampleHead h;
    for (uint64_t off = e.begin; off < e.end;) {
      tar::Member m;
      DS_ASSIGN_OR_RETURN(bool more, tar::ReadMember(read, off, e.end, ShardPath(e.shard), &m));
      if (!more) break;
      off = m.next();
      if (m.type != '0' || IsMetaMember(m.name)) continue;
      KeyField kf = SplitPath(m.name);
      if (h.fields.empty()) h.key.assign(kf.key);
      if (kf.key != h.key) return Get(i).status();  // the index is stale: Get explains why
      h.fields.push_back({std::string(kf.field), m.size});
    }
    if (h.fields.empty()) return Get(i).status();
    return h;
  }

  void AddInfo(nlohmann::json* j) const override {
    (*j)["shard_pattern"] = shards_.size() > 1
                                ? fmt::format("shard-{{000000..{:06d}}}.tar", shards_.size() - 1)
                                : shards_[0].name;
  }
};

}  // namespace

Result<std::unique_ptr<LayoutWriter>> CreateWriter(const std::string& out,
                                                   const WriterOptions& options) {
  return CreateShardedWriter<Writer, WdsOptions>(out, options);
}

Result<std::unique_ptr<LayoutReader>> Open(const StorageRef& at,
                                           const std::set<std::string>* present) {
  return OpenReader<Reader>(at, present);
}

}  // namespace ds::wds
