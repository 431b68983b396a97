#include "formats/layout.h"

#include <fmt/format.h>

#include "formats/registry.h"
#include "src/human.h"

namespace ds {

using nlohmann::json;

std::string_view FormatName(Format f) { return LayoutFor(f).name; }

Result<std::vector<uint64_t>> PlanShardStarts(uint64_t n, const PartitionedWriter::ShapeFn& shape,
                                              const ShardRoll& roll) {
  std::vector<uint64_t> starts{0};
  std::string key;
  std::vector<FieldInfo> fields;
  for (uint64_t s = 0; s < n; s++) {
    key.clear();
    fields.clear();
    shape(s, &key, &fields);
    DS_ASSIGN_OR_RETURN(bool starts_new, roll(key, fields));
    if (starts_new) starts.push_back(s);
  }
  starts.push_back(n);
  return starts;
}

Status PartitionedWriteBug(const std::string& out, const std::string& what) {
  return Status(
      Code::kInternal,
      fmt::format("{}: partitioned write: {} (a bug in dspack; please report it)", out, what));
}

Result<Format> ParseFormat(std::string_view name) {
  for (const LayoutEntry& e : LayoutTable()) {
    if (name == e.name) return e.format;
  }
  if (name == "webdataset" || name == "tar") return Format::kWds;
  if (name == "dspack-native") return Format::kNative;
  return Status(Code::kInvalidArgument,
                fmt::format("unknown format '{}'; choose native, lmdb, wds, tfrecord or recordio",
                            EscapeBytes(name)));
}

Status LayoutWriter::Add(const Sample& sample) {
  std::vector<FieldInfo> infos;
  infos.reserve(sample.fields.size());
  for (const auto& f : sample.fields) infos.push_back({f.name, f.data.size()});
  DS_RETURN_IF_ERROR(BeginSample(sample.key, infos));
  for (const auto& f : sample.fields) DS_RETURN_IF_ERROR(AppendData(f.data));
  return EndSample();
}

Result<SampleHead> LayoutReader::Head(uint64_t i) const {
  DS_ASSIGN_OR_RETURN(Sample s, Get(i));
  SampleHead h{std::move(s.key), {}};
  for (const auto& f : s.fields) h.fields.push_back({f.name, f.data.size()});
  return h;
}

Result<std::optional<uint64_t>> LayoutReader::Find(std::string_view key) const {
  std::lock_guard<std::mutex> lock(keys_mu_);
  if (!keys_) {
    auto keys = std::make_unique<std::unordered_map<std::string, uint64_t>>();
    for (uint64_t i = 0; i < size(); i++) {
      DS_ASSIGN_OR_RETURN(SampleHead h, Head(i));
      keys->emplace(std::move(h.key), i);
    }
    keys_ = std::move(keys);
  }
  auto it = keys_->find(std::string(key));
  if (it == keys_->end()) return std::optional<uint64_t>();
  return std::optional<uint64_t>(it->second);
}

Status LayoutReader::StreamPayload(
    uint64_t i, const std::function<Status(size_t, std::string_view)>& fn) const {
  DS_ASSIGN_OR_RETURN(Sample s, Get(i));
  for (size_t f = 0; f < s.fields.size(); f++) DS_RETURN_IF_ERROR(fn(f, s.fields[f].data));
  return Status::Ok();
}

Status LayoutReader::Verify(LayoutVerifyReport* r, const LayoutProgress& progress) const {
  for (uint64_t i = 0; i < size(); i++) {
    auto s = Get(i);
    if (!s.ok()) {
      r->problems.push_back(s.status().message());
    } else {
      r->bytes += s->payload_bytes();
    }
    r->records++;
    if (progress) progress(i + 1, r->bytes);
  }
  return Status::Ok();
}

std::string LayoutReader::InfoText() const { return InfoLines(Info()); }

std::string LayoutReader::InfoLines(const nlohmann::json& j) const {
  std::string s;
  for (auto it = j.begin(); it != j.end(); ++it) {
    std::string v = it->is_string() ? it->get<std::string>() : it->dump();
    if (it.key() == "labels" && !it->is_null()) {
      v = fmt::format("field '{}', {} classes (classes.txt)", label_field(), it->dump());
    }
    if (it.key() == "payload_bytes" || it.key() == "total_bytes") v = FormatBytes(*it);
    s += fmt::format("{:<14} {}\n", it.key() + ":", v);
  }
  return s;
}

Result<DatasetFiles> LayoutReader::Files() const {
  DS_ASSIGN_OR_RETURN(auto files, ListDatasetFiles(StorageRef{storage_, path_}));
  return files ? std::move(*files) : DatasetFiles{};
}

Result<std::vector<uint64_t>> LayoutReader::SampleSizes() const {
  std::vector<uint64_t> v(size());
  for (uint64_t i = 0; i < v.size(); i++) {
    DS_ASSIGN_OR_RETURN(SampleHead h, Head(i));
    v[i] = h.payload_len();
  }
  return v;
}

Result<std::vector<ShardRange>> LayoutReader::ShardRanges() const {
  std::vector<ShardRange> v;
  for (uint64_t i = 0; i < size(); i++) {
    DS_ASSIGN_OR_RETURN(SampleLocation loc, Locate(i));
    if (v.empty() || v.back().file != loc.file) v.push_back({loc.file, 0, i, 0});
    v.back().samples++;
  }
  return v;
}

Result<LayoutReader::SampleExtent> LayoutReader::Extent(uint64_t) const {
  return Status(Code::kUnsupported, "this layout has no sample extents");
}

Result<Sample> LayoutReader::DecodeExtent(uint64_t, const SampleExtent&, std::string_view) const {
  return Status(Code::kUnsupported, "this layout has no sample extents");
}

}  // namespace ds
