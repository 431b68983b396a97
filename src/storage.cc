// URI dispatch and the backend-independent helpers of src/storage.h.
#include "src/storage.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cctype>
#include <map>
#include <memory>
#include <mutex>

#include "src/checksum.h"
#include "src/io_engine.h"
#include "src/storage_nfs.h"
#include "src/storage_s3.h"

namespace ds {

Status RandomAccessFile::ReadAt(uint64_t offset, void* buf, size_t n, std::string_view what) const {
  auto* p = static_cast<char*>(buf);
  size_t done = 0;
  while (done < n) {
    DS_ASSIGN_OR_RETURN(size_t got, ReadSome(offset + done, p + done, n - done));
    if (got == 0) {
      return Status(
          Code::kCorruption,
          fmt::format("{}: truncated: wanted {} bytes at offset {}, file ends at {}",
                      what.empty() ? std::string_view(name()) : what, n, offset, offset + done));
    }
    done += got;
  }
  return Status::Ok();
}

Status RandomAccessFile::ReadAtV(iovec* iov, size_t count, uint64_t offset,
                                 std::string_view what) const {
  for (size_t i = 0; i < count; i++) {
    DS_RETURN_IF_ERROR(ReadAt(offset, iov[i].iov_base, iov[i].iov_len, what));
    offset += iov[i].iov_len;
    iov[i].iov_base = static_cast<char*>(iov[i].iov_base) + iov[i].iov_len;
    iov[i].iov_len = 0;
  }
  return Status::Ok();
}

const char* FileTypeName(FileType t) {
  switch (t) {
    case FileType::kFifo:
      return "a fifo";
    case FileType::kSocket:
      return "a socket";
    case FileType::kDevice:
      return "a device";
    default:
      return "not a regular file";
  }
}

void RandomAccessFile::Advise(Advice, uint64_t, uint64_t) const {}

Status RandomWriteFile::Allocate(uint64_t) { return Status::Ok(); }

Status RandomWriteFile::SetAttributes(mode_t, int64_t) {
  return Status(Code::kUnsupported,
                name() + ": this storage keeps no permission bits or mtime of its own");
}

Result<std::unique_ptr<RandomAccessFile>> Storage::OpenListed(const std::string& path,
                                                              const FileInfo&) {
  return OpenRead(path);
}

Result<std::unique_ptr<RandomWriteFile>> Storage::OpenDirect(const std::string& path) {
  return Status(Code::kUnsupported,
                fmt::format("{}: {} storage has no writes around a page cache", path, scheme()));
}

Status Storage::SyncAll(const std::string& dir) {
  return Status(Code::kUnsupported,
                fmt::format("{}: {} storage cannot sync a directory's files at once (sync each)",
                            dir, scheme()));
}

Status Storage::EvictCache(const std::string& path) {
  return Status(Code::kUnsupported,
                fmt::format("{}: {} storage has no page cache here", path, scheme()));
}

Result<std::unique_ptr<IoEngine>> Storage::NewEngine(const EngineOptions&) {
  return Status(Code::kUnsupported,
                fmt::format("{} storage has no IO engine of its own; its files are read by the "
                            "local engines (psync, io_uring, libaio, mmap)",
                            scheme()));
}

Result<PageResidency> Storage::CachedPages(const std::string& path) {
  return Status(Code::kUnsupported,
                fmt::format("{}: {} storage has no page cache here", path, scheme()));
}

Result<StorageUri> ParseStorageUri(std::string_view uri) {
  StorageUri out;
  auto sep = uri.find("://");
  // A scheme is letters, digits, '+', '-', '.' starting with a letter (RFC 3986); anything else
  // before "://" (a path such as "./a://b") is a plain local path.
  bool scheme_ok =
      sep != std::string_view::npos && sep > 0 && std::isalpha(static_cast<unsigned char>(uri[0]));
  for (size_t i = 0; scheme_ok && i < sep; ++i) {
    char c = uri[i];
    scheme_ok = std::isalnum(static_cast<unsigned char>(c)) || c == '+' || c == '-' || c == '.';
  }
  if (!scheme_ok) {
    if (uri.empty()) return Status(Code::kInvalidArgument, "empty path: name a file or a URI");
    out.scheme = "file";
    out.path = std::string(uri);
    return out;
  }
  out.scheme = std::string(uri.substr(0, sep));
  std::transform(out.scheme.begin(), out.scheme.end(), out.scheme.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  std::string_view rest = uri.substr(sep + 3);
  auto question = rest.find('?');
  if (question != std::string_view::npos && out.scheme != "file") {
    out.query = std::string(rest.substr(question + 1));
    rest = rest.substr(0, question);
  }
  auto slash = rest.find('/');
  out.authority = std::string(rest.substr(0, slash));
  out.path = slash == std::string_view::npos ? "/" : std::string(rest.substr(slash));
  if (out.scheme == "file" && !out.authority.empty() && out.authority != "localhost") {
    return Status(Code::kInvalidArgument,
                  fmt::format("{}: a file:// URI names a local path: write file:///abs/path", uri));
  }
  if (out.scheme == "file") out.authority.clear();
  return out;
}

namespace {

struct Registry {
  std::mutex mu;
  std::map<std::string, StorageFactory> factories;
};

Registry& TheRegistry() {
  static Registry* r = [] {
    auto* reg = new Registry;
    reg->factories["file"] = [](const StorageUri&) -> Result<std::shared_ptr<Storage>> {
      return LocalStorage();
    };
    reg->factories["nfs"] = OpenNfsStorage;
    reg->factories["s3"] = OpenS3Storage;
    return reg;
  }();
  return *r;
}

}  // namespace

void RegisterStorage(std::string scheme, StorageFactory factory) {
  Registry& r = TheRegistry();
  std::lock_guard lock(r.mu);
  r.factories[std::move(scheme)] = std::move(factory);
}

std::vector<std::string> StorageSchemes() {
  Registry& r = TheRegistry();
  std::lock_guard lock(r.mu);
  std::vector<std::string> out;
  for (const auto& [scheme, factory] : r.factories) out.push_back(scheme);
  return out;
}

Result<StorageRef> OpenStorage(std::string_view uri) {
  DS_ASSIGN_OR_RETURN(StorageUri parsed, ParseStorageUri(uri));
  StorageFactory factory;
  {
    Registry& r = TheRegistry();
    std::lock_guard lock(r.mu);
    auto it = r.factories.find(parsed.scheme);
    if (it != r.factories.end()) factory = it->second;
  }
  if (!factory) {
    return Status(Code::kBadInput,
                  fmt::format("{}: no storage backend for `{}://` in this build (it knows: {}); "
                              "read it through a mount or stage it with dssync",
                              uri, parsed.scheme, fmt::join(StorageSchemes(), ", ")));
  }
  auto storage = factory(parsed);
  if (!storage.ok()) return storage.status().Prefixed(uri);
  return StorageRef{std::move(*storage), std::move(parsed.path)};
}

Status Storage::Exchange(const std::string& a, const std::string& b) {
  return Status(Code::kUnsupported,
                fmt::format("{}: {} storage cannot swap it with {} atomically", a, scheme(), b));
}

Status RequireMmap(const Storage& storage, std::string_view uri, std::string_view why) {
  if (storage.caps().mmap) return Status::Ok();
  return Status(Code::kUnsupported,
                fmt::format("{}: {}; stage it with dssync or read it through a mount", uri, why));
}

Result<std::string> ReadAll(Storage& storage, const std::string& path) {
  DS_ASSIGN_OR_RETURN(auto file, storage.OpenRead(path));
  std::string out(file->size(), '\0');
  DS_RETURN_IF_ERROR(file->ReadAt(0, out.data(), out.size()));
  return out;
}

Result<uint64_t> HashFile(Storage& storage, const std::string& path) {
  constexpr size_t kPiece = 4 << 20;
  DS_ASSIGN_OR_RETURN(auto file, storage.OpenRead(path));
  file->Advise(RandomAccessFile::Advice::kSequential);
  std::unique_ptr<char[]> buf(new char[kPiece]);
  Xxh3Hasher h;
  for (uint64_t off = 0;;) {
    DS_ASSIGN_OR_RETURN(size_t n, file->ReadSome(off, buf.get(), kPiece));
    if (n == 0) break;
    h.Update(buf.get(), n);
    off += n;
  }
  return h.Digest();
}

Status WriteAll(Storage& storage, const std::string& path, std::string_view data) {
  DS_ASSIGN_OR_RETURN(auto file, storage.Create(path));
  DS_RETURN_IF_ERROR(file->Append(data));
  return file->Commit();
}

}  // namespace ds
