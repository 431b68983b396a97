#include "formats/subset.h"

#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <map>
#include <set>

#include "formats/registry.h"
#include "src/checksum.h"
#include "src/fd.h"
#include "src/human.h"
#include "src/storage.h"

namespace ds {

using nlohmann::json;

namespace {

std::string ViewPath(const std::string& dir) { return dir + "/" + std::string(kSubsetViewName); }

Status Malformed(const std::string& dir, std::string_view what) {
  return Status(Code::kCorruption,
                fmt::format("{}: {}; stage the dataset again (dssync) or remove the file to read "
                            "the directory as a whole dataset",
                            ViewPath(dir), what));
}

// The dataset's own listing (its metadata, without the view), required for a view.
Result<DatasetFiles> FullListing(const StorageRef& at, Format f) {
  DS_ASSIGN_OR_RETURN(auto files, LayoutFor(f).files(at));
  if (!files) return Malformed(at.path, "a subset view, but the directory has no dataset metadata");
  return std::move(*files);
}

std::string Summary(const SubsetView& v, uint64_t shards, uint64_t samples) {
  std::string s =
      fmt::format("{} of {} shards, {} of {} samples", shards, v.of_shards, samples, v.of_samples);
  if (!v.reason.empty()) s += " (" + v.reason + ")";
  return s;
}

}  // namespace

// Named (not in the anonymous namespace): LayoutReader befriends it to forward the extents of
// batched reads to the inner reader.
class SubsetReader : public LayoutReader {
 public:
  SubsetReader(const StorageRef& at, Format f, SubsetView view, DatasetFiles listing,
               std::unique_ptr<LayoutReader> inner, std::vector<ShardRange> ranges)
      : storage_(at.storage),
        format_(f),
        view_(std::move(view)),
        listing_(std::move(listing)),
        inner_(std::move(inner)),
        ranges_(std::move(ranges)) {
    path_ = at.path;
    if (inner_) {
      label_field_ = inner_->label_field();
      classes_ = inner_->classes();
      schema_ = inner_->schema();
    }
    // ranges_ hold the inner numbers; renumber them into this view's as the map is built.
    for (ShardRange& r : ranges_) {
      uint64_t first = map_.size();
      for (uint64_t k = 0; k < r.samples; k++) map_.push_back(r.first_sample + k);
      r.first_sample = first;
    }
  }

  std::optional<Format> format() const override { return format_; }
  uint64_t size() const override { return map_.size(); }
  Result<Sample> Get(uint64_t i) const override { return inner_->Get(map_[i]); }
  Result<SampleHead> Head(uint64_t i) const override { return inner_->Head(map_[i]); }
  Result<SampleLocation> Locate(uint64_t i) const override { return inner_->Locate(map_[i]); }
  // Find: LayoutReader's key table, built over this view's samples (an inner reader's own table
  // would read the absent shards' samples).
  Status StreamPayload(uint64_t i,
                       const std::function<Status(size_t, std::string_view)>& fn) const override {
    return inner_->StreamPayload(map_[i], fn);
  }

  std::vector<std::string> DataFiles() const override {
    std::set<std::string> absent;
    for (const auto& s : listing_.shards) absent.insert(path_ + "/" + s.name);
    for (const auto& s : view_.shards) absent.erase(path_ + "/" + s);
    std::vector<std::string> v;
    if (!inner_) return v;
    for (auto& f : inner_->DataFiles()) {
      if (absent.count(f) == 0) v.push_back(std::move(f));
    }
    return v;
  }

  json Info() const override {
    json j = inner_ ? inner_->Info() : json{{"path", path_}, {"format", FormatName(format_)}};
    uint64_t bytes = 0;
    for (const auto& r : ranges_) bytes += r.bytes;
    j["samples"] = size();
    j["shards"] = ranges_.size();
    j["total_bytes"] = bytes;  // the present shards
    j.erase("payload_bytes");  // the whole dataset's: not this view's
    j["subset"] = {{"view", std::string(kSubsetViewName)}, {"shards", ranges_.size()},
                   {"of_shards", view_.of_shards},         {"samples", size()},
                   {"of_samples", view_.of_samples},       {"reason", view_.reason}};
    return j;
  }
  std::string InfoText() const override {
    json j = Info();
    j.erase("subset");
    return fmt::format("{:<14} {}\n", "subset:", Summary(view_, ranges_.size(), size())) +
           InfoLines(j);
  }

  Result<DatasetFiles> Files() const override { return FilterToView(listing_, view_); }

  Result<std::vector<uint64_t>> SampleSizes() const override {
    if (!inner_) return std::vector<uint64_t>();
    DS_ASSIGN_OR_RETURN(auto all, inner_->SampleSizes());
    std::vector<uint64_t> v;
    v.reserve(map_.size());
    for (uint64_t k : map_) v.push_back(all[k]);
    return v;
  }
  Result<std::vector<ShardRange>> ShardRanges() const override { return ranges_; }
  // The inner reader opened with the present shards still lists every shard of the metadata;
  // with none present there is no inner reader, and the metadata's listing says the same.
  Result<std::vector<ShardRange>> WholeShardRanges() const override {
    if (inner_) return inner_->ShardRanges();
    std::vector<ShardRange> v;
    for (const auto& f : listing_.shards) v.push_back({f.name, f.size, f.first_sample, f.samples});
    return v;
  }

  // The present files against the metadata's sizes and hashes, then every sample (checksums).
  Status Verify(LayoutVerifyReport* r, const LayoutProgress& progress) const override {
    DatasetFiles mine = FilterToView(listing_, view_);
    for (const auto& f : mine.shards) CheckFile(f, true, r);
    for (const auto& f : mine.metadata) CheckFile(f, false, r);
    return LayoutReader::Verify(r, progress);
  }

 protected:
  bool has_extents() const override { return inner_ && inner_->has_extents(); }
  Result<SampleExtent> Extent(uint64_t i) const override { return inner_->Extent(map_[i]); }
  Result<Sample> DecodeExtent(uint64_t i, const SampleExtent& e,
                              std::string_view bytes) const override {
    return inner_->DecodeExtent(map_[i], e, bytes);
  }

 private:
  void CheckFile(const DatasetFile& f, bool shard, LayoutVerifyReport* r) const {
    if (shard) r->shards++;
    if (!shard && !f.xxh3) return;
    std::string path = path_ + "/" + f.name;
    auto st = storage_->Stat(path, /*follow=*/true);
    if (!st.ok()) {
      r->problems.push_back(
          fmt::format("{}: missing, though the subset view lists it; stage it "
                      "again (dssync)",
                      path));
      return;
    }
    if (shard && st->size != f.size) {
      r->problems.push_back(
          fmt::format("{}: {} bytes, but {} says {} (truncated or replaced?); "
                      "stage it again (dssync)",
                      path, st->size, listing_.commit_point, f.size));
      return;
    }
    if (!f.xxh3) return;
    auto h = HashFile(*storage_, path);
    if (!h.ok()) {
      r->problems.push_back(h.status().message());
    } else if (*h != *f.xxh3) {
      r->problems.push_back(
          fmt::format("{}: XXH3 {} differs from {}'s {}: the file changed after "
                      "it was written; stage it again (dssync)",
                      path, HexU64(*h), listing_.commit_point, HexU64(*f.xxh3)));
    }
  }

  std::shared_ptr<Storage> storage_;
  Format format_;
  SubsetView view_;
  DatasetFiles listing_;                 // the whole dataset's
  std::unique_ptr<LayoutReader> inner_;  // null when no shard is present
  std::vector<ShardRange> ranges_;       // the present shards, in this view's numbers
  std::vector<uint64_t> map_;            // this view's sample k is the inner's map_[k]
};

bool HasSubsetView(const std::string& dir) {
  auto at = OpenStorage(dir);
  return at.ok() && at->storage->Stat(ViewPath(at->path), /*follow=*/true).ok();
}

Result<std::optional<SubsetView>> LoadSubsetView(const std::string& dir) {
  DS_ASSIGN_OR_RETURN(StorageRef at, OpenStorage(dir));
  return LoadSubsetView(at);
}

Result<std::optional<SubsetView>> LoadSubsetView(const StorageRef& at) {
  const std::string& dir = at.path;
  auto text = ReadAll(*at.storage, ViewPath(dir));
  if (!text.ok()) {
    if (text.status().err() == ENOENT || text.status().code() == Code::kNotFound) {
      return std::optional<SubsetView>();
    }
    return text.status();
  }
  json j = json::parse(*text, nullptr, false);
  if (j.is_discarded() || !j.is_object()) return Malformed(dir, "not a JSON object");
  if (!j.contains("dspack_subset") || j["dspack_subset"] != kSubsetViewVersion) {
    return Malformed(dir, fmt::format("not a version {} subset view", kSubsetViewVersion));
  }
  SubsetView v;
  if (!j.contains("shards") || !j["shards"].is_array()) return Malformed(dir, "no shard list");
  for (const auto& s : j["shards"]) {
    if (!s.is_string()) return Malformed(dir, "a shard name that is not a string");
    v.shards.push_back(s.get<std::string>());
  }
  for (auto [key, field] : {std::pair{"of_shards", &v.of_shards}, {"of_samples", &v.of_samples}}) {
    if (!j.contains(key) || !j[key].is_number_unsigned()) {
      return Malformed(dir, fmt::format("no '{}' count", key));
    }
    *field = j[key].get<uint64_t>();
  }
  if (j.contains("reason") && j["reason"].is_string()) v.reason = j["reason"].get<std::string>();
  return std::optional<SubsetView>(std::move(v));
}

DatasetFiles FilterToView(DatasetFiles files, const SubsetView& view) {
  std::set<std::string> present(view.shards.begin(), view.shards.end());
  std::erase_if(files.shards, [&](const DatasetFile& f) { return present.count(f.name) == 0; });
  files.metadata.push_back({std::string(kSubsetViewName), 0, 0, 0, std::nullopt});
  return files;
}

Result<std::unique_ptr<LayoutReader>> OpenSubset(const StorageRef& at, Format f,
                                                 const SubsetView& view) {
  const std::string& dir = at.path;
  DS_ASSIGN_OR_RETURN(DatasetFiles listing, FullListing(at, f));
  std::set<std::string> present;
  for (const auto& name : view.shards) {
    auto it = std::find_if(listing.shards.begin(), listing.shards.end(),
                           [&](const DatasetFile& d) { return d.name == name; });
    if (it == listing.shards.end()) {
      return Malformed(dir, fmt::format("names shard '{}', which {} does not list",
                                        EscapeBytes(name), listing.commit_point));
    }
    if (!at.storage->Stat(dir + "/" + name, /*follow=*/true).ok()) {
      return Status(Code::kCorruption,
                    fmt::format("{}/{}: missing, though the subset view ({}) lists it; stage it "
                                "again (dssync)",
                                dir, name, kSubsetViewName));
    }
    present.insert(name);
  }
  std::unique_ptr<LayoutReader> inner;
  std::vector<ShardRange> ranges;
  if (!present.empty()) {
    DS_ASSIGN_OR_RETURN(inner, LayoutFor(f).open(at, &present));
    DS_ASSIGN_OR_RETURN(auto all, inner->ShardRanges());
    for (auto& r : all) {
      if (present.count(r.file)) ranges.push_back(std::move(r));
    }
  }
  return std::unique_ptr<LayoutReader>(std::make_unique<SubsetReader>(
      at, f, view, std::move(listing), std::move(inner), std::move(ranges)));
}

Status RecordStagedShards(const std::string& src, const std::string& dst,
                          std::span<const std::string> staged, std::string_view reason) {
  DS_ASSIGN_OR_RETURN(auto files, ListDatasetFiles(src));
  if (!files) return Status::Ok();
  std::set<std::string> mine(staged.begin(), staged.end());
  SubsetView v;
  for (const auto& s : files->shards) {
    if (mine.count(s.name)) v.shards.push_back(s.name);
  }
  if (v.shards.size() == files->shards.size()) {
    DS_ASSIGN_OR_RETURN(auto src_view, LoadSubsetView(src));
    if (src_view) return Status::Ok();
    std::string path = ViewPath(dst);
    if (::unlink(path.c_str()) != 0 && errno != ENOENT) return Status::FromErrno(errno, path);
    return Status::Ok();
  }
  // Counts of the whole dataset: a source that is itself a view passes its own on.
  DS_ASSIGN_OR_RETURN(auto src_view, LoadSubsetView(src));
  if (src_view) {
    v.of_shards = src_view->of_shards;
    v.of_samples = src_view->of_samples;
  } else {
    v.of_shards = files->shards.size();
    for (const auto& s : files->shards) v.of_samples += s.samples;
  }
  v.reason = std::string(reason);
  json j = {{"dspack_subset", kSubsetViewVersion},
            {"shards", v.shards},
            {"of_shards", v.of_shards},
            {"of_samples", v.of_samples},
            {"reason", v.reason}};
  return WriteFileAtomic(ViewPath(dst), j.dump(1) + "\n");
}

}  // namespace ds
