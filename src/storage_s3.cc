// The s3:// backend (src/storage_s3.h, docs/s3.md).
#include "src/storage_s3.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <map>
#include <mutex>

#include "src/fd.h"
#include "src/s3_client.h"
#include "src/s3_engine.h"
#include "src/s3_upload.h"

namespace ds {
namespace {

constexpr uint64_t kMaxCopy = 5ULL << 30;  // CopyObject's limit (one request)
constexpr int kListPage = 1000;            // ListObjectsV2's max-keys

// "2026-12-07T03:24:01.411Z" (ListObjectsV2) or "Mon, 07 Dec 2026 03:24:01 GMT" (HEAD): ns.
int64_t ParseTime(const std::string& s) {
  std::tm tm{};
  const char* end = strptime(s.c_str(), "%Y-%m-%dT%H:%M:%S", &tm);
  if (end == nullptr) end = strptime(s.c_str(), "%a, %d %b %Y %H:%M:%S", &tm);
  if (end == nullptr) return 0;
  return static_cast<int64_t>(timegm(&tm)) * 1000000000;
}

FileInfo ObjectInfo(uint64_t size, int64_t mtime_ns, std::string etag) {
  FileInfo info;
  info.type = FileType::kRegular;
  info.size = size;
  info.mtime_ns = mtime_ns;
  info.mode = 0644;
  info.version = std::move(etag);
  return info;
}

FileInfo DirInfo() {
  FileInfo info;
  info.type = FileType::kDirectory;
  info.mode = 0755;
  return info;
}

// Read-ahead for a file read in order (docs/s3.md#what-an-object-store-is-to-the-tools): a reader
// of small consecutive pieces (verify's records, a shard streamed) would otherwise pay a GET per
// piece. The file follows up to kStreams flows of reads in order at once (a loader's workers each
// reading on where another left off). After two reads of a flow that each start where the last
// ended, or after Advise(kSequential), a read smaller than the flow's window fetches the window
// from its offset, and the next reads are served from it. The window starts at 1 MiB and doubles
// up to S3Config::readahead_max (8 MiB; the URL's readahead=MIB, 0 for none). A window is freed
// once read through, so memory is bounded by the flows in progress (at most kStreams windows a
// file). A read out of order goes straight to the server. No lock is held during a GET.
constexpr size_t kReadAheadMin = 1 << 20;
constexpr size_t kStreams = 8;

class S3File final : public RandomAccessFile {
 public:
  S3File(std::shared_ptr<S3Client> client, std::string key, std::string uri, uint64_t size,
         std::string etag)
      : client_(std::move(client)),
        key_(std::move(key)),
        uri_(std::move(uri)),
        size_(size),
        etag_(std::move(etag)) {}
  const std::string& name() const override { return uri_; }
  uint64_t size() const override { return size_; }

  Result<size_t> ReadSome(uint64_t offset, void* buf, size_t n) const override {
    if (offset >= size_) return size_t{0};
    n = static_cast<size_t>(std::min<uint64_t>(n, size_ - offset));
    if (n == 0) return size_t{0};
    const size_t most = client_->config().readahead_max;
    std::unique_lock lock(mu_);
    for (Stream& f : streams_) {  // served from a window
      if (f.ahead && offset >= f.ahead_off && offset < f.ahead_off + f.ahead->size()) {
        const uint64_t end = f.ahead_off + f.ahead->size();
        const size_t k = static_cast<size_t>(std::min<uint64_t>(n, end - offset));
        std::memcpy(buf, f.ahead->data() + (offset - f.ahead_off), k);
        f.next = offset + k;
        f.used = ++clock_;
        if (offset + k == end) f.ahead.reset();
        return k;
      }
    }
    Stream* f = nullptr;
    for (Stream& g : streams_) {
      if (!g.filling && g.next == offset && g.used > 0) f = &g;
    }
    const bool in_order = f != nullptr;
    if (!f) {  // a new flow, in the place of the least recently used one
      for (Stream& g : streams_) {
        if (!g.filling && (!f || g.used < f->used)) f = &g;
      }
      if (!f) {  // every flow is fetching: read this directly
        lock.unlock();
        return Get(offset, static_cast<char*>(buf), n);
      }
      *f = Stream{};
    }
    f->streak = in_order ? f->streak + 1 : 0;
    f->next = offset + n;
    f->used = ++clock_;
    if ((!sequential_ && f->streak < 2) || n >= std::min(f->window, most)) {
      lock.unlock();
      return Get(offset, static_cast<char*>(buf), n);
    }
    const size_t len =
        static_cast<size_t>(std::min<uint64_t>(std::min(f->window, most), size_ - offset));
    f->filling = true;
    lock.unlock();
    auto window = std::make_shared<std::string>(len, '\0');
    auto got = Get(offset, window->data(), len);
    std::memcpy(buf, window->data(), got.ok() ? n : 0);
    lock.lock();
    f->filling = false;
    if (!got.ok()) return got.status();
    f->window = std::min(f->window * 2, std::max(most, kReadAheadMin));
    if (len > n) {
      f->ahead = std::move(window);
      f->ahead_off = offset;
    }
    return n;
  }

  void Advise(Advice advice, uint64_t, uint64_t) const override {
    std::lock_guard lock(mu_);
    if (advice == Advice::kSequential) sequential_ = true;
  }

 private:
  Result<size_t> Get(uint64_t offset, char* buf, size_t n) const {
    S3Request get{"GET", key_};
    get.headers.push_back(fmt::format("Range: bytes={}-{}", offset, offset + n - 1));
    if (!etag_.empty()) get.headers.push_back("If-Match: " + etag_);
    get.sink = buf;
    get.sink_size = n;
    std::string what = fmt::format("{}: bytes {}-{}", uri_, offset, offset + n - 1);
    DS_ASSIGN_OR_RETURN(S3Response r, client_->Perform(get, what));
    if (r.status / 100 != 2) return client_->Fail(r, what);
    return n;
  }

  // A flow of reads in order, and its window.
  struct Stream {
    uint64_t next = 0;  // where its last read ended
    uint64_t used = 0;  // clock_ at its last read (0: never used)
    int streak = 0;     // its reads in a row that started where the last ended
    size_t window = kReadAheadMin;
    bool filling = false;                      // a GET of its window in flight
    std::shared_ptr<const std::string> ahead;  // bytes [ahead_off, ahead_off + size)
    uint64_t ahead_off = 0;
  };

  std::shared_ptr<S3Client> client_;
  std::string key_, uri_;
  uint64_t size_;
  std::string etag_;
  // The read-ahead state, shared by the threads that read this file.
  mutable std::mutex mu_;
  mutable std::array<Stream, kStreams> streams_;
  mutable uint64_t clock_ = 0;
  mutable bool sequential_ = false;
};

class S3Storage final : public Storage {
 public:
  S3Storage(S3Config config, std::string bucket)
      : client_(std::make_shared<S3Client>(std::move(config), bucket)),
        bucket_(std::move(bucket)) {}
  std::string_view scheme() const override { return "s3"; }
  StorageCaps caps() const override {
    StorageCaps c;
    c.max_inflight = 64;    // GETs worth keeping in flight (docs/s3.md, S2)
    c.pinned_reads = true;  // If-Match on the ETag seen at open (S3File::Get)
    return c;
  }
  std::string Uri(const std::string& path) const override {
    return fmt::format("s3://{}{}", bucket_, path.empty() || path[0] != '/' ? "/" + path : path);
  }

  // "/a/b" -> "a/b"; "/" -> "".
  static std::string Key(const std::string& path) {
    size_t i = 0;
    while (i < path.size() && path[i] == '/') ++i;
    std::string k = path.substr(i);
    while (!k.empty() && k.back() == '/') k.pop_back();
    return k;
  }
  static std::string Prefix(const std::string& path) {
    std::string k = Key(path);
    return k.empty() ? k : k + "/";
  }

  Result<std::unique_ptr<RandomAccessFile>> OpenRead(const std::string& path) override {
    std::string uri = Uri(path);
    DS_ASSIGN_OR_RETURN(S3Response r, Head(Key(path), uri));
    if (r.status == 404) {  // which: no bucket, a prefix, or no object
      auto st = Stat(path, true);
      if (!st.ok()) return st.status();
      if (st->type == FileType::kDirectory) {
        return Status(Code::kBadInput, fmt::format("{}: a directory (a key prefix)", uri));
      }
    }
    if (r.status / 100 != 2) return client_->Fail(r, uri);
    uint64_t size = std::strtoull(r.headers["content-length"].c_str(), nullptr, 10);
    return std::unique_ptr<RandomAccessFile>(
        new S3File(client_, Key(path), uri, size, r.headers["etag"]));
  }

  // The listing's size and ETag open the object, with no HEAD: a request less per file (dssync
  // of a tree of small objects: two requests a file become one). A change since the listing
  // answers 412 to the first GET (If-Match), as a change since OpenRead does.
  Result<std::unique_ptr<RandomAccessFile>> OpenListed(const std::string& path,
                                                       const FileInfo& listed) override {
    // An empty object is never read: only a HEAD can tell it is still there.
    if (listed.type != FileType::kRegular || listed.version.empty() || listed.size == 0) {
      return OpenRead(path);
    }
    return std::unique_ptr<RandomAccessFile>(
        new S3File(client_, Key(path), Uri(path), listed.size, listed.version));
  }

  Result<std::unique_ptr<WritableFile>> Create(const std::string& path) override {
    return NewS3Writable(*client_, Key(path), Uri(path));
  }

  Result<std::unique_ptr<RandomWriteFile>> OpenWrite(const std::string& path,
                                                     WriteMode mode) override {
    std::string uri = Uri(path);
    bool exists = false;
    if (mode != WriteMode::kTruncate) {
      DS_ASSIGN_OR_RETURN(S3Response r, Head(Key(path), uri));
      if (r.status / 100 != 2 && r.status != 404) return client_->Fail(r, uri);
      exists = r.status / 100 == 2;
      if (exists && mode == WriteMode::kCreateNew) {
        return Status(Code::kAlreadyExists, fmt::format("{}: exists", uri));
      }
    }
    const char* dir = std::getenv("TMPDIR");
    int fd = ::open(dir && *dir ? dir : "/tmp", O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
    if (fd < 0) return Status::FromErrno(errno, uri + ": a local spool under TMPDIR");
    auto file = NewS3SpoolWrite(*client_, OwnedFd(fd), Key(path), uri);
    if (exists) {  // kKeep: the object as it is, to be written on (a journal, a resumed copy)
      DS_ASSIGN_OR_RETURN(auto object, OpenRead(path));
      std::string piece;
      for (uint64_t off = 0; off < object->size(); off += piece.size()) {
        piece.resize(std::min<uint64_t>(kS3PartSize, object->size() - off));
        DS_RETURN_IF_ERROR(object->ReadAt(off, piece.data(), piece.size()));
        DS_RETURN_IF_ERROR(file->WriteAt(off, piece.data(), piece.size()));
      }
    } else {
      DS_RETURN_IF_ERROR(file->Truncate(0));  // the object is there from now, empty
    }
    DS_RETURN_IF_ERROR(file->Sync());
    return std::unique_ptr<RandomWriteFile>(std::move(file));
  }

  Status SyncDir(const std::string&) override { return Status::Ok(); }

  Result<FileInfo> Stat(const std::string& path, bool) override {
    std::string uri = Uri(path);
    std::string key = Key(path);
    if (!key.empty()) {
      DS_ASSIGN_OR_RETURN(S3Response r, Head(key, uri));
      if (r.status / 100 == 2) {
        return ObjectInfo(std::strtoull(r.headers["content-length"].c_str(), nullptr, 10),
                          ParseTime(r.headers["last-modified"]), r.headers["etag"]);
      }
      if (r.status != 404) return client_->Fail(r, uri);
    }
    // A directory: any key under the prefix (the bucket itself: that it exists).
    S3Request list{"GET", "", {{"list-type", "2"}, {"prefix", Prefix(path)}, {"max-keys", "1"}}};
    DS_ASSIGN_OR_RETURN(S3Response r, client_->Perform(list, uri));
    if (r.status / 100 != 2) return client_->Fail(r, uri);
    if (key.empty() || !XmlBlocks(r.body, "Contents").empty()) return DirInfo();
    return Status(Code::kNotFound, fmt::format("{}: no such object or prefix", uri), ENOENT);
  }

  Result<std::vector<DirEntry>> List(const std::string& dir) override {
    std::string uri = Uri(dir);
    std::string prefix = Prefix(dir);
    std::vector<DirEntry> out;
    bool any = false;
    std::string token;
    do {
      S3Request list{"GET",
                     "",
                     {{"list-type", "2"},
                      {"prefix", prefix},
                      {"delimiter", "/"},
                      {"max-keys", std::to_string(kListPage)}}};
      if (!token.empty()) list.query.emplace_back("continuation-token", token);
      DS_ASSIGN_OR_RETURN(S3Response r, client_->Perform(list, uri + ": list"));
      if (r.status / 100 != 2) return client_->Fail(r, uri + ": list");
      for (std::string_view c : XmlBlocks(r.body, "Contents")) {
        any = true;
        std::string key = XmlText(c, "Key");
        if (key.size() <= prefix.size()) continue;  // the directory's own marker
        out.push_back({key.substr(prefix.size()),
                       ObjectInfo(std::strtoull(XmlText(c, "Size").c_str(), nullptr, 10),
                                  ParseTime(XmlText(c, "LastModified")), XmlText(c, "ETag"))});
      }
      for (std::string_view c : XmlBlocks(r.body, "CommonPrefixes")) {
        any = true;
        std::string p = XmlText(c, "Prefix");
        if (p.size() <= prefix.size() + 1) continue;
        out.push_back({p.substr(prefix.size(), p.size() - prefix.size() - 1), DirInfo()});
      }
      token = XmlText(r.body, "IsTruncated") == "true" ? XmlText(r.body, "NextContinuationToken")
                                                       : std::string();
    } while (!token.empty());
    if (!any && !prefix.empty()) {
      return Status(Code::kNotFound, fmt::format("{}: no objects under this prefix", uri), ENOENT);
    }
    return out;
  }

  Status MakeDirs(const std::string& dir) override {
    std::string prefix = Prefix(dir);
    if (prefix.empty()) return Status::Ok();
    S3Request put{"PUT", prefix};
    put.headers.push_back(ContentMd5Header(""));
    DS_ASSIGN_OR_RETURN(S3Response r, client_->Perform(put, Uri(dir)));
    return r.status / 100 == 2 ? Status::Ok() : client_->Fail(r, Uri(dir));
  }

  Status Remove(const std::string& path) override {
    std::string uri = Uri(path);
    DS_ASSIGN_OR_RETURN(FileInfo info, Stat(path, false));
    std::string key = info.type == FileType::kDirectory ? Prefix(path) : Key(path);
    if (info.type == FileType::kDirectory) {
      DS_ASSIGN_OR_RETURN(auto entries, List(path));
      if (!entries.empty()) {
        return Status(Code::kIOError, fmt::format("{}: not empty", uri));
      }
    }
    S3Request del{"DELETE", key};
    DS_ASSIGN_OR_RETURN(S3Response r, client_->Perform(del, uri));
    return r.status / 100 == 2 ? Status::Ok() : client_->Fail(r, uri);
  }

  Status Rename(const std::string& from, const std::string& to) override {
    std::string uri = Uri(from);
    DS_ASSIGN_OR_RETURN(FileInfo info, Stat(from, false));
    if (info.type != FileType::kRegular || info.size > kMaxCopy) {
      return Status(
          Code::kUnsupported,
          fmt::format("{}: S3 renames one object of at most 5 GiB (a copy and a "
                      "delete), not {}",
                      uri, info.type == FileType::kRegular ? "a larger one" : "a prefix"));
    }
    S3Request copy{"PUT", Key(to)};
    copy.headers.push_back(
        fmt::format("x-amz-copy-source: /{}/{}", bucket_, AwsEncode(Key(from), true)));
    std::string what = fmt::format("{}: copy to {}", uri, Uri(to));
    DS_ASSIGN_OR_RETURN(S3Response r, client_->Perform(copy, what));
    if (r.status / 100 != 2 || !r.ErrorCode().empty()) return client_->Fail(r, what);
    S3Request del{"DELETE", Key(from)};
    DS_ASSIGN_OR_RETURN(S3Response d, client_->Perform(del, uri));
    return d.status / 100 == 2 ? Status::Ok() : client_->Fail(d, uri);
  }

  // No lock; but the writer that claims a prefix is the next run of any writer that died there:
  // the multipart uploads it left unfinished (invisible, yet stored and billed) are aborted.
  Result<std::unique_ptr<StorageLock>> LockWriter(const std::string& dir,
                                                  std::string* warning) override {
    DS_ASSIGN_OR_RETURN(int aborted, AbortUploads(Prefix(dir)));
    if (warning) {
      *warning = fmt::format(
          "{}: not locked: S3 has no locks; make sure no other writer uses "
          "this prefix",
          Uri(dir));
      if (aborted > 0) {
        *warning += fmt::format(
            " (aborted {} unfinished multipart upload{} an interrupted "
            "writer left under it)",
            aborted, aborted == 1 ? "" : "s");
      }
    }
    return std::make_unique<StorageLock>();
  }

  // Many ranged GETs in flight on one thread (src/s3_engine.h).
  Result<std::unique_ptr<IoEngine>> NewEngine(const EngineOptions& options) override {
    const std::string own = "s3://" + bucket_;
    // A path of this storage, or a file's name (its URI: what an S3File says).
    auto path_of = [own](const std::string& p) {
      return p.rfind(own + "/", 0) == 0 ? p.substr(own.size()) : p;
    };
    S3EnginePaths paths{
        [path_of](const std::string& p) { return Key(path_of(p)); },
        [own, path_of](const std::string& p) { return own + "/" + Key(path_of(p)); }};
    return MakeS3Engine(client_, options, std::move(paths));
  }

 private:
  // Aborts every multipart upload in progress under prefix (ListMultipartUploads, page by page).
  Result<int> AbortUploads(const std::string& prefix) {
    const std::string what = Uri(prefix) + ": list unfinished uploads";
    int aborted = 0;
    std::string key_marker, id_marker;
    for (;;) {
      S3Request list("GET", "", {{"uploads", ""}, {"prefix", prefix}});
      if (!key_marker.empty()) {
        list.query.emplace_back("key-marker", key_marker);
        list.query.emplace_back("upload-id-marker", id_marker);
      }
      DS_ASSIGN_OR_RETURN(S3Response r, client_->Perform(list, what));
      if (r.status / 100 != 2) return client_->Fail(r, what);
      for (std::string_view u : XmlBlocks(r.body, "Upload")) {
        const std::string key = XmlText(u, "Key");
        S3Request abort("DELETE", key, {{"uploadId", XmlText(u, "UploadId")}});
        DS_ASSIGN_OR_RETURN(S3Response a, client_->Perform(abort, Uri(key)));
        if (a.status / 100 != 2 && a.status != 404) return client_->Fail(a, Uri(key));
        aborted++;
      }
      if (XmlText(r.body, "IsTruncated") != "true") break;
      key_marker = XmlText(r.body, "NextKeyMarker");
      id_marker = XmlText(r.body, "NextUploadIdMarker");
      if (key_marker.empty()) break;
    }
    return aborted;
  }

  Result<S3Response> Head(const std::string& key, const std::string& uri) {
    S3Request head{"HEAD", key};
    return client_->Perform(head, uri);
  }

  std::shared_ptr<S3Client> client_;
  std::string bucket_;
};

struct Opened {
  std::mutex mu;
  std::map<std::string, std::weak_ptr<S3Storage>> by_key;
};

}  // namespace

Result<std::shared_ptr<Storage>> OpenS3Storage(const StorageUri& uri) {
  if (uri.authority.empty()) {
    return Status(Code::kInvalidArgument, "name the bucket: s3://BUCKET/PREFIX");
  }
  DS_ASSIGN_OR_RETURN(S3Config config, LoadS3Config(uri.query));
  std::string key = fmt::format("{}|{}|{}|{}|{}|{}", config.endpoint, uri.authority,
                                config.access_key, config.secret_key, uri.query, ::getpid());
  static Opened* opened = new Opened;
  std::lock_guard lock(opened->mu);
  if (auto s = opened->by_key[key].lock()) return std::shared_ptr<Storage>(std::move(s));
  auto storage = std::make_shared<S3Storage>(std::move(config), uri.authority);
  opened->by_key[key] = storage;
  return std::shared_ptr<Storage>(std::move(storage));
}

}  // namespace ds
