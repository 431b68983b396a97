#include "formats/interop/lmdb_layout.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <lmdb.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <mutex>

#include "formats/interop/layout_meta.h"
#include "formats/interop/lmdb_check.h"
#include "formats/interop/lmdb_values.h"
#include "formats/interop/sample_crc.h"
#include "src/checksum.h"
#include "src/endian.h"
#include "src/fd.h"
#include "src/human.h"

namespace ds::lmdb {

using nlohmann::json;

namespace {

Status MdbError(int rc, const std::string& what) {
  Code code = rc == MDB_CORRUPTED || rc == MDB_INVALID || rc == MDB_VERSION_MISMATCH ||
                      rc == MDB_PAGE_NOTFOUND
                  ? Code::kCorruption
                  : Code::kIOError;
  return Status(code, fmt::format("{}: {}", what, mdb_strerror(rc)));
}

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

std::string SampleKey(uint64_t i) { return fmt::format("{:010d}", i); }

// A pickle or caffe sample as readers see it (and as its CRC covers it): image, then label.
Sample ImageLabelSample(std::string key, std::string_view image, int64_t label) {
  return {std::move(key), {{kLmdbImage, std::string(image)}, {kLmdbLabel, std::to_string(label)}}};
}

MDB_val Val(std::string_view s) { return {s.size(), const_cast<char*>(s.data())}; }
std::string_view View(const MDB_val& v) { return {static_cast<const char*>(v.mv_data), v.mv_size}; }

// Size and XXH3-64 of a whole file (dspack.json records them for data.mdb).
Status HashFile(const std::string& path, uint64_t* size, uint64_t* hash) {
  DS_ASSIGN_OR_RETURN(OwnedFd fd, OpenFile(path, O_RDONLY));
  Xxh3Hasher h;
  std::string buf(4 << 20, '\0');
  *size = 0;
  for (;;) {
    DS_ASSIGN_OR_RETURN(size_t n, ReadUpTo(fd.get(), buf.data(), buf.size(), path));
    if (n == 0) break;
    h.Update(buf.data(), n);
    *size += n;
  }
  *hash = h.Digest();
  return Status::Ok();
}

class Writer : public LayoutWriter {
 public:
  static Result<std::unique_ptr<LayoutWriter>> Create(const std::string& out,
                                                      const LmdbOptions& o) {
    DS_RETURN_IF_ERROR(o.Validate());
    DS_ASSIGN_OR_RETURN(OutDirState dir, PrepareInteropDir(out, Format::kLmdb, o.existing));
    std::unique_ptr<Writer> w(new Writer(out, o, dir.created));
    w->out_lock_ = std::move(dir.lock);
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
    DS_RETURN_IF_ERROR(Fail(CommitLayoutMeta(out_, classes_, crcs_, &meta_, &created_)));
    done_ = true;
    out_lock_ = OwnedFd();  // committed: readers may open it now
    if (summary) *summary = {samples_, 1, payload_, fm.size};
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
    if (!s.ok() && status_.ok()) status_ = s;
    return s;
  }

  std::string out_, tmp_;
  bool created_dir_;
  OwnedFd out_lock_;  // OUT's lock (formats/out_dir.h), released at commit or Abandon
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

// Another process has the environment open when it holds a lock on the lock file's first byte
// (every LMDB process does, shared, for as long as it has the environment open).
bool OpenElsewhere(const std::string& lock_path) {
  int fd = ::open(lock_path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  struct flock fl = {};
  fl.l_type = F_WRLCK;
  fl.l_whence = SEEK_SET;
  fl.l_start = 0;
  fl.l_len = 1;
  bool busy = ::fcntl(fd, F_GETLK, &fl) == 0 && fl.l_type != F_UNLCK;
  ::close(fd);
  return busy;
}

class Reader : public LayoutReader {
 public:
  ~Reader() override {
    if (env_ && pid_ == ::getpid()) mdb_env_close(env_);
  }
  std::optional<Format> format() const override { return Format::kLmdb; }

  Status Load(const std::string& path) {
    path_ = path;
    struct stat st;
    if (::stat(path.c_str(), &st) != 0) return Status::FromErrno(errno, path, Code::kBadInput);
    if (S_ISDIR(st.st_mode)) {
      dir_ = path;
      file_ = path + "/" + kDataName;
      lock_ = path + "/lock.mdb";
    } else {
      file_ = path;
      auto slash = path.rfind('/');
      dir_ = slash == std::string::npos ? "." : path.substr(0, slash);
      lock_ = path + "-lock";
    }
    if (::access(file_.c_str(), F_OK) != 0) {
      return Status(Code::kBadInput,
                    fmt::format("{}: no LMDB data file (data.mdb); if a convert is writing it, "
                                "wait until it finishes",
                                path));
    }
    auto meta = LayoutMeta::Load(dir_);
    if (meta.ok() && meta->format == Format::kLmdb) {
      meta_ = std::move(meta).value();
    } else if (!meta.ok() && meta.status().code() != Code::kNotFound) {
      return meta.status();
    }
    if (meta_) {
      DS_ASSIGN_OR_RETURN(crcs_, SampleCrcTable::Load(dir_, *meta_));
    }
    DS_ASSIGN_OR_RETURN(classes_, LoadClasses(dir_));
    // liblmdb trusts the file: its meta pages, then the tree it will follow, are checked first.
    DS_RETURN_IF_ERROR(CheckLmdbMetas(file_));
    DS_RETURN_IF_ERROR(OpenEnv());
    DS_RETURN_IF_ERROR(CheckTree());
    return ReadMeta();
  }

  uint64_t size() const override { return samples_; }

  Result<Sample> Get(uint64_t i) const override {
    DS_ASSIGN_OR_RETURN(MDB_env * env, Env());
    MDB_txn* txn = nullptr;
    int rc = mdb_txn_begin(env, nullptr, MDB_RDONLY, &txn);
    if (rc != 0) return MdbError(rc, file_);
    auto r = GetChecked(txn, i);
    mdb_txn_abort(txn);
    return r;
  }

  Result<SampleLocation> Locate(uint64_t i) const override { return SampleLocation{kDataName, i}; }
  std::vector<std::string> DataFiles() const override { return {file_}; }

  json Info() const override {
    return {{"path", path_},
            {"format", "lmdb"},
            {"samples", samples_},
            {"layout", layout_},
            {"snapshot", locked_ ? "LMDB lock table (another process has it open)"
                                 : "MDB_NOLOCK (no other process has it open)"},
            {"labels", label_field_.empty() ? json(nullptr) : json(classes_.size())},
            {"schema", SchemaName(schema_.kind)},
            {"metadata", meta_ ? kLayoutMetaName : "none (foreign LMDB)"},
            {"reads", ReadsCheckedText(crcs_.has_value())}};
  }

  Status Verify(LayoutVerifyReport* r, const LayoutProgress& progress) const override {
    r->shards = 1;
    // Another process has it open (and may be writing): the file legitimately differs from what
    // dspack wrote, so only the samples are checked, in the consistent snapshot we read.
    if (meta_ && !meta_->shards.empty() && !locked_) {
      uint64_t size = 0, hash = 0;
      Status s = HashFile(file_, &size, &hash);
      if (!s.ok()) {
        r->problems.push_back(s.message());
      } else if (size != meta_->shards[0].size || hash != meta_->shards[0].xxh3) {
        r->problems.push_back(fmt::format(
            "{}: {} bytes, XXH3 {}; dspack.json says {} bytes, {}: "
            "the file changed after it was written",
            file_, size, HexU64(hash), meta_->shards[0].size, HexU64(meta_->shards[0].xxh3)));
      }
    }
    if (meta_) VerifyMetaFiles(dir_, *meta_, &r->problems);
    return LayoutReader::Verify(r, progress);
  }

 private:
  Status OpenEnv() const {
    locked_ = OpenElsewhere(lock_);
    unsigned flags = MDB_RDONLY | MDB_NORDAHEAD | MDB_NOTLS;
    if (!S_ISDIR(Mode(path_))) flags |= MDB_NOSUBDIR;
    if (!locked_) flags |= MDB_NOLOCK;
    MDB_env* env = nullptr;
    int rc = mdb_env_create(&env);
    if (rc == 0) rc = mdb_env_set_maxreaders(env, 1024);
    // No writer: map exactly the file (checked to hold every page the metas use), not the map
    // size a meta page claims, which one flipped bit can make unmappable. With a writer, its
    // map size, as the file may grow.
    struct stat st;
    if (rc == 0 && !locked_ && ::stat(file_.c_str(), &st) == 0) {
      rc = mdb_env_set_mapsize(env, static_cast<size_t>(st.st_size));
    }
    if (rc == 0)
      rc = mdb_env_open(env, S_ISDIR(Mode(path_)) ? dir_.c_str() : file_.c_str(), flags, 0644);
    if (rc != 0) {
      if (env) mdb_env_close(env);
      Status s = MdbError(rc, file_);
      if (s.code() == Code::kIOError && rc == MDB_INVALID)
        s = Status(Code::kCorruption, s.message());
      return Status(s.code(), s.message() + " (not an LMDB environment, or damaged)");
    }
    // The main DB's handle must be opened in every environment (it sets the key comparator);
    // a handle from another environment (the parent's, before fork) would crash LMDB.
    MDB_txn* txn = nullptr;
    rc = mdb_txn_begin(env, nullptr, MDB_RDONLY, &txn);
    if (rc == 0) rc = mdb_dbi_open(txn, nullptr, 0, &dbi_);
    if (txn) mdb_txn_abort(txn);
    if (rc != 0) {
      mdb_env_close(env);
      return MdbError(rc, file_);
    }
    env_ = env;
    pid_ = ::getpid();
    return Status::Ok();
  }

  // Walks the tree of the snapshot a read transaction sees, while the transaction pins it (with
  // the lock table, a writer cannot reuse its pages meanwhile). kNotFound from the walk: a
  // writer committed twice between the snapshot and the walk's read of the meta pages.
  Status CheckTree() {
    for (int attempt = 0;; attempt++) {
      MDB_txn* txn = nullptr;
      int rc = mdb_txn_begin(env_, nullptr, MDB_RDONLY, &txn);
      if (rc != 0) return MdbError(rc, file_);
      auto tree = CheckLmdbTree(file_, mdb_txn_id(txn));
      mdb_txn_abort(txn);
      if (tree.ok() || tree.status().code() != Code::kNotFound || attempt == 4) {
        return tree.status();
      }
    }
  }

  static mode_t Mode(const std::string& p) {
    struct stat st;
    return ::stat(p.c_str(), &st) == 0 ? st.st_mode : 0;
  }

  // The environment of this process: LMDB handles must not cross fork(), so a child reopens.
  Result<MDB_env*> Env() const {
    std::lock_guard<std::mutex> lock(env_mu_);
    if (pid_ != ::getpid()) {
      env_ = nullptr;  // the parent's handle: left alone, never closed here
      DS_RETURN_IF_ERROR(OpenEnv());
    }
    return env_;
  }

  Status ReadMeta() {
    MDB_txn* txn = nullptr;
    int rc = mdb_txn_begin(env_, nullptr, MDB_RDONLY, &txn);
    if (rc != 0) return MdbError(rc, file_);
    MDB_dbi dbi = dbi_;
    MDB_val k = Val("__meta__"), v;
    Status st;
    if (rc == 0 && mdb_get(txn, dbi, &k, &v) == 0) {
      json m = json::parse(View(v), nullptr, false);
      if (m.is_discarded() || !m.is_object() || !m.contains("samples") ||
          !m["samples"].is_number_unsigned()) {
        st = Status(Code::kCorruption, file_ + ": key __meta__ is not dspack's JSON metadata");
      } else {
        samples_ = m["samples"].get<uint64_t>();
        layout_ = m.value("layout", "field");
        label_field_ = m.value("label_field", "");
        if (m.contains("schema")) {
          auto rec = SchemaRecord::FromJson(m["schema"]);
          if (rec.ok()) {
            schema_ = std::move(rec).value();
          } else {
            st = rec.status().Prefixed(file_ + ": __meta__");
          }
        }
        if (!ParseLmdbLayout(layout_).ok()) {
          st = Status(Code::kCorruption, file_ + ": __meta__ names an unknown layout " + layout_);
        }
        MDB_val lk = Val("__len__"), lv;
        // __len__: ASCII digits, a pickled int in the pickle layout (the recipes read it).
        auto len_ok = [&] {
          if (layout_ != "pickle") return std::string(View(lv)) == std::to_string(samples_);
          auto n = UnpickleInt(View(lv));
          return n.ok() && *n == static_cast<int64_t>(samples_);
        };
        if (st.ok() && (mdb_get(txn, dbi, &lk, &lv) != 0 || !len_ok())) {
          st =
              Status(Code::kCorruption, file_ + ": __len__ disagrees with __meta__'s sample count");
        }
      }
      if (st.ok() && meta_ && samples_ != meta_->samples) {
        st = Status(Code::kCorruption,
                    fmt::format("{}: __meta__ counts {} samples, {} says {}; the LMDB is "
                                "damaged: restore or reconvert it",
                                file_, samples_, kLayoutMetaName, meta_->samples));
      }
    } else if (rc == 0 && meta_) {
      // Never an empty or foreign-looking dataset where dspack wrote one (a meta page flip can
      // make liblmdb pick an older snapshot).
      st = Status(Code::kCorruption,
                  fmt::format("{}: no __meta__ key, but {} says dspack wrote {} samples here; the "
                              "LMDB is damaged: restore or reconvert it",
                              file_, kLayoutMetaName, meta_->samples));
    } else if (rc == 0) {
      layout_ = "foreign";  // every key is a sample with one field, "value"
      MDB_cursor* c = nullptr;
      rc = mdb_cursor_open(txn, dbi, &c);
      MDB_val ck, cv;
      for (int op = MDB_FIRST;
           rc == 0 && mdb_cursor_get(c, &ck, &cv, static_cast<MDB_cursor_op>(op)) == 0;
           op = MDB_NEXT) {
        keys_.emplace_back(View(ck));
      }
      if (c) mdb_cursor_close(c);
      samples_ = keys_.size();
    }
    mdb_txn_abort(txn);
    if (rc != 0) return MdbError(rc, file_);
    return st;
  }

  // GetIn, then the sample's CRC against dspack.crc.
  Result<Sample> GetChecked(MDB_txn* txn, uint64_t i) const {
    auto s = GetIn(txn, i);
    if (s.ok() && crcs_) {
      DS_RETURN_IF_ERROR(
          crcs_->Check(i, *s,
                       fmt::format("{} (LMDB key {})", file_,
                                   layout_ == "field" ? SampleKey(i) + ".*" : SampleKey(i))));
    }
    return s;
  }

  Result<Sample> GetIn(MDB_txn* txn, uint64_t i) const {
    auto bad = [&](const std::string& why) {
      return Status(Code::kCorruption, fmt::format("{}: sample {}: {}", file_, i, why));
    };
    Sample s;
    if (layout_ == "foreign") {
      MDB_val k = Val(keys_[i]), v;
      int rc = mdb_get(txn, dbi_, &k, &v);
      if (rc != 0) return MdbError(rc, fmt::format("{}: key '{}'", file_, EscapeBytes(keys_[i])));
      s.key = keys_[i];
      s.fields.push_back({"value", std::string(View(v))});
      return s;
    }
    std::string prefix = SampleKey(i);
    if (layout_ == "pickle") {
      MDB_val k = Val(prefix), v;
      int rc = mdb_get(txn, dbi_, &k, &v);
      if (rc == MDB_NOTFOUND) return bad("key " + prefix + " is missing");
      if (rc != 0) return MdbError(rc, file_);
      auto il = UnpickleImageLabel(View(v));
      if (!il.ok()) return bad("key " + prefix + ": " + il.status().message());
      std::string key_name = prefix + ".__key__";
      MDB_val kk = Val(key_name), kv;
      rc = mdb_get(txn, dbi_, &kk, &kv);
      if (rc == MDB_NOTFOUND) return bad("key " + key_name + " is missing");
      if (rc != 0) return MdbError(rc, file_);
      return ImageLabelSample(std::string(View(kv)), il->image, il->label);
    }
    if (layout_ == "caffe") {  // PREFIX_KEY -> Datum
      MDB_cursor* c = nullptr;
      int rc = mdb_cursor_open(txn, dbi_, &c);
      if (rc != 0) return MdbError(rc, file_);
      std::string start = prefix + "_";
      MDB_val k = Val(start), v;
      rc = mdb_cursor_get(c, &k, &v, MDB_SET_RANGE);
      mdb_cursor_close(c);
      if (rc != 0 && rc != MDB_NOTFOUND) return MdbError(rc, file_);
      if (rc == MDB_NOTFOUND || View(k).substr(0, start.size()) != start) {
        return bad("no key " + start + "*");
      }
      auto il = DecodeDatum(View(v));
      if (!il.ok()) return bad("key " + std::string(View(k)) + ": " + il.status().message());
      return ImageLabelSample(std::string(View(k).substr(start.size())), il->image, il->label);
    }
    if (layout_ == "sample") {
      MDB_val k = Val(prefix), v;
      int rc = mdb_get(txn, dbi_, &k, &v);
      if (rc == MDB_NOTFOUND) return bad("key " + prefix + " is missing");
      if (rc != 0) return MdbError(rc, file_);
      std::string_view d = View(v);
      auto take = [&](uint64_t n, std::string_view* out) {
        if (n > d.size()) return false;
        *out = d.substr(0, n);
        d.remove_prefix(n);
        return true;
      };
      std::string_view part;
      if (!take(4, &part) || !take(LoadLE32(part.data()), &part)) return bad("value truncated");
      s.key.assign(part);
      if (!take(4, &part)) return bad("value truncated");
      uint32_t n = LoadLE32(part.data());
      std::vector<uint64_t> sizes;
      for (uint32_t f = 0; f < n; f++) {
        if (!take(4, &part) || !take(LoadLE32(part.data()), &part)) return bad("value truncated");
        s.fields.push_back({std::string(part), std::string()});
        if (!take(8, &part)) return bad("value truncated");
        sizes.push_back(LoadLE64(part.data()));
      }
      for (uint32_t f = 0; f < n; f++) {
        if (!take(sizes[f], &part)) return bad("value truncated (field " + s.fields[f].name + ")");
        s.fields[f].data.assign(part);
      }
      if (!d.empty()) return bad("value has trailing bytes");
      return s;
    }
    MDB_cursor* c = nullptr;
    int rc = mdb_cursor_open(txn, dbi_, &c);
    if (rc != 0) return MdbError(rc, file_);
    std::string start = prefix + ".";
    MDB_val k = Val(start), v;
    bool have_key = false;
    for (rc = mdb_cursor_get(c, &k, &v, MDB_SET_RANGE); rc == 0;
         rc = mdb_cursor_get(c, &k, &v, MDB_NEXT)) {
      std::string_view key = View(k);
      if (key.substr(0, start.size()) != start) break;
      std::string_view field = key.substr(start.size());
      if (field == "__key__") {
        s.key.assign(View(v));
        have_key = true;
      } else {
        s.fields.push_back({std::string(field), std::string(View(v))});
      }
    }
    mdb_cursor_close(c);
    if (rc != 0 && rc != MDB_NOTFOUND) return MdbError(rc, file_);
    if (!have_key) return bad("key " + prefix + ".__key__ is missing");
    return s;
  }

  std::string dir_, file_, lock_;
  std::optional<LayoutMeta> meta_;
  uint64_t samples_ = 0;
  std::string layout_ = "field";
  std::vector<std::string> keys_;       // foreign LMDB: every key, in order
  std::optional<SampleCrcTable> crcs_;  // dspack.crc when dspack.json lists it
  mutable std::mutex env_mu_;
  mutable MDB_env* env_ = nullptr;
  mutable pid_t pid_ = 0;
  mutable bool locked_ = false;
  mutable MDB_dbi dbi_ = 0;
};

}  // namespace

Result<std::unique_ptr<LayoutWriter>> CreateWriter(const std::string& out,
                                                   const WriterOptions& options) {
  return Writer::Create(out, std::get<LmdbOptions>(options));
}

Result<std::unique_ptr<LayoutReader>> Open(const std::string& path, const std::set<std::string>*) {
  auto r = std::make_unique<Reader>();
  DS_RETURN_IF_ERROR(r->Load(path));
  return std::unique_ptr<LayoutReader>(std::move(r));
}

}  // namespace ds::lmdb
