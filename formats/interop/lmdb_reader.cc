// The LMDB reader (lmdb_layout.h): checks the file before liblmdb maps it, then reads with
// MDB_RDONLY|MDB_NOLOCK|MDB_NORDAHEAD, or through the lock table while another process has it.
#include <fcntl.h>
#include <fmt/format.h>
#include <lmdb.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <mutex>

#include "formats/interop/layout_meta.h"
#include "formats/interop/lmdb_check.h"
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
            {"layout", layout_ ? std::string(LmdbLayoutName(*layout_)) : "foreign"},
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
    if (meta_) VerifyMetaFiles(dir_, *meta_, *LocalStorage(), &r->problems);
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
      auto text_or_absent = [&](const char* name) {
        return !m.contains(name) || m[name].is_string();
      };
      if (m.is_discarded() || !m.is_object() || !m.contains("samples") ||
          !m["samples"].is_number_unsigned() || !text_or_absent("layout") ||
          !text_or_absent("label_field")) {
        st = Status(Code::kCorruption, file_ + ": key __meta__ is not dspack's JSON metadata");
      } else {
        samples_ = m["samples"].get<uint64_t>();
        std::string layout_name = m.value("layout", "field");
        auto layout = ParseLmdbLayout(layout_name);
        if (layout.ok()) layout_ = *layout;
        label_field_ = m.value("label_field", "");
        if (m.contains("schema")) {
          auto rec = SchemaRecord::FromJson(m["schema"]);
          if (rec.ok()) {
            schema_ = std::move(rec).value();
          } else {
            st = rec.status().Prefixed(file_ + ": __meta__");
          }
        }
        if (!layout.ok()) {
          st = Status(Code::kCorruption,
                      file_ + ": __meta__ names an unknown layout " + EscapeBytes(layout_name));
        }
        MDB_val lk = Val("__len__"), lv;
        // __len__: ASCII digits, a pickled int in the pickle layout (the recipes read it).
        auto len_ok = [&] {
          if (layout_ != LmdbLayout::kPickle)
            return std::string(View(lv)) == std::to_string(samples_);
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
      layout_ = std::nullopt;  // foreign: every key is a sample with one field, "value"
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
      DS_RETURN_IF_ERROR(crcs_->Check(
          i, *s,
          fmt::format("{} (LMDB key {})", file_,
                      layout_ == LmdbLayout::kField ? SampleKey(i) + ".*" : SampleKey(i))));
    }
    return s;
  }

  Result<Sample> GetIn(MDB_txn* txn, uint64_t i) const {
    auto bad = [&](const std::string& why) {
      return Status(Code::kCorruption, fmt::format("{}: sample {}: {}", file_, i, why));
    };
    Sample s;
    if (!layout_) {
      MDB_val k = Val(keys_[i]), v;
      int rc = mdb_get(txn, dbi_, &k, &v);
      if (rc != 0) return MdbError(rc, fmt::format("{}: key '{}'", file_, EscapeBytes(keys_[i])));
      s.key = keys_[i];
      s.fields.push_back({"value", std::string(View(v))});
      return s;
    }
    std::string prefix = SampleKey(i);
    if (layout_ == LmdbLayout::kPickle) {
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
    if (layout_ == LmdbLayout::kCaffe) {  // PREFIX_KEY -> Datum
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
    if (layout_ == LmdbLayout::kSample) {
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
  // How samples are stored (docs/formats/lmdb.md); nullopt for a foreign LMDB (no __meta__).
  std::optional<LmdbLayout> layout_ = LmdbLayout::kField;
  std::vector<std::string> keys_;       // foreign LMDB: every key, in order
  std::optional<SampleCrcTable> crcs_;  // dspack.crc when dspack.json lists it
  mutable std::mutex env_mu_;
  mutable MDB_env* env_ = nullptr;
  mutable pid_t pid_ = 0;
  mutable bool locked_ = false;
  mutable MDB_dbi dbi_ = 0;
};

}  // namespace

Result<std::unique_ptr<LayoutReader>> Open(const StorageRef& at, const std::set<std::string>*) {
  // liblmdb maps data.mdb by its path: the pages it reads are no operations of the storage.
  DS_RETURN_IF_ERROR(RequireMmap(*at.storage, at.storage->Uri(at.path),
                                 "LMDB needs a local file: liblmdb maps it"));
  auto r = std::make_unique<Reader>();
  DS_RETURN_IF_ERROR(r->Load(at.path));
  return std::unique_ptr<LayoutReader>(std::move(r));
}

}  // namespace ds::lmdb
