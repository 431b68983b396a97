// SchemaWriter: the writer under a schema (formats/schema.h, WithSchema). It maps each sample's
// fields to the layout's convention for the schema (imagenet: one image and the label, the
// names each layout's loaders look for) and records the mapping in the dataset's metadata.
#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <optional>
#include <set>

#include "formats/layout.h"
#include "formats/schema.h"
#include "src/human.h"

namespace ds {

namespace {

// image/format's value: the image type's usual name (TensorFlow's ImageNet builder: "JPEG";
// lower-case here, as tf's decode_image and DALI do not read it).
std::string ImageFormat(std::string_view field) {
  std::string ext = NormalisedImageExt(field);
  if (ext == "jpg") return "jpeg";
  if (ext == "tif") return "tiff";
  return ext;
}

std::string_view BaseName(std::string_view key) {
  size_t slash = key.rfind('/');
  return slash == std::string_view::npos ? key : key.substr(slash + 1);
}

// The writer under a schema. A partitioned write (formats/layout.h) goes through it too: its plan
// maps every sample's shape as BeginSample does, and notes the stored names of all the job's
// samples there, so the root's schema record is the one a single writer would make.
class SchemaWriter : public LayoutWriter, public PartitionedWriter {
 public:
  SchemaWriter(std::unique_ptr<LayoutWriter> inner, Format format, Schema schema)
      : inner_(std::move(inner)), format_(format), schema_(std::move(schema)) {
    record_.kind = schema_.kind;
    if (schema_.kind == SchemaKind::kImagenet && format_ == Format::kTfrecord) {
      record_.derived = {kTfImageFormat, kTfImageFilename};
      record_.int64_fields = {kTfImageLabel};
    }
    for (const auto& r : schema_.rules) {
      if (r.type == FieldType::kInt64) record_.int64_fields.push_back(r.to);
    }
    inner_->SetSchema(record_);  // the int64 fields, before the first sample
  }

  Status CheckSample(std::string_view key, std::span<const FieldInfo> fields) const override {
    std::vector<Mapped> mapped;
    DS_RETURN_IF_ERROR(Map(key, fields, &mapped));
    std::vector<FieldInfo> infos;
    for (const auto& m : mapped) infos.push_back(m.info);
    return inner_->CheckSample(key, infos);
  }

  Status BeginSample(std::string_view key, std::span<const FieldInfo> fields) override {
    DS_RETURN_IF_ERROR(Map(key, fields, &mapped_));
    std::vector<FieldInfo> infos;
    for (const auto& m : mapped_) infos.push_back(m.info);
    key_.assign(key);
    pos_ = 0;
    source_fields_ = fields.size();
    return inner_->BeginSample(key, infos);
  }

  Status AppendData(std::string_view chunk) override {
    // Keep a copy of the typed fields' bytes (small: labels) to check them at the end.
    uint64_t begin = pos_, end = pos_ + chunk.size(), fb = 0;
    for (size_t f = 0; f < source_fields_; f++) {
      uint64_t fe = fb + mapped_[f].info.size;
      if (mapped_[f].type == FieldType::kInt64 && fe > begin && fb < end) {
        uint64_t lo = std::max(fb, begin), hi = std::min(fe, end);
        mapped_[f].value.append(chunk.substr(lo - begin, hi - lo));
      }
      fb = fe;
    }
    pos_ = end;
    return inner_->AppendData(chunk);
  }

  Status EndSample() override {
    for (const auto& m : mapped_) {
      if (m.type == FieldType::kInt64 && !ParseInt64(m.value)) {
        inner_->CancelSample();
        return Status(Code::kBadInput,
                      fmt::format("key '{}': field '{}' ('{}' in the schema) holds '{}', not an "
                                  "integer; fix the field map or the data",
                                  EscapeBytes(key_), EscapeBytes(m.source),
                                  EscapeBytes(m.info.name), m.value.substr(0, 40)));
      }
    }
    for (size_t f = source_fields_; f < mapped_.size(); f++) {
      DS_RETURN_IF_ERROR(inner_->AppendData(mapped_[f].value));
    }
    DS_RETURN_IF_ERROR(inner_->EndSample());
    for (size_t f = 0; f < source_fields_; f++) Note(mapped_[f].info.name, mapped_[f].source);
    return Status::Ok();
  }

  void CancelSample() override { inner_->CancelSample(); }
  void AddSkipped(std::string_view path, std::string_view error) override {
    inner_->AddSkipped(path, error);
  }
  void SetClasses(std::vector<std::string> names, std::string label_field) override {
    label_field_ = label_field;
    inner_->SetClasses(std::move(names), StoredLabelName(label_field));
  }
  void SetSchema(const SchemaRecord&) override {}  // the wrapper is the schema
  void ReserveSamples(uint64_t n) override { inner_->ReserveSamples(n); }
  uint64_t samples() const override { return inner_->samples(); }
  uint64_t payload_bytes() const override { return inner_->payload_bytes(); }
  Status Finish(LayoutSummary* summary) override {
    RecordSourceNames();
    return inner_->Finish(summary);
  }
  void Abandon() override { inner_->Abandon(); }

  // The run record and the source position are the inner writer's own: handed out as they are.
  ResumableWriter* resumable() override { return inner_->resumable(); }
  PartitionedWriter* partitioned() override { return inner_->partitioned() ? this : nullptr; }
  Result<std::vector<uint64_t>> PlanShards(uint64_t n, const ShapeFn& shape) const override {
    Status bad;
    std::vector<Mapped> mapped;
    auto mapped_shape = [&](uint64_t i, std::string* key, std::vector<FieldInfo>* fields) {
      std::vector<FieldInfo> source;
      shape(i, key, &source);
      Status s = Map(*key, source, &mapped);
      if (!s.ok() && bad.ok()) bad = s;
      for (const auto& m : mapped) fields->push_back(m.info);
      for (size_t f = 0; s.ok() && f < source.size(); f++)
        Note(mapped[f].info.name, mapped[f].source);
    };
    auto starts = inner_->partitioned()->PlanShards(n, mapped_shape);
    DS_RETURN_IF_ERROR(bad);
    return starts;
  }
  Result<std::string> BeginJob(const nlohmann::json& run) override {
    return inner_->partitioned()->BeginJob(run);
  }
  Result<std::vector<std::pair<uint64_t, uint64_t>>> BeginPart(std::vector<uint64_t> starts,
                                                               uint64_t first, uint64_t last,
                                                               const std::string& done,
                                                               int part) override {
    return inner_->partitioned()->BeginPart(std::move(starts), first, last, done, part);
  }
  Result<std::string> FinishPart() override { return inner_->partitioned()->FinishPart(); }
  Status CommitParts(const std::vector<std::string>& parts, LayoutSummary* summary) override {
    RecordSourceNames();
    return inner_->partitioned()->CommitParts(parts, summary);
  }

 private:
  struct Mapped {
    FieldInfo info;  // the stored name and size
    FieldType type = FieldType::kBytes;
    std::string source;  // the source's name ("" for a derived field)
    std::string value;   // a derived field's bytes, or a typed field's bytes as they pass
  };

  std::string StoredLabelName(const std::string& label) const {
    if (label.empty()) return label;
    if (schema_.kind == SchemaKind::kMap) {
      for (const auto& r : schema_.rules) {
        if (r.from == label) return r.to;
      }
      return label;
    }
    if (schema_.kind == SchemaKind::kImagenet) {
      return format_ == Format::kTfrecord ? kTfImageLabel
             : format_ == Format::kLmdb   ? kLmdbLabel
                                          : "cls";
    }
    return label;
  }

  Status Map(std::string_view key, std::span<const FieldInfo> fields,
             std::vector<Mapped>* out) const {
    out->clear();
    if (schema_.kind == SchemaKind::kImagenet) {
      DS_RETURN_IF_ERROR(FitsImagenet(key, fields));
    }
    for (const auto& f : fields) {
      Mapped m{{f.name, f.size}, FieldType::kBytes, f.name, {}};
      bool is_label = !label_field_.empty() && f.name == label_field_;
      if (schema_.kind == SchemaKind::kMap) {
        for (const auto& r : schema_.rules) {
          if (r.from == f.name) {
            m.info.name = r.to;
            m.type = r.type;
          }
        }
      } else if (is_label) {
        m.info.name = StoredLabelName(label_field_);
        if (format_ == Format::kTfrecord) m.type = FieldType::kInt64;
      } else if (IsImageField(f.name)) {
        m.info.name = format_ == Format::kTfrecord   ? std::string(kTfImageEncoded)
                      : format_ == Format::kLmdb     ? std::string(kLmdbImage)
                      : format_ == Format::kRecordio ? f.name
                                                     : NormalisedImageExt(f.name);
      } else if (format_ == Format::kWds) {
        m.info.name = AsciiLower(f.name);
      }
      out->push_back(std::move(m));
    }
    if (schema_.kind == SchemaKind::kImagenet && format_ == Format::kTfrecord) {
      for (const auto& f : fields) {
        if (!IsImageField(f.name)) continue;
        std::string fmt_value = ImageFormat(f.name);
        std::string file = JoinKeyField(BaseName(key), f.name);
        out->push_back({{kTfImageFormat, fmt_value.size()}, FieldType::kBytes, "", fmt_value});
        out->push_back({{kTfImageFilename, file.size()}, FieldType::kBytes, "", file});
      }
    }
    std::set<std::string_view> names;
    for (const auto& m : *out) {
      if (!names.insert(m.info.name).second) {
        return Status(
            Code::kBadInput,
            fmt::format("key '{}': two fields are stored as '{}' under the {} schema; "
                        "rename one or use `schema` raw",
                        EscapeBytes(key), EscapeBytes(m.info.name), SchemaName(schema_.kind)));
      }
    }
    return Status::Ok();
  }

  // imagenet: exactly one image field besides the label.
  Status FitsImagenet(std::string_view key, std::span<const FieldInfo> fields) const {
    std::vector<std::string> data;
    bool image = false;
    for (const auto& f : fields) {
      if (!label_field_.empty() && f.name == label_field_) continue;
      data.push_back(f.name);
      image = image || IsImageField(f.name);
    }
    bool one_image_only = data.size() == 1 && image;
    // TFRecord and wds carry extra fields under their own names; RecordIO and LMDB's pickle
    // hold one image per sample.
    bool extras_ok = (format_ == Format::kTfrecord || format_ == Format::kWds) && image &&
                     std::count_if(fields.begin(), fields.end(),
                                   [](const FieldInfo& f) { return IsImageField(f.name); }) == 1;
    if (one_image_only || extras_ok) return Status::Ok();
    std::string names;
    for (const auto& n : data) names += (names.empty() ? "'" : ", '") + EscapeBytes(n) + "'";
    return Status(Code::kBadInput,
                  fmt::format("key '{}': the imagenet schema stores one image per sample in {}, "
                              "and this sample has {}; use `schema` raw, or a `field_map`",
                              EscapeBytes(key), FormatName(format_),
                              names.empty() ? std::string("no data field") : "fields " + names));
  }

  void RecordSourceNames() {
    for (const auto& [stored, source] : seen_) {
      if (source && *source != stored) record_.source_names[stored] = *source;
    }
    inner_->SetSchema(record_);
  }

  // stored name -> its source name, or nullopt once two source names were stored under it.
  void Note(const std::string& stored, const std::string& source) const {
    auto [it, fresh] = seen_.emplace(stored, source);
    if (!fresh && it->second && *it->second != source) it->second.reset();
  }

  std::unique_ptr<LayoutWriter> inner_;
  Format format_;
  Schema schema_;
  SchemaRecord record_;
  std::string label_field_;
  std::string key_;
  std::vector<Mapped> mapped_;
  size_t source_fields_ = 0;
  uint64_t pos_ = 0;  // payload bytes of the sample passed on so far
  // Of the samples written, or of all the job's samples (PlanShards, which is const).
  mutable std::map<std::string, std::optional<std::string>> seen_;
};

}  // namespace

std::unique_ptr<LayoutWriter> WithSchema(std::unique_ptr<LayoutWriter> writer, Format format,
                                         Schema schema) {
  if (schema.raw()) return writer;
  return std::make_unique<SchemaWriter>(std::move(writer), format, std::move(schema));
}

}  // namespace ds
