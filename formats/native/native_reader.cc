#include "formats/native/native_reader.h"

#include <fmt/format.h>
#include <unistd.h>

#include "formats/native/native_dataset.h"
#include "formats/native/native_shard.h"
#include "formats/native/native_verify.h"
#include "src/human.h"

namespace ds::native {

using nlohmann::json;

namespace {

class NativeReader : public LayoutReader {
 public:
  Status Load(const StorageRef& at) {
    path_ = at.path;
    storage_ = at.storage;
    DS_ASSIGN_OR_RETURN(ds_, Dataset::Open(storage_, path_));
    label_field_ = ds_->manifest().label_field;
    if (!label_field_.empty()) {
      DS_ASSIGN_OR_RETURN(classes_, ds_->Classes());
    }
    return Status::Ok();
  }
  std::optional<Format> format() const override { return Format::kNative; }
  uint64_t size() const override { return ds_->size(); }
  Result<Sample> Get(uint64_t i) const override { return ds_->Get(i); }
  Result<SampleHead> Head(uint64_t i) const override {
    DS_ASSIGN_OR_RETURN(RecordHead h, ds_->Head(i));
    return SampleHead{std::move(h.key), std::move(h.fields)};
  }
  Result<SampleLocation> Locate(uint64_t i) const override {
    DS_ASSIGN_OR_RETURN(GlobalEntry e, ds_->Locate(i));
    return SampleLocation{ds_->manifest().shards[e.shard].name, e.offset};
  }
  Result<std::optional<uint64_t>> Find(std::string_view key) const override {
    return ds_->Find(key);
  }
  std::vector<std::string> DataFiles() const override {
    std::vector<std::string> v;
    for (uint32_t s = 0; s < ds_->manifest().shards.size(); s++) v.push_back(ds_->ShardPath(s));
    v.push_back(path_ + "/" + kIndexName);
    return v;
  }
  json Info() const override {
    const Manifest& m = ds_->manifest();
    return {{"path", storage_->Uri(path_)},
            {"format", kFormatName},
            {"version", m.version},
            {"samples", m.samples},
            {"shards", m.shards.size()},
            {"payload_bytes", m.payload_bytes},
            {"total_bytes", TotalBytes()},
            {"align", m.align},
            {"shard_size", m.shard_size},
            {"labels", m.label_field.empty() ? json(nullptr) : json(m.class_count)},
            {"skipped", m.skipped.size()},
            {"created_by", m.created_by},
            {"options", m.options}};
  }
  std::string InfoText() const override {
    const Manifest& m = ds_->manifest();
    std::string s;
    s += fmt::format("dataset:   {}\n", storage_->Uri(path_));
    s += fmt::format("format:    {} v{} ({})\n", kFormatName, m.version, m.created_by);
    s += fmt::format("samples:   {}\n", m.samples);
    s += fmt::format("shards:    {} (target {}, records aligned to {} B)\n", m.shards.size(),
                     FormatBytes(m.shard_size), m.align);
    s += fmt::format("payload:   {} ({} on disk with headers, padding and index)\n",
                     FormatBytes(m.payload_bytes), FormatBytes(TotalBytes()));
    if (!m.label_field.empty()) {
      s += fmt::format("labels:    field '{}', {} classes ({})\n", m.label_field, m.class_count,
                       kClassesName);
    }
    if (!m.skipped.empty()) {
      s += fmt::format("skipped:   {} inputs (see {})\n", m.skipped.size(), kManifestName);
    }
    return s;
  }
  Result<DatasetFiles> Files() const override {
    DS_ASSIGN_OR_RETURN(auto files, ListFiles(StorageRef{storage_, path_}));
    return files ? std::move(*files) : DatasetFiles{};
  }
  Result<std::vector<uint64_t>> SampleSizes() const override {
    std::vector<uint64_t> v(ds_->size());
    for (uint64_t i = 0; i < v.size(); i++) v[i] = ds_->index().entry(i).length;
    return v;
  }
  Result<std::vector<ShardRange>> ShardRanges() const override {
    std::vector<ShardRange> v;
    for (const auto& s : ds_->manifest().shards) {
      v.push_back({s.name, s.size, s.first_sample, s.samples});
    }
    return v;
  }
  Status StreamPayload(uint64_t i,
                       const std::function<Status(size_t, std::string_view)>& fn) const override {
    DS_ASSIGN_OR_RETURN(RecordHead h, ds_->Head(i));
    return ds_->StreamPayload(i, h, fn);
  }
  Status Verify(LayoutVerifyReport* r, const LayoutProgress& progress) const override {
    return native::Verify(StorageRef{storage_, path_}, r, progress);
  }

 protected:
  bool has_extents() const override { return true; }
  Result<SampleExtent> Extent(uint64_t i) const override {
    DS_ASSIGN_OR_RETURN(auto fe, ds_->RecordExtent(i));
    return SampleExtent{fe.first, fe.second.offset, fe.second.length};
  }
  Result<Sample> DecodeExtent(uint64_t i, const SampleExtent&,
                              std::string_view bytes) const override {
    DS_ASSIGN_OR_RETURN(GlobalEntry e, ds_->Locate(i));
    return ds_->DecodeRecordBytes(i, e, bytes);
  }

 private:
  uint64_t TotalBytes() const {
    const Manifest& m = ds_->manifest();
    uint64_t total = m.index.size;
    for (const auto& s : m.shards) total += s.size;
    return total;
  }

  std::unique_ptr<Dataset> ds_;
};

DatasetFile FromMeta(const FileMeta& f) {
  return {f.name, f.size, f.samples, f.first_sample, f.xxh3};
}

}  // namespace

Result<std::unique_ptr<LayoutReader>> OpenReader(const StorageRef& at,
                                                 const std::set<std::string>*) {
  auto r = std::make_unique<NativeReader>();
  DS_RETURN_IF_ERROR(r->Load(at));
  return std::unique_ptr<LayoutReader>(std::move(r));
}

Result<std::unique_ptr<LayoutWriter>> CreateWriter(const std::string& out,
                                                   const WriterOptions& options) {
  DS_ASSIGN_OR_RETURN(auto w, DatasetWriter::Create(out, std::get<NativeOptions>(options)));
  return std::unique_ptr<LayoutWriter>(std::move(w));
}

Result<std::optional<DatasetFiles>> ListFiles(const StorageRef& at) {
  if (!at.storage->Stat(at.path + "/" + kManifestName, true).ok()) {
    return std::optional<DatasetFiles>();
  }
  DS_ASSIGN_OR_RETURN(Manifest m, Manifest::Load(*at.storage, at.path));
  DatasetFiles files;
  files.commit_point = kManifestName;
  for (const auto& s : m.shards) files.shards.push_back(FromMeta(s));
  DatasetFile index = FromMeta(m.index);
  index.name = kIndexName;
  files.metadata.push_back(index);
  if (!m.label_field.empty()) {
    files.metadata.push_back({kClassesName, 0, 0, 0, m.classes_xxh3});
  }
  return std::optional<DatasetFiles>(std::move(files));
}

Status Verify(const StorageRef& at, LayoutVerifyReport* r, const LayoutProgress& progress) {
  return VerifyDataset(at, r, progress);
}

}  // namespace ds::native
