#include "formats/layout.h"

#include <dirent.h>
#include <fmt/format.h>
#include <sys/stat.h>

#include "formats/layout_meta.h"
#include "formats/lmdb_layout.h"
#include "formats/native_dataset.h"
#include "formats/native_verify.h"
#include "formats/recordio.h"
#include "formats/tfrecord.h"
#include "formats/wds.h"
#include "src/human.h"

namespace ds {

using nlohmann::json;

std::string_view FormatName(Format f) {
  switch (f) {
    case Format::kNative:
      return "native";
    case Format::kWds:
      return "wds";
    case Format::kTfrecord:
      return "tfrecord";
    case Format::kRecordio:
      return "recordio";
    case Format::kLmdb:
      return "lmdb";
  }
  return "?";
}

Result<Format> ParseFormat(std::string_view name) {
  for (Format f :
       {Format::kNative, Format::kWds, Format::kTfrecord, Format::kRecordio, Format::kLmdb}) {
    if (name == FormatName(f)) return f;
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

Result<uint64_t> LayoutWriter::ResumeRun(const json&) {
  return Status(Code::kInvalidArgument, "--resume works for --format native only");
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

namespace {

// A native dataset through the common interface.
class NativeReader : public LayoutReader {
 public:
  Status Load(const std::string& path) {
    path_ = path;
    DS_ASSIGN_OR_RETURN(ds_, native::Dataset::Open(path));
    label_field_ = ds_->manifest().label_field;
    if (!label_field_.empty()) {
      DS_ASSIGN_OR_RETURN(classes_, ds_->Classes());
    }
    return Status::Ok();
  }
  Format format() const override { return Format::kNative; }
  uint64_t size() const override { return ds_->size(); }
  Result<Sample> Get(uint64_t i) const override { return ds_->Get(i); }
  Result<SampleHead> Head(uint64_t i) const override {
    DS_ASSIGN_OR_RETURN(native::RecordHead h, ds_->Head(i));
    return SampleHead{std::move(h.key), std::move(h.fields)};
  }
  Result<SampleLocation> Locate(uint64_t i) const override {
    DS_ASSIGN_OR_RETURN(native::GlobalEntry e, ds_->Locate(i));
    return SampleLocation{ds_->manifest().shards[e.shard].name, e.offset};
  }
  Result<std::optional<uint64_t>> Find(std::string_view key) const override {
    return ds_->Find(key);
  }
  std::vector<std::string> DataFiles() const override {
    std::vector<std::string> v;
    for (uint32_t s = 0; s < ds_->manifest().shards.size(); s++) v.push_back(ds_->ShardPath(s));
    v.push_back(path_ + "/" + native::kIndexName);
    return v;
  }
  json Info() const override {
    const auto& m = ds_->manifest();
    return {
        {"path", path_}, {"format", "native"}, {"samples", m.samples}, {"shards", m.shards.size()}};
  }
  Status StreamPayload(uint64_t i,
                       const std::function<Status(size_t, std::string_view)>& fn) const override {
    DS_ASSIGN_OR_RETURN(native::RecordHead h, ds_->Head(i));
    return ds_->StreamPayload(i, h, fn);
  }
  Status Verify(LayoutVerifyReport* r, const LayoutProgress& progress) const override {
    native::VerifyReport v;
    DS_RETURN_IF_ERROR(native::VerifyDataset(path_, &v, progress));
    *r = {v.shards, v.records, v.bytes, std::move(v.problems)};
    return Status::Ok();
  }
  const native::Dataset& dataset() const { return *ds_; }

 private:
  std::unique_ptr<native::Dataset> ds_;
};

bool EndsWith(std::string_view s, std::string_view suf) {
  return s.size() >= suf.size() && s.substr(s.size() - suf.size()) == suf;
}

// A directory whose files are all shards and sidecars of one layout (foreign WebDataset,
// TFRecord or RecordIO shards: *.tar, *.tfrecord, *.rec with their .idx/.lst).
std::optional<Format> DetectShardDir(const std::string& dir) {
  DIR* d = ::opendir(dir.c_str());
  if (!d) return std::nullopt;
  bool tfrecord = false, rec = false, tar = false, other = false;
  while (dirent* e = ::readdir(d)) {
    std::string n = e->d_name;
    if (n == "." || n == "..") continue;
    if (EndsWith(n, ".tfrecord") || EndsWith(n, ".tfrec")) {
      tfrecord = true;
    } else if (EndsWith(n, ".rec")) {
      rec = true;
    } else if (EndsWith(n, ".tar")) {
      tar = true;
    } else if (!EndsWith(n, ".idx") && !EndsWith(n, ".lst") && n != "classes.txt") {
      other = true;
    }
  }
  ::closedir(d);
  if (other || tfrecord + rec + tar != 1) return std::nullopt;
  return tfrecord ? Format::kTfrecord : rec ? Format::kRecordio : Format::kWds;
}

}  // namespace

std::optional<Format> DetectLayout(const std::string& path) {
  struct stat st;
  if (::stat(path.c_str(), &st) != 0) return std::nullopt;
  if (S_ISDIR(st.st_mode)) {
    auto exists = [&](const char* name) {
      return ::access((path + "/" + name).c_str(), F_OK) == 0;
    };
    if (exists(native::kManifestName)) return Format::kNative;
    if (exists(kLayoutMetaName)) {
      auto m = LayoutMeta::Load(path);
      return m.ok() ? std::optional<Format>(m->format) : std::optional<Format>(Format::kWds);
    }
    if (exists(lmdb::kDataName)) return Format::kLmdb;
    return DetectShardDir(path);
  }
  if (!S_ISREG(st.st_mode)) return std::nullopt;
  if (EndsWith(path, ".mdb")) return Format::kLmdb;
  if (EndsWith(path, ".tfrecord") || EndsWith(path, ".tfrec")) return Format::kTfrecord;
  if (EndsWith(path, ".rec")) return Format::kRecordio;
  if (EndsWith(path, ".tar")) return Format::kWds;
  return std::nullopt;
}

Result<std::unique_ptr<LayoutReader>> OpenLayout(const std::string& path) {
  auto f = DetectLayout(path);
  if (!f) {
    struct stat st;
    if (::stat(path.c_str(), &st) != 0) return Status::FromErrno(errno, path, Code::kBadInput);
    return Status(Code::kBadInput,
                  fmt::format("{}: not a dataset dspack reads (native, lmdb, wds, tfrecord or "
                              "recordio); convert it first: dspack convert {} OUT",
                              path, path));
  }
  switch (*f) {
    case Format::kNative: {
      auto r = std::make_unique<NativeReader>();
      DS_RETURN_IF_ERROR(r->Load(path));
      return std::unique_ptr<LayoutReader>(std::move(r));
    }
    case Format::kWds:
      return wds::Open(path);
    case Format::kTfrecord:
      return tfrecord::Open(path);
    case Format::kRecordio:
      return recordio::Open(path);
    case Format::kLmdb:
      return lmdb::Open(path);
  }
  return Status(Code::kInternal, "unreachable");
}

Result<std::unique_ptr<LayoutWriter>> CreateLayoutWriter(Format f, const std::string& out,
                                                         const LayoutOptions& o) {
  switch (f) {
    case Format::kNative: {
      native::DatasetOptions d;
      d.shard_size = o.shard_size;
      d.align = o.align;
      d.force = o.force;
      d.resume = o.resume;
      d.creation_options = o.creation_options;
      DS_ASSIGN_OR_RETURN(auto w, native::DatasetWriter::Create(out, d));
      return std::unique_ptr<LayoutWriter>(std::move(w));
    }
    case Format::kWds:
      return wds::CreateWriter(out, o);
    case Format::kTfrecord:
      return tfrecord::CreateWriter(out, o);
    case Format::kRecordio:
      return recordio::CreateWriter(out, o);
    case Format::kLmdb:
      return lmdb::CreateWriter(out, o);
  }
  return Status(Code::kInternal, "unreachable");
}

}  // namespace ds
