#include "formats/interop/tfrecord.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>

#include "formats/interop/sharded_reader.h"
#include "formats/interop/sharded_writer.h"
#include "src/checksum.h"
#include "src/endian.h"
#include "src/human.h"

namespace ds::tfrecord {

namespace {

// --- protobuf wire format, the few pieces an Example needs ---

size_t VarintLen(uint64_t v) {
  size_t n = 1;
  while (v >= 0x80) {
    v >>= 7;
    n++;
  }
  return n;
}

void PutVarint(std::string* s, uint64_t v) {
  while (v >= 0x80) {
    s->push_back(static_cast<char>(v | 0x80));
    v >>= 7;
  }
  s->push_back(static_cast<char>(v));
}

constexpr char kTag1Len = 0x0a;  // field 1, wire type 2
constexpr char kTag2Len = 0x12;  // field 2, wire type 2
constexpr char kTag3Len = 0x1a;  // field 3, wire type 2 (Feature.int64_list)

std::string Delimit(char tag, std::string_view body) {
  std::string s(1, tag);
  PutVarint(&s, body.size());
  s.append(body);
  return s;
}

// The whole features-map entry {name -> Feature{int64_list{value: [v]}}}, packed as protobuf
// writes a repeated int64.
std::string Int64Entry(std::string_view name, int64_t v) {
  std::string packed;
  PutVarint(&packed, static_cast<uint64_t>(v));
  std::string feature = Delimit(kTag3Len, Delimit(kTag1Len, packed));
  return Delimit(kTag1Len, Delimit(kTag1Len, name) + Delimit(kTag2Len, feature));
}

uint64_t Delimited(uint64_t n) { return 1 + VarintLen(n) + n; }

// Sizes of one map entry {name -> Feature{bytes_list{value}}}.
struct EntrySizes {
  uint64_t bytes_list, feature, entry;
};
EntrySizes Sizes(uint64_t name_len, uint64_t value_len) {
  EntrySizes s;
  s.bytes_list = Delimited(value_len);
  s.feature = Delimited(s.bytes_list);
  s.entry = Delimited(name_len) + Delimited(s.feature);
  return s;
}

// Everything of a features-map entry that precedes the value bytes.
std::string EntryPrefix(std::string_view name, uint64_t value_len) {
  EntrySizes z = Sizes(name.size(), value_len);
  std::string p;
  p.push_back(kTag1Len);
  PutVarint(&p, z.entry);
  p.push_back(kTag1Len);
  PutVarint(&p, name.size());
  p.append(name);
  p.push_back(kTag2Len);
  PutVarint(&p, z.feature);
  p.push_back(kTag1Len);
  PutVarint(&p, z.bytes_list);
  p.push_back(kTag1Len);
  PutVarint(&p, value_len);
  return p;
}

// Example header + the key entry; `features` is the Features message length.
std::string ExampleHead(std::string_view key, uint64_t features) {
  std::string p;
  p.push_back(kTag1Len);
  PutVarint(&p, features);
  p += EntryPrefix(kKeyFeature, key.size());
  p.append(key);
  return p;
}

uint64_t FeaturesLen(std::string_view key, std::span<const FieldInfo> fields) {
  uint64_t n = Delimited(Sizes(std::strlen(kKeyFeature), key.size()).entry);
  for (const auto& f : fields) n += Delimited(Sizes(f.name.size(), f.size).entry);
  return n;
}

class Writer : public ShardedWriter {
 public:
  Writer(std::string out, const TfrecordOptions& o, bool created)
      : ShardedWriter(Format::kTfrecord, std::move(out), o, created, ".tfrecord") {}

 private:
  // Exact for bytes features; an int64 feature counts as its longest encoding (a 10-byte
  // varint), since its size depends on its value.
  uint64_t PlannedSize(std::string_view key, std::span<const FieldInfo> fields) const override {
    const auto& int64 = schema().int64_fields;
    uint64_t features = Delimited(Sizes(std::strlen(kKeyFeature), key.size()).entry);
    for (const auto& f : fields) {
      bool typed = std::find(int64.begin(), int64.end(), f.name) != int64.end();
      features +=
          typed ? Int64Entry(f.name, -1).size() : Delimited(Sizes(f.name.size(), f.size).entry);
    }
    return kFrameOverhead + Delimited(features);
  }

  Status SampleBegin(std::string_view key, std::span<const FieldInfo> fields) override {
    for (const auto& f : fields) {
      if (f.name == kKeyFeature) {
        return Status(Code::kBadInput,
                      fmt::format("key '{}': a field named {} collides with the key feature; "
                                  "rename it",
                                  EscapeBytes(key), kKeyFeature));
      }
    }
    begin_ = shard_offset();
    fields_.assign(fields.begin(), fields.end());
    next_prefix_ = 0;
    const auto& int64 = schema().int64_fields;
    typed_ = std::any_of(fields.begin(), fields.end(), [&](const FieldInfo& f) {
      return std::find(int64.begin(), int64.end(), f.name) != int64.end();
    });
    if (typed_) {  // an int64's encoded size depends on its value: encode at the end
      typed_sample_.key.assign(key);
      typed_sample_.fields.clear();
      for (const auto& f : fields) typed_sample_.fields.push_back({f.name, {}});
      return Status::Ok();
    }
    uint64_t features = FeaturesLen(key, fields);
    length_ = Delimited(features);
    std::string frame;
    PutLE64(&frame, length_);
    PutLE32(&frame, MaskCrc(Crc32c(frame)));
    DS_RETURN_IF_ERROR(Write(frame));
    crc_ = 0;
    return Data(ExampleHead(key, features));
  }

  Status Data(std::string_view bytes) {
    crc_ = Crc32cExtend(crc_, bytes.data(), bytes.size());
    return Write(bytes);
  }

  Status PrefixesUpTo(size_t f) {
    for (; next_prefix_ <= f && next_prefix_ < fields_.size(); next_prefix_++) {
      DS_RETURN_IF_ERROR(Data(EntryPrefix(fields_[next_prefix_].name, fields_[next_prefix_].size)));
    }
    return Status::Ok();
  }

  Status FieldData(size_t f, std::string_view chunk) override {
    if (typed_) {
      typed_sample_.fields[f].data.append(chunk);
      return Status::Ok();
    }
    DS_RETURN_IF_ERROR(PrefixesUpTo(f));
    return Data(chunk);
  }

  Status SampleEnd() override {
    if (typed_) {
      DS_ASSIGN_OR_RETURN(std::string data, EncodeExample(typed_sample_, schema().int64_fields));
      length_ = data.size();
      std::string frame;
      PutLE64(&frame, length_);
      PutLE32(&frame, MaskCrc(Crc32c(frame)));
      DS_RETURN_IF_ERROR(Write(frame));
      crc_ = 0;
      DS_RETURN_IF_ERROR(Data(data));
    }
    if (!typed_) DS_RETURN_IF_ERROR(PrefixesUpTo(fields_.size()));
    std::string c;
    PutLE32(&c, MaskCrc(crc_));
    DS_RETURN_IF_ERROR(Write(c));
    idx_ += fmt::format("{} {}\n", begin_, kFrameOverhead + length_);
    return Status::Ok();
  }

  void ShardBegin() override { idx_.clear(); }
  Status ShardEnd(Sidecars* sidecars) override {
    sidecars->emplace_back(".idx", idx_);
    return Status::Ok();
  }

  std::vector<FieldInfo> fields_;
  bool typed_ = false;   // the sample has an int64 feature: buffered, encoded at its end
  Sample typed_sample_;  // its fields as they arrive
  size_t next_prefix_ = 0;
  uint64_t length_ = 0;
  uint64_t begin_ = 0;
  uint32_t crc_ = 0;
  std::string idx_;  // DALI tfrecord2idx lines of this shard
};

// --- decoding ---

struct Cursor {
  std::string_view d;
  bool Varint(uint64_t* v) {
    *v = 0;
    for (int shift = 0; shift < 64; shift += 7) {
      if (d.empty()) return false;
      uint8_t b = static_cast<uint8_t>(d[0]);
      d.remove_prefix(1);
      *v |= static_cast<uint64_t>(b & 0x7f) << shift;
      if (!(b & 0x80)) return true;
    }
    return false;
  }
  // Next field: number, wire type, and for wire type 2 its bytes; skips others' payloads.
  bool Next(uint64_t* field, int* wire, std::string_view* bytes, uint64_t* scalar) {
    uint64_t tag;
    if (!Varint(&tag)) return false;
    *field = tag >> 3;
    *wire = static_cast<int>(tag & 7);
    switch (*wire) {
      case 0:
        return Varint(scalar);
      case 1:
        if (d.size() < 8) return false;
        *scalar = LoadLE64(d.data());
        d.remove_prefix(8);
        return true;
      case 5:
        if (d.size() < 4) return false;
        *scalar = LoadLE32(d.data());
        d.remove_prefix(4);
        return true;
      case 2: {
        uint64_t n;
        if (!Varint(&n) || n > d.size()) return false;
        *bytes = d.substr(0, n);
        d.remove_prefix(n);
        return true;
      }
      default:
        return false;
    }
  }
};

std::string FloatText(uint32_t bits) {
  float f;
  std::memcpy(&f, &bits, 4);
  return fmt::format("{:.9g}", f);
}

// Feature message -> the field's bytes (bytes_list: its one value; numbers: as text).
Result<std::string> DecodeFeature(std::string_view feature, std::string_view name) {
  Cursor c{feature};
  std::string out;
  int values = 0;
  auto add_text = [&](const std::string& t) {
    if (values++) out += ' ';
    out += t;
  };
  uint64_t field, scalar;
  int wire;
  std::string_view list;
  while (!c.d.empty()) {
    if (!c.Next(&field, &wire, &list, &scalar) || wire != 2) return Status(Code::kCorruption, "");
    Cursor l{list};
    uint64_t f2, v;
    int w2;
    std::string_view b;
    while (!l.d.empty()) {
      if (!l.Next(&f2, &w2, &b, &v)) return Status(Code::kCorruption, "");
      if (f2 != 1) continue;
      if (field == 1 && w2 == 2) {
        if (values++) {
          return Status(Code::kBadInput,
                        fmt::format("feature '{}' holds several byte strings; dspack maps one "
                                    "byte string per field",
                                    EscapeBytes(name)));
        }
        out.assign(b);
      } else if (field == 2 && w2 == 5) {
        add_text(FloatText(static_cast<uint32_t>(v)));
      } else if (field == 2 && w2 == 2) {
        for (size_t k = 0; k + 4 <= b.size(); k += 4) add_text(FloatText(LoadLE32(&b[k])));
      } else if (field == 3 && w2 == 0) {
        add_text(std::to_string(static_cast<int64_t>(v)));
      } else if (field == 3 && w2 == 2) {
        Cursor p{b};
        uint64_t x;
        while (!p.d.empty()) {
          if (!p.Varint(&x)) return Status(Code::kCorruption, "");
          add_text(std::to_string(static_cast<int64_t>(x)));
        }
      }
    }
  }
  return out;
}

}  // namespace

Result<Sample> DecodeExample(std::string_view data, const std::string& default_key) {
  auto bad = [](std::string_view what) {
    return Status(Code::kCorruption, fmt::format("not a tf.train.Example ({})", what));
  };
  Sample s;
  bool have_key = false;
  Cursor ex{data};
  uint64_t field, scalar;
  int wire;
  std::string_view features;
  while (!ex.d.empty()) {
    if (!ex.Next(&field, &wire, &features, &scalar)) return bad("truncated Example");
    if (field != 1 || wire != 2) continue;
    Cursor fs{features};
    std::string_view entry;
    while (!fs.d.empty()) {
      if (!fs.Next(&field, &wire, &entry, &scalar)) return bad("truncated Features");
      if (field != 1 || wire != 2) continue;
      Cursor e{entry};
      std::string_view name, feature, b;
      while (!e.d.empty()) {
        if (!e.Next(&field, &wire, &b, &scalar)) return bad("truncated map entry");
        if (field == 1 && wire == 2) name = b;
        if (field == 2 && wire == 2) feature = b;
      }
      auto value = DecodeFeature(feature, name);
      if (!value.ok()) {
        if (value.status().code() == Code::kBadInput) return value.status();
        return bad(fmt::format("feature '{}' is malformed", EscapeBytes(name)));
      }
      if (name == kKeyFeature) {
        s.key = std::move(value).value();
        have_key = true;
      } else {
        s.fields.push_back({std::string(name), std::move(value).value()});
      }
    }
  }
  if (!have_key) s.key = default_key;
  return s;
}

Result<std::string> EncodeExample(const Sample& sample, std::span<const std::string> int64_fields) {
  uint64_t features = Delimited(Sizes(std::strlen(kKeyFeature), sample.key.size()).entry);
  std::string body;
  for (const auto& f : sample.fields) {
    if (std::find(int64_fields.begin(), int64_fields.end(), f.name) != int64_fields.end()) {
      std::optional<int64_t> v = ParseInt64(f.data);
      if (!v) {
        return Status(Code::kBadInput,
                      fmt::format("key '{}': int64 feature '{}' holds '{}', not an integer",
                                  EscapeBytes(sample.key), EscapeBytes(f.name),
                                  EscapeBytes(f.data.substr(0, 40))));
      }
      body += Int64Entry(f.name, *v);
    } else {
      body += EntryPrefix(f.name, f.data.size()) + f.data;
    }
  }
  features += body.size();
  return ExampleHead(sample.key, features) + body;
}

namespace {

class Reader : public ShardedReader {
 public:
  std::optional<Format> format() const override { return Format::kTfrecord; }

  Status Load(const std::string& path) {
    DS_RETURN_IF_ERROR(OpenShards(path, ".tfrecord"));
    for (uint32_t s = 0; s < shards_.size(); s++) {
      if (!SkipAbsent(s) && !LoadIdx(s)) DS_RETURN_IF_ERROR(Scan(s));
    }
    return CheckAgainstMeta();
  }

 private:
  std::string IdxPath(uint32_t s) const {
    std::string p = ShardPath(s);
    auto dot = p.rfind('.');
    return (dot == std::string::npos || dot < p.rfind('/') + 1 ? p : p.substr(0, dot)) + ".idx";
  }

  // DALI's index, when present and it tiles the shard exactly.
  bool LoadIdx(uint32_t s) {
    auto text = ReadAll(*storage_, IdxPath(s));
    if (!text.ok()) return false;
    std::vector<Entry> mine;
    uint64_t expect = 0;
    size_t pos = 0;
    while (pos < text->size()) {
      size_t nl = text->find('\n', pos);
      if (nl == std::string::npos) return false;
      unsigned long long off, size;
      char extra;
      if (std::sscanf(text->substr(pos, nl - pos).c_str(), "%llu %llu %c", &off, &size, &extra) !=
              2 ||
          off != expect || size < kFrameOverhead) {
        return false;
      }
      mine.push_back({s, off, off + size});
      expect = off + size;
      pos = nl + 1;
    }
    if (expect != shards_[s].size) return false;
    entries_.insert(entries_.end(), mine.begin(), mine.end());
    return true;
  }

  Status Scan(uint32_t s) {
    uint64_t off = 0, size = shards_[s].size;
    char head[12];
    while (off < size) {
      if (off + kFrameOverhead > size) {
        return Status(Code::kCorruption,
                      fmt::format("{}: truncated record (the file ends {} bytes into a record "
                                  "frame)",
                                  Where(s, off), size - off));
      }
      DS_RETURN_IF_ERROR(shards_[s].file->ReadAt(off, head, 12, ShardPath(s)));
      uint64_t len = LoadLE64(head);
      if (MaskCrc(Crc32c(head, 8)) != LoadLE32(head + 8)) {
        return Status(
            Code::kCorruption,
            fmt::format("{}: length CRC mismatch (not a TFRecord, or damaged)", Where(s, off)));
      }
      if (len > size - off - kFrameOverhead) {
        return Status(Code::kCorruption,
                      fmt::format("{}: truncated record: {} data bytes announced, {} left in the "
                                  "file",
                                  Where(s, off), len, size - off - kFrameOverhead));
      }
      entries_.push_back({s, off, off + kFrameOverhead + len});
      off += kFrameOverhead + len;
    }
    return Status::Ok();
  }

  Result<Sample> Decode(uint32_t s, uint64_t begin, std::string_view b, uint64_t i) const override {
    uint64_t len = LoadLE64(b.data());
    if (MaskCrc(Crc32c(b.data(), 8)) != LoadLE32(b.data() + 8) ||
        len != b.size() - kFrameOverhead) {
      return Status(Code::kCorruption,
                    fmt::format("{}: record {}: length CRC mismatch or length disagrees with the "
                                "index",
                                Where(s, begin), i));
    }
    std::string_view data = b.substr(12, len);
    uint32_t stored = LoadLE32(b.data() + 12 + len), crc = MaskCrc(Crc32c(data));
    if (stored != crc) {
      return Status(Code::kCorruption,
                    fmt::format("{}: record {}: data CRC mismatch (stored {:08x}, computed "
                                "{:08x}); the record is damaged",
                                Where(s, begin), i, stored, crc));
    }
    auto sample = DecodeExample(data, fmt::format("{:010d}", i));
    if (!sample.ok()) {
      return Status(sample.status().code(), fmt::format("{}: record {}: {}", Where(s, begin), i,
                                                        sample.status().message()));
    }
    return sample;
  }
};

}  // namespace

Result<std::unique_ptr<LayoutWriter>> CreateWriter(const std::string& out,
                                                   const WriterOptions& options) {
  return CreateShardedWriter<Writer, TfrecordOptions>(out, options);
}

Result<std::unique_ptr<LayoutReader>> Open(const StorageRef& at,
                                           const std::set<std::string>* present) {
  return OpenReader<Reader>(at, present);
}

}  // namespace ds::tfrecord
