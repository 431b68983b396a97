#include "formats/interop/recordio.h"

#include <fmt/format.h>

#include <cmath>
#include <cstring>
#include <unordered_set>

#include "formats/interop/sharded_reader.h"
#include "formats/interop/sharded_writer.h"
#include "src/checksum.h"
#include "src/endian.h"
#include "src/fd.h"
#include "src/human.h"

namespace ds::recordio {

namespace {

void PutPart(std::string* out, uint32_t cflag, std::string_view part) {
  PutLE32(out, kMagic);
  PutLE32(out, cflag << 29 | static_cast<uint32_t>(part.size()));
  out->append(part);
}

// Label text ("3", "1 5 7", "0.5,2") -> floats.
Result<std::vector<float>> ParseLabels(std::string_view text, std::string_view key) {
  std::vector<float> v;
  std::string t(text);
  for (char& c : t) {
    if (c == ',' || c == '\t' || c == '\n') c = ' ';
  }
  const char* p = t.c_str();
  for (;;) {
    while (*p == ' ') p++;
    if (!*p) break;
    char* end;
    float f = std::strtof(p, &end);
    if (end == p) {
      return Status(Code::kBadInput,
                    fmt::format("key '{}': label '{}' is not a number (RecordIO stores labels as "
                                "floats)",
                                EscapeBytes(key), EscapeBytes(text)));
    }
    v.push_back(f);
    p = end;
  }
  return v;
}

std::string LabelText(float f) {
  if (std::isfinite(f) && f == std::floor(f) && std::fabs(f) < 1e15) {
    return fmt::format("{}", static_cast<long long>(f));
  }
  return fmt::format("{:.9g}", f);
}

class Writer : public ShardedWriter {
 public:
  Writer(std::string out, const RecordioOptions& o, bool created)
      : ShardedWriter(Format::kRecordio, std::move(out), o, created, ".rec") {}

 private:
  // A record per field (the label's too, which is at most that), framed and padded; a record
  // whose bytes hold the magic number is split and a little longer, which only the bytes show.
  uint64_t PlannedSize(std::string_view, std::span<const FieldInfo> fields) const override {
    uint64_t n = 0;
    for (const auto& f : fields) n += 8 + kIRHeaderSize + AlignUp(f.size, 4);
    return n;
  }

  Status SampleBegin(std::string_view key, std::span<const FieldInfo> fields) override {
    for (const auto& f : fields) {
      std::string path = JoinKeyField(key, f.name);
      if (path.find_first_of("\t\n") != std::string::npos) {
        return Status(Code::kBadInput,
                      fmt::format("'{}': a tab or newline in a path cannot be written to the "
                                  "im2rec .lst; rename it or `exclude` it",
                                  EscapeBytes(path)));
      }
    }
    key_.assign(key);
    fields_.clear();
    bool has_data = false;
    for (const auto& f : fields) {
      fields_.push_back({f.name, std::string()});
      fields_.back().data.reserve(f.size);
      if (f.name != label_field() || label_field().empty()) {
        has_data = true;
        if (f.size + kIRHeaderSize + 4 * 64 > kMaxLength) {
          return Status(Code::kBadInput,
                        fmt::format("key '{}' field '{}': {} bytes; a RecordIO record holds less "
                                    "than 512 MiB",
                                    EscapeBytes(key), EscapeBytes(f.name), f.size));
        }
      }
    }
    if (!has_data) {
      return Status(Code::kBadInput,
                    fmt::format("key '{}': no data field besides the label; RecordIO needs one",
                                EscapeBytes(key)));
    }
    return Status::Ok();
  }

  Status FieldData(size_t f, std::string_view chunk) override {
    fields_[f].data.append(chunk);
    return Status::Ok();
  }

  Status SampleEnd() override {
    std::vector<float> labels;
    std::string lst_labels = "0";
    for (const auto& f : fields_) {
      if (label_field().empty() || f.name != label_field()) continue;
      DS_ASSIGN_OR_RETURN(labels, ParseLabels(f.data, key_));
      lst_labels.clear();
      for (float l : labels) lst_labels += fmt::format("{}{:f}", lst_labels.empty() ? "" : "\t", l);
    }
    for (size_t k = 0; k < fields_.size(); k++) {
      if (!label_field().empty() && fields_[k].name == label_field()) continue;
      std::string rec;
      bool multi = labels.size() > 1;
      PutLE32(&rec, multi ? static_cast<uint32_t>(labels.size()) : 0);
      float single = labels.size() == 1 ? labels[0] : 0.0f;
      uint32_t bits;
      std::memcpy(&bits, &single, 4);
      PutLE32(&rec, bits);
      PutLE64(&rec, sample_number());
      PutLE64(&rec, k);
      if (multi) {
        for (float l : labels) {
          std::memcpy(&bits, &l, 4);
          PutLE32(&rec, bits);
        }
      }
      rec += fields_[k].data;
      // im2rec's rule: the .idx key and the .lst index are the IRHeader id, one record per
      // sample under the imagenet schema; a record's number in its shard otherwise.
      uint64_t n = schema().kind == SchemaKind::kImagenet ? sample_number() : records_in_shard_;
      records_in_shard_++;
      idx_ += fmt::format("{}\t{}\n", n, shard_offset());
      lst_ += fmt::format("{}\t{}\t{}\n", n, lst_labels, JoinKeyField(key_, fields_[k].name));
      DS_RETURN_IF_ERROR(Write(Frame(rec)));
    }
    fields_.clear();
    return Status::Ok();
  }

  void SampleCancelled() override { fields_.clear(); }
  void ShardBegin() override {
    idx_.clear();
    lst_.clear();
    records_in_shard_ = 0;
  }
  Status ShardEnd(Sidecars* sidecars) override {
    sidecars->emplace_back(".idx", idx_);
    sidecars->emplace_back(".lst", lst_);
    return Status::Ok();
  }

  std::string key_;
  std::vector<Field> fields_;
  std::string idx_, lst_;
  uint64_t records_in_shard_ = 0;
};

class Reader : public ShardedReader {
 public:
  std::optional<Format> format() const override { return Format::kRecordio; }

  Status Load(const std::string& path) {
    DS_RETURN_IF_ERROR(OpenShards(path, ".rec"));
    if (!meta_) label_field_ = "cls";  // im2rec data: the IRHeader label is the class
    for (uint32_t s = 0; s < shards_.size(); s++) {
      if (SkipAbsent(s)) {
        first_record_.resize(entries_.size(), record_names_.size());  // never decoded
      } else {
        DS_RETURN_IF_ERROR(LoadShard(s));
      }
    }
    return CheckAgainstMeta();
  }

 private:
  std::string Sidecar(uint32_t s, const char* ext) const {
    std::string p = ShardPath(s);
    return p.substr(0, p.size() - 4) + ext;
  }

  // Record boundaries by walking the part headers (the .idx only gives starts, and a split
  // record's parts must be checked anyway).
  Status ScanRecords(uint32_t s, std::vector<std::pair<uint64_t, uint64_t>>* recs) {
    uint64_t off = 0, size = shards_[s].size, start = 0;
    bool in_split = false;
    char h[8];
    while (off < size) {
      if (off + 8 > size) {
        return Status(Code::kCorruption, fmt::format("{}: truncated record header ({} bytes left)",
                                                     Where(s, off), size - off));
      }
      DS_RETURN_IF_ERROR(shards_[s].file->ReadAt(off, h, 8, ShardPath(s)));
      if (LoadLE32(h) != kMagic) {
        return Status(Code::kCorruption,
                      fmt::format("{}: bad magic {:08x} (expected {:08x}): not RecordIO, or "
                                  "damaged",
                                  Where(s, off), LoadLE32(h), kMagic));
      }
      uint32_t lrec = LoadLE32(h + 4), cflag = lrec >> 29, len = lrec & kMaxLength;
      uint64_t next = off + 8 + AlignUp(len, 4);
      if (next > size) {
        return Status(Code::kCorruption,
                      fmt::format("{}: truncated record: a {}-byte part runs past the end of the "
                                  "file",
                                  Where(s, off), len));
      }
      bool starts = cflag == 0 || cflag == 1;
      if (starts == in_split) {
        return Status(Code::kCorruption,
                      in_split ? fmt::format("{}: the split record that starts at offset {} is "
                                             "missing its end part (cflag 3)",
                                             Where(s, off), start)
                               : fmt::format("{}: a continuation part (cflag {}) with no start "
                                             "part before it",
                                             Where(s, off), cflag));
      }
      if (starts) start = off;
      in_split = cflag == 1 || cflag == 2;
      if (!in_split) recs->push_back({start, next});
      off = next;
    }
    if (in_split) {
      return Status(Code::kCorruption,
                    fmt::format("{}: the split record that starts at offset {} is missing its end "
                                "part (cflag 3): the file ends first",
                                ShardPath(s), start));
    }
    return Status::Ok();
  }

  Status LoadShard(uint32_t s) {
    std::vector<std::pair<uint64_t, uint64_t>> recs;
    DS_RETURN_IF_ERROR(ScanRecords(s, &recs));
    std::vector<std::string> paths;
    auto lst = ReadAll(*storage_, Sidecar(s, ".lst"));
    if (lst.ok()) {
      size_t pos = 0;
      while (pos < lst->size()) {
        size_t nl = lst->find('\n', pos);
        if (nl == std::string::npos) nl = lst->size();
        std::string_view line(lst->data() + pos, nl - pos);
        auto tab = line.rfind('\t');
        if (tab == std::string_view::npos) {
          return Status(Code::kCorruption, fmt::format("{} line {}: not 'index<TAB>label<TAB>path'",
                                                       Sidecar(s, ".lst"), paths.size() + 1));
        }
        paths.emplace_back(line.substr(tab + 1));
        pos = nl + 1;
      }
      if (paths.size() != recs.size()) {
        return Status(Code::kCorruption,
                      fmt::format("{}: {} lines for {} records in {}; rebuild the list",
                                  Sidecar(s, ".lst"), paths.size(), recs.size(), ShardPath(s)));
      }
    }
    std::unordered_set<uint64_t> seen;
    std::string key;
    for (size_t r = 0; r < recs.size(); r++) {
      uint64_t global = record_names_.size();
      std::string path = paths.empty() ? "" : paths[r];
      std::string k =
          paths.empty() ? fmt::format("{:010d}", global) : std::string(SplitPath(path).key);
      if (!entries_.empty() && entries_.back().shard == s && k == key && !paths.empty()) {
        entries_.back().end = recs[r].second;
      } else {
        if (!seen.insert(Xxh3_64(k)).second) {
          return Status(Code::kCorruption,
                        fmt::format("{}: key '{}' reappears after other samples: the records of "
                                    "a sample must be consecutive",
                                    Where(s, recs[r].first), EscapeBytes(k)));
        }
        entries_.push_back({s, recs[r].first, recs[r].second});
        first_record_.push_back(global);
        key = k;
      }
      record_names_.push_back(std::move(path));
    }
    return Status::Ok();
  }

  Result<Sample> Decode(uint32_t s, uint64_t begin, std::string_view b, uint64_t i) const override {
    Sample out;
    std::string label;
    uint64_t off = 0, rec = first_record_[i];
    while (off < b.size()) {
      std::string data;
      uint64_t rec_off = begin + off;
      for (;;) {
        if (off + 8 > b.size() || LoadLE32(&b[off]) != kMagic) {
          return Status(Code::kCorruption,
                        fmt::format("{}: bad magic or truncated record", Where(s, begin + off)));
        }
        uint32_t lrec = LoadLE32(&b[off + 4]), cflag = lrec >> 29, len = lrec & kMaxLength;
        if (off + 8 + len > b.size()) {
          return Status(Code::kCorruption,
                        fmt::format("{}: truncated record", Where(s, begin + off)));
        }
        data.append(b.substr(off + 8, len));
        off += 8 + AlignUp(len, 4);
        if (cflag == 0 || cflag == 3) break;
        PutLE32(&data, kMagic);
      }
      if (data.size() < kIRHeaderSize) {
        return Status(Code::kCorruption,
                      fmt::format("{}: record of {} bytes is shorter than an IRHeader",
                                  Where(s, rec_off), data.size()));
      }
      uint32_t flag = LoadLE32(data.data());
      uint64_t skip = kIRHeaderSize + 4ull * flag;
      if (skip > data.size()) {
        return Status(Code::kCorruption,
                      fmt::format("{}: IRHeader announces {} labels, more than the record holds",
                                  Where(s, rec_off), flag));
      }
      if (out.fields.empty()) {
        float f;
        std::memcpy(&f, &data[4], 4);
        label = LabelText(f);
        if (flag > 0) {
          label.clear();
          for (uint32_t k = 0; k < flag; k++) {
            std::memcpy(&f, &data[kIRHeaderSize + 4 * k], 4);
            label += (k ? " " : "") + LabelText(f);
          }
        }
      }
      const std::string& path = record_names_[rec++];
      KeyField kf = SplitPath(path);
      if (path.empty()) {
        out.key = fmt::format("{:010d}", rec - 1);
        out.fields.push_back({"rec", data.substr(skip)});
      } else {
        out.key.assign(kf.key);
        out.fields.push_back({std::string(kf.field), data.substr(skip)});
      }
    }
    if (!label_field_.empty()) out.fields.push_back({label_field_, label});
    return out;
  }

  std::vector<std::string> record_names_;  // .lst path of each record ("" without a .lst)
  std::vector<uint64_t> first_record_;     // per sample
};

}  // namespace

std::string Frame(std::string_view rec) {
  std::string out;
  uint32_t len = static_cast<uint32_t>(rec.size());
  uint32_t dptr = 0;
  for (uint32_t i = 0; i + 4 <= len; i += 4) {
    if (LoadLE32(&rec[i]) == kMagic) {
      PutPart(&out, dptr == 0 ? 1 : 2, rec.substr(dptr, i - dptr));
      dptr = i + 4;
    }
  }
  PutPart(&out, dptr != 0 ? 3 : 0, rec.substr(dptr));
  out.append(AlignUp(len, 4) - len, '\0');
  return out;
}

Result<std::unique_ptr<LayoutWriter>> CreateWriter(const std::string& out,
                                                   const WriterOptions& options) {
  return CreateShardedWriter<Writer, RecordioOptions>(out, options);
}

Result<std::unique_ptr<LayoutReader>> Open(const StorageRef& at,
                                           const std::set<std::string>* present) {
  return OpenReader<Reader>(at, present);
}

}  // namespace ds::recordio
