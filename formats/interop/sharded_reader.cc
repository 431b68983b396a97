#include "formats/interop/sharded_reader.h"

#include <dirent.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>

#include <algorithm>

#include "src/checksum.h"
#include "src/human.h"

namespace ds {

using nlohmann::json;

namespace {}  // namespace

Status ShardedReader::OpenShards(const std::string& path, std::string_view ext) {
  path_ = path;
  Storage& fs = *storage_;
  auto st = fs.Stat(path, true);
  if (!st.ok()) return Status::FromStorage(st.status(), fs.Uri(path));
  std::vector<std::string> names;
  if (st->type == FileType::kDirectory) {
    dir_ = path;
    auto meta = LayoutMeta::Load(path, fs);
    if (meta.ok()) {
      meta_ = std::move(meta).value();
      label_field_ = meta_->label_field;
      if (meta_->extra.contains("schema")) {
        auto rec = SchemaRecord::FromJson(meta_->extra["schema"]);
        if (!rec.ok()) return rec.status().Prefixed(path + "/" + kLayoutMetaName);
        schema_ = std::move(rec).value();
      }
      DS_ASSIGN_OR_RETURN(crcs_, SampleCrcTable::Load(path, *meta_, fs));
      for (const auto& s : meta_->shards) names.push_back(s.name);
    } else if (meta.status().code() != Code::kNotFound) {
      return meta.status();
    } else {
      DS_ASSIGN_OR_RETURN(std::vector<DirEntry> entries, fs.List(path));
      for (const auto& e : entries) {
        if (e.name[0] != '.' && e.name.ends_with(ext)) names.push_back(e.name);
      }
      std::sort(names.begin(), names.end());
      if (names.empty()) {
        return Status(Code::kBadInput, fmt::format("{}: no *{} files here", path, ext));
      }
    }
    DS_ASSIGN_OR_RETURN(classes_, LoadClasses(path, fs));
  } else {
    auto slash = path.rfind('/');
    dir_ = slash == std::string::npos ? "." : path.substr(0, slash);
    names.push_back(slash == std::string::npos ? path : path.substr(slash + 1));
  }
  for (size_t i = 0; i < names.size(); i++) {
    Shard s;
    s.name = names[i];
    if (present_ && meta_ && present_->count(s.name) == 0) {
      s.absent = true;
      s.size = meta_->shards[i].size;
      s.xxh3 = meta_->shards[i].xxh3;
      shards_.push_back(std::move(s));
      continue;
    }
    DS_ASSIGN_OR_RETURN(s.file, fs.OpenRead(dir_ + "/" + s.name));
    s.size = s.file->size();
    if (meta_) {
      const auto& m = meta_->shards[i];
      if (s.size != m.size) {
        return Status(Code::kCorruption,
                      fmt::format("{}/{}: {} bytes, but dspack.json says {} (truncated or "
                                  "replaced?); reconvert or restore the shard",
                                  dir_, s.name, s.size, m.size));
      }
      s.xxh3 = m.xxh3;
    }
    shards_.push_back(std::move(s));
  }
  return Status::Ok();
}

bool ShardedReader::SkipAbsent(uint32_t s) {
  if (!shards_[s].absent) return false;
  entries_.insert(entries_.end(), meta_->shards[s].samples, Entry{s, 0, 0});
  return true;
}

Status ShardedReader::CheckAgainstMeta() const {
  if (meta_ && meta_->samples != entries_.size()) {
    return Status(Code::kCorruption,
                  fmt::format("{}: found {} samples, but dspack.json says {}; reconvert the "
                              "dataset",
                              path_, entries_.size(), meta_->samples));
  }
  return Status::Ok();
}

std::string ShardedReader::Where(uint32_t s, uint64_t offset) const {
  return fmt::format("{} offset {}", ShardPath(s), offset);
}

Result<Sample> ShardedReader::Get(uint64_t i) const {
  const Entry& e = entries_[i];
  std::string buf(e.end - e.begin, '\0');
  DS_RETURN_IF_ERROR(
      shards_[e.shard].file->ReadAt(e.begin, buf.data(), buf.size(), ShardPath(e.shard)));
  return DecodeChecked(i, buf);
}

Result<Sample> ShardedReader::DecodeChecked(uint64_t i, std::string_view bytes) const {
  const Entry& e = entries_[i];
  auto s = Decode(e.shard, e.begin, bytes, i);
  if (s.ok() && crcs_) DS_RETURN_IF_ERROR(crcs_->Check(i, *s, Where(e.shard, e.begin)));
  return s;
}

Result<std::vector<uint64_t>> ShardedReader::SampleSizes() const {
  std::vector<uint64_t> v;
  v.reserve(entries_.size());
  for (const Entry& e : entries_) v.push_back(e.end - e.begin);
  return v;
}

Result<std::vector<ShardRange>> ShardedReader::ShardRanges() const {
  std::vector<ShardRange> v;
  for (const auto& s : shards_) v.push_back({s.name, s.size, 0, 0});
  for (uint64_t i = 0; i < entries_.size(); i++) {
    ShardRange& r = v[entries_[i].shard];
    if (r.samples == 0) r.first_sample = i;
    r.samples++;
  }
  return v;
}

Result<LayoutReader::SampleExtent> ShardedReader::Extent(uint64_t i) const {
  const Entry& e = entries_[i];
  return SampleExtent{shards_[e.shard].file.get(), e.begin, e.end - e.begin};
}

Result<Sample> ShardedReader::DecodeExtent(uint64_t i, const SampleExtent& x,
                                           std::string_view bytes) const {
  const Entry& e = entries_[i];
  if (bytes.size() != x.length) {
    return Status(Code::kCorruption, fmt::format("{}: truncated: {} of {} bytes",
                                                 Where(e.shard, e.begin), bytes.size(), x.length));
  }
  return DecodeChecked(i, bytes);
}

Result<SampleLocation> ShardedReader::Locate(uint64_t i) const {
  const Entry& e = entries_[i];
  return SampleLocation{shards_[e.shard].name, e.begin};
}

json ShardedReader::Info() const {
  json j = {{"path", storage_->Uri(path_)},
            {"format", kind()},
            {"samples", size()},
            {"shards", shards_.size()},
            {"metadata", meta_ ? kLayoutMetaName : "none (foreign data)"}};
  uint64_t total = 0;
  for (const auto& s : shards_) total += s.size;
  j["total_bytes"] = total;
  if (meta_) j["payload_bytes"] = meta_->payload_bytes;
  j["labels"] = label_field_.empty() ? json(nullptr) : json(classes_.size());
  j["schema"] = SchemaName(schema_.kind);
  if (meta_) j["skipped"] = meta_->skipped.size();
  j["reads"] = ReadsCheckedText(crcs_.has_value());
  AddInfo(&j);
  return j;
}

Status ShardedReader::Verify(LayoutVerifyReport* r, const LayoutProgress& progress) const {
  std::string buf(4 << 20, '\0');
  for (uint32_t s = 0; s < shards_.size(); s++) {
    r->shards++;
    if (!shards_[s].xxh3) continue;
    Xxh3Hasher h;
    uint64_t off = 0;
    while (off < shards_[s].size) {
      size_t n = static_cast<size_t>(std::min<uint64_t>(buf.size(), shards_[s].size - off));
      Status st = shards_[s].file->ReadAt(off, buf.data(), n, ShardPath(s));
      if (!st.ok()) {
        r->problems.push_back(st.message());
        break;
      }
      h.Update(buf.data(), n);
      off += n;
    }
    if (off == shards_[s].size && h.Digest() != *shards_[s].xxh3) {
      r->problems.push_back(
          fmt::format("{}: XXH3 {} differs from dspack.json's {}: the file "
                      "changed after it was written",
                      ShardPath(s), HexU64(h.Digest()), HexU64(*shards_[s].xxh3)));
    }
  }
  if (meta_) VerifyMetaFiles(dir_, *meta_, *storage_, &r->problems);
  for (uint64_t i = 0; i < size(); i++) {
    auto sample = Get(i);
    if (!sample.ok()) {
      r->problems.push_back(sample.status().message());
    } else {
      r->bytes += sample->payload_bytes();
    }
    r->records++;
    if (progress) progress(i + 1, r->bytes);
  }
  return Status::Ok();
}

}  // namespace ds
