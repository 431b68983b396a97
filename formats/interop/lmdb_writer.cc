// The LMDB writer (lmdb_layout.h): data.mdb.tmp with MDB_APPEND in batched transactions,
// the map doubled on MDB_MAP_FULL, renamed at commit.
#include <fcntl.h>
#include <fmt/format.h>
#include <lmdb.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "formats/interop/layout_meta.h"
#include "formats/interop/lmdb_common.h"
#include "formats/interop/lmdb_layout.h"
#include "formats/interop/lmdb_values.h"
#include "formats/interop/sample_crc.h"
#include "src/checksum.h"
#include "src/endian.h"
#include "src/fd.h"
#include "src/human.h"

namespace ds::lmdb {

using nlohmann::json;

namespace {

// A write error of the LMDB writer. liblmdb reports a short write (the file system filled up
// mid-write) as EIO ("short write, filesystem full?" in mdb_page_flush); when the output's file
// system has less than kFullBelow free, it is reported as ENOSPC, as the other layouts do.
Status MdbWriteError(int rc, const std::string& what, const std::string& dir) {
  constexpr uint64_t kFullBelow = 1 << 20;
  struct statvfs vfs;
  if (rc == ENOSPC || (rc == EIO && ::statvfs(dir.c_str(), &vfs) == 0 &&
                       static_cast<uint64_t>(vfs.f_bavail) * vfs.f_frsize < kFullBelow)) {
    return Status(Code::kNoSpace, fmt::format("{}: {}", what, std::strerror(ENOSPC)), ENOSPC);
  }
  return MdbError(rc, what);
}

class Writer : public LayoutWriter {
 public:
  static Result<std::unique_ptr<LayoutWriter>> Create(const std::string& out,
                                                      const LmdbOptions& o) {
    DS_RETURN_IF_ERROR(o.Validate());
    DS_ASSIGN_OR_RETURN(StorageRef ref, OutputStorage(out, o));
    DS_RETURN_IF_ERROR(
        RequireMmap(*ref.storage, out, "LMDB needs a local file: liblmdb writes a map"));
    DS_ASSIGN_OR_RETURN(OutDirState dir,
                        PrepareInteropDir(*ref.storage, ref.path, Format::kLmdb, o));
    std::unique_ptr<Writer> w(new Writer(dir.dir, o, dir.created));
    w->out_dir_ = std::move(dir);
    DS_RETURN_IF_ERROR(w->OpenEnv());
    return std::unique_ptr<LayoutWriter>(std::move(w));
  }

  ~Writer() override {
    if (!done_) Abandon();
  }

  Status BeginSample(std::string_view key, std::span<const FieldInfo> fields) override {
    DS_RETURN_IF_ERROR(status_);
    sample_ = Sample{std::string(key), {}};
    sizes_.clear();
    if (image_layout()) DS_RETURN_IF_ERROR(CheckImageLabel(key, fields));
    for (const auto& f : fields) {
      if (layout_ == LmdbLayout::kField && f.name == "__key__") {
        return Status(Code::kBadInput,
                      fmt::format("key '{}': a field named __key__ collides with the key's own "
                                  "LMDB entry; rename it or use `lmdb_layout=sample`",
                                  EscapeBytes(key)));
      }
      if (layout_ == LmdbLayout::kField &&
          11 + f.name.size() > static_cast<size_t>(mdb_env_get_maxkeysize(env_))) {
        return Status(
            Code::kBadInput,
            fmt::format("key '{}' field '{}': too long for an LMDB key ({} bytes at "
                        "most); use `lmdb_layout=sample`",
                        EscapeBytes(key), EscapeBytes(f.name), mdb_env_get_maxkeysize(env_)));
      }
      sample_.fields.push_back({f.name, std::string()});
      sizes_.push_back(f.size);
    }
    field_ = 0;
    return Status::Ok();
  }

  Status AppendData(std::string_view chunk) override {
    while (!chunk.empty()) {
      while (field_ < sizes_.size() && sample_.fields[field_].data.size() == sizes_[field_]) {
        field_++;
      }
      if (field_ == sizes_.size()) {
        return Status(Code::kInternal, "AppendData: more bytes than the fields announced");
      }
      size_t n =
          std::min<uint64_t>(chunk.size(), sizes_[field_] - sample_.fields[field_].data.size());
      sample_.fields[field_].data.append(chunk.substr(0, n));
      chunk.remove_prefix(n);
    }
    return Status::Ok();
  }

  Status EndSample() override {
    DS_RETURN_IF_ERROR(status_);
    std::string prefix = SampleKey(samples_);
    uint64_t payload = sample_.payload_bytes();
    uint32_t crc = SampleCrc(sample_);
    if (image_layout()) {
      DS_RETURN_IF_ERROR(PutImageLabel(prefix, &crc));
    } else if (layout_ == LmdbLayout::kField) {
      std::vector<std::pair<std::string, std::string>> kv;
      kv.emplace_back(prefix + ".__key__", std::move(sample_.key));
      for (auto& f : sample_.fields) kv.emplace_back(prefix + "." + f.name, std::move(f.data));
      std::sort(kv.begin(), kv.end());
      for (size_t k = 1; k < kv.size(); k++) {
        if (kv[k].first == kv[k - 1].first) {
          return Status(Code::kBadInput,
                        fmt::format("key '{}': field '{}' twice", EscapeBytes(kv[0].second),
                                    EscapeBytes(kv[k].first.substr(11))));
        }
      }
      for (auto& p : kv) Put(std::move(p.first), std::move(p.second));
    } else {
      std::string v;
      PutLE32(&v, static_cast<uint32_t>(sample_.key.size()));
      v += sample_.key;
      PutLE32(&v, static_cast<uint32_t>(sample_.fields.size()));
      for (const auto& f : sample_.fields) {
        PutLE32(&v, static_cast<uint32_t>(f.name.size()));
        v += f.name;
        PutLE64(&v, f.data.size());
      }
      for (const auto& f : sample_.fields) v += f.data;
      Put(std::move(prefix), std::move(v));
    }
    crcs_.push_back(crc);
    samples_++;
    batch_samples_++;
    payload_ += payload;
    if (batch_bytes_ >= kBatchBytes || batch_samples_ >= kBatchSamples) {
      return Fail(Commit());
    }
    return Status::Ok();
  }

  void CancelSample() override { sample_ = Sample(); }
  void AddSkipped(std::string_view path, std::string_view error) override {
    meta_.skipped.push_back({{"path", std::string(path)}, {"error", std::string(error)}});
  }
  void SetClasses(std::vector<std::string> names, std::string label_field) override {
    classes_ = std::move(names);
    meta_.label_field = std::move(label_field);
  }
  void SetSchema(const SchemaRecord& record) override {
    schema_ = record;
    if (record.kind == SchemaKind::kImagenet && !layout_given_) layout_ = LmdbLayout::kPickle;
  }
  uint64_t samples() const override { return samples_; }
  uint64_t payload_bytes() const override { return payload_; }

  Status Finish(LayoutSummary* summary) override {
    DS_RETURN_IF_ERROR(status_);
    json m = {{"format", "dspack-lmdb"},
              {"version", 1},
              {"layout", LmdbLayoutName(layout_)},
              {"samples", samples_},
              {"label_field", meta_.label_field}};
    if (schema_.kind != SchemaKind::kRaw) m["schema"] = meta_.extra["schema"] = schema_.ToJson();
    if (layout_ == LmdbLayout::kPickle) {  // the recipes' index: every key, and the count
      std::vector<std::string> keys;
      keys.reserve(samples_);
      for (uint64_t i = 0; i < samples_; i++) keys.push_back(SampleKey(i));
      Put("__keys__", PickleBytesList(keys));
      Put("__len__", PickleInt(static_cast<int64_t>(samples_)));
    } else {
      Put("__len__", std::to_string(samples_));
    }
    Put("__meta__", m.dump());
    DS_RETURN_IF_ERROR(Fail(Commit()));
    int rc = mdb_env_sync(env_, 1);
    mdb_env_close(env_);
    env_ = nullptr;
    if (rc != 0) return Fail(MdbWriteError(rc, tmp_, out_));
    std::string final_path = out_ + "/" + kDataName;
    native::FileMeta fm;
    fm.name = kDataName;
    fm.samples = samples_;
    DS_RETURN_IF_ERROR(Fail(HashFile(tmp_, &fm.size, &fm.xxh3)));
    if (::rename(tmp_.c_str(), final_path.c_str()) != 0) {
      return Fail(Status::FromErrno(errno, "rename " + tmp_));
    }
    created_.push_back(final_path);
    meta_.shards = {fm};
    meta_.samples = samples_;
    meta_.payload_bytes = payload_;
    meta_.extra["lmdb_layout"] = LmdbLayoutName(layout_);
    DS_RETURN_IF_ERROR(
        Fail(CommitLayoutMeta(*LocalStorage(), out_, classes_, crcs_, &meta_, &created_)));
    // A staged replace is swapped in now; then readers may open OUT.
    DS_RETURN_IF_ERROR(Fail(PublishOutput(*LocalStorage(), &out_dir_)));
    out_ = out_dir_.dir;
    done_ = true;
    if (summary) {
      *summary = {samples_, 1, payload_, fm.size, {}};
      if (!out_dir_.lock_warning.empty()) summary->warnings.push_back(out_dir_.lock_warning);
    }
    return Status::Ok();
  }

  void Abandon() override {
    done_ = true;
    if (env_) mdb_env_close(env_);
    env_ = nullptr;
    ::unlink(tmp_.c_str());
    for (auto it = created_.rbegin(); it != created_.rend(); ++it) ::unlink(it->c_str());
    if (created_dir_) ::rmdir(out_.c_str());
  }

 private:
  bool image_layout() const {
    return layout_ == LmdbLayout::kPickle || layout_ == LmdbLayout::kCaffe;
  }

  // pickle and caffe store (image, label): one field besides the label, which must be set.
  Status CheckImageLabel(std::string_view key, std::span<const FieldInfo> fields) const {
    bool label = std::any_of(fields.begin(), fields.end(),
                             [&](const FieldInfo& f) { return f.name == meta_.label_field; });
    if (fields.size() != 2 || meta_.label_field.empty() || !label) {
      return Status(Code::kBadInput,
                    fmt::format("key '{}': LMDB's {} layout stores (image, label): one image field "
                                "and a label (`label_from_dir`); this sample has {} fields",
                                EscapeBytes(key), LmdbLayoutName(layout_), fields.size()));
    }
    if (layout_ == LmdbLayout::kCaffe &&
        11 + key.size() > static_cast<size_t>(mdb_env_get_maxkeysize(env_))) {
      return Status(Code::kBadInput,
                    fmt::format("key '{}': too long for Caffe's LMDB key (index_key, {} bytes at "
                                "most)",
                                EscapeBytes(key), mdb_env_get_maxkeysize(env_) - 11));
    }
    return Status::Ok();
  }

  // The sample as (image, label): a pickle under PREFIX plus PREFIX.__key__, or Caffe's Datum
  // under PREFIX_KEY. *crc is the CRC of the sample as the reader gives it back (image, label).
  Status PutImageLabel(const std::string& prefix, uint32_t* crc) {
    size_t l = sample_.fields[0].name == meta_.label_field ? 0 : 1;
    const std::string& text = sample_.fields[l].data;
    std::optional<int64_t> parsed = ParseInt64(text);
    int64_t label = parsed.value_or(0);
    bool fits = layout_ != LmdbLayout::kCaffe || (label >= INT32_MIN && label <= INT32_MAX);
    if (!parsed || !fits) {
      return Status(
          Code::kBadInput,
          fmt::format("key '{}': label '{}' is not an integer{}", EscapeBytes(sample_.key),
                      EscapeBytes(text.substr(0, 40)),
                      layout_ == LmdbLayout::kCaffe ? " of 32 bits (Caffe's Datum)" : ""));
    }
    std::string image = std::move(sample_.fields[1 - l].data);
    *crc = SampleCrc(ImageLabelSample(sample_.key, image, label));
    if (layout_ == LmdbLayout::kPickle) {
      Put(prefix, PickleImageLabel(image, label));
      Put(prefix + ".__key__", sample_.key);
    } else {
      Put(prefix + "_" + sample_.key, EncodeDatum(image, static_cast<int32_t>(label)));
    }
    return Status::Ok();
  }

  Writer(std::string out, const LmdbOptions& o, bool created)
      : out_(std::move(out)),
        created_dir_(created),
        layout_(o.layout.value_or(LmdbLayout::kField)),
        layout_given_(o.layout.has_value()),
        map_size_(o.map_size) {
    tmp_ = out_ + "/" + kDataName + ".tmp";
    meta_.format = Format::kLmdb;
    meta_.creation_options = o.creation_options;
  }

  Status OpenEnv() {
    ::unlink(tmp_.c_str());
    int rc = mdb_env_create(&env_);
    if (rc == 0) rc = mdb_env_set_mapsize(env_, map_size_);
    if (rc == 0)
      rc = mdb_env_open(env_, tmp_.c_str(), MDB_NOSUBDIR | MDB_NOLOCK | MDB_NOSYNC, 0644);
    return rc == 0 ? Status::Ok() : MdbError(rc, tmp_);
  }

  void Put(std::string k, std::string v) {
    batch_bytes_ += k.size() + v.size();
    batch_.emplace_back(std::move(k), std::move(v));
  }

  // Writes the batch in one transaction; on MDB_MAP_FULL doubles the map and retries.
  Status Commit() {
    for (;;) {
      MDB_txn* txn = nullptr;
      int rc = mdb_txn_begin(env_, nullptr, 0, &txn);
      if (rc != 0) return MdbError(rc, tmp_);
      MDB_dbi dbi;
      rc = mdb_dbi_open(txn, nullptr, 0, &dbi);
      for (size_t k = 0; rc == 0 && k < batch_.size(); k++) {
        MDB_val key = Val(batch_[k].first), val = Val(batch_[k].second);
        rc = mdb_put(txn, dbi, &key, &val, MDB_APPEND);
      }
      if (rc == 0) {
        rc = mdb_txn_commit(txn);
      } else {
        mdb_txn_abort(txn);
      }
      if (rc == MDB_MAP_FULL) {
        map_size_ *= 2;
        rc = mdb_env_set_mapsize(env_, map_size_);
        if (rc != 0) return MdbError(rc, tmp_);
        continue;
      }
      if (rc != 0) {
        return MdbWriteError(rc, fmt::format("{} (writing sample {})", tmp_, samples_), out_);
      }
      batch_.clear();
      batch_bytes_ = 0;
      batch_samples_ = 0;
      return Status::Ok();
    }
  }

  Status Fail(Status s) {
    s = ExplainNoSpace(out_dir_, std::move(s));
    if (!s.ok() && status_.ok()) status_ = s;
    return s;
  }

  std::string out_, tmp_;
  bool created_dir_;
  OutDirState out_dir_;  // OUT's lock and a staged replace (formats/out_dir.h): PublishOutput
  LmdbLayout layout_;
  bool layout_given_;  // else field, or pickle once the imagenet schema is set
  MDB_env* env_ = nullptr;
  uint64_t map_size_;
  std::vector<std::pair<std::string, std::string>> batch_;
  uint64_t batch_bytes_ = 0, batch_samples_ = 0;
  Sample sample_;
  std::vector<uint64_t> sizes_;
  size_t field_ = 0;
  uint64_t samples_ = 0, payload_ = 0;
  LayoutMeta meta_;
  std::vector<std::string> classes_;
  SchemaRecord schema_;
  std::vector<uint32_t> crcs_;  // per sample, for dspack.crc
  std::vector<std::string> created_;
  Status status_;
  bool done_ = false;
};

}  // namespace

Result<std::unique_ptr<LayoutWriter>> CreateWriter(const std::string& out,
                                                   const WriterOptions& options) {
  return Writer::Create(out, std::get<LmdbOptions>(options));
}

}  // namespace ds::lmdb
