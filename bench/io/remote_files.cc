// The test files of `dsbench io --ioengine nfs` (bench/io/io_job.h: RemoteJobUrl,
// PrepareRemoteTestFile, RemoveRemoteTestFile), through the storage interface: the same rules as
// PrepareTestFile's for a local PATH, on the export that nfs_url names.
#include <fmt/format.h>

#include "bench/io/io_job.h"
#include "src/human.h"
#include "src/random.h"
#include "src/storage.h"

namespace ds::bench {

std::string RemoteJobUrl(const IoJobOptions& o, const std::string& path) {
  std::string url = o.nfs_url, query;
  if (size_t q = url.find('?'); q != std::string::npos) {
    query = url.substr(q);
    url.resize(q);
  }
  while (url.size() > 1 && url.back() == '/') url.pop_back();
  std::string rel = path;
  while (!rel.empty() && rel.front() == '/') rel.erase(0, 1);
  if (rel.rfind("./", 0) == 0) rel.erase(0, 2);
  if (!rel.empty() && rel != ".") url += "/" + rel;
  return url + query;
}

Result<bool> RemoteTargetIsDir(const IoJobOptions& o) {
  DS_ASSIGN_OR_RETURN(StorageRef at, OpenStorage(RemoteJobUrl(o, o.path)));
  auto info = at.storage->Stat(at.path, true);
  if (!info.ok())
    return info.status().code() == Code::kNotFound ? Result<bool>(false) : info.status();
  return info->type == FileType::kDirectory;
}

namespace {

// offset + size bytes of incompressible data under the file's name, published whole at Commit
// (nothing partial is left under the name if the run fails or is killed).
Status LayOutRemote(const IoJobOptions& o, Storage& storage, const std::string& path) {
  const uint64_t bytes = o.offset + o.size;
  DS_ASSIGN_OR_RETURN(auto w, storage.Create(path));
  std::string buf(1 << 20, '\0');
  Rng rng(o.seed, 0xF11E);
  for (uint64_t done = 0; done < bytes;) {
    size_t k = static_cast<size_t>(std::min<uint64_t>(buf.size(), bytes - done));
    rng.Fill(buf.data(), k);
    DS_RETURN_IF_ERROR(w->Append(std::string_view(buf.data(), k)));
    done += k;
  }
  return w->Commit();
}

}  // namespace

Result<TestFile> PrepareRemoteTestFile(IoJobOptions& o) {
  DS_ASSIGN_OR_RETURN(StorageRef at, OpenStorage(RemoteJobUrl(o, o.path)));
  Storage& storage = *at.storage;
  std::string path = at.path;
  auto info = storage.Stat(path, true);
  if (!info.ok() && info.status().code() != Code::kNotFound) return info.status();
  if (info.ok() && info->type == FileType::kDirectory) {
    if (o.size == 0) {
      return Status(Code::kInvalidArgument, "`size` is needed when PATH is a directory");
    }
    path += "/" + (o.file_name.empty() ? o.name + ".0.0" : o.file_name);
    info = storage.Stat(path, true);
    if (!info.ok() && info.status().code() != Code::kNotFound) return info.status();
  }
  const std::string uri = storage.Uri(path);
  if (!info.ok()) {  // not there: laid out here, removed after the run unless keep
    if (o.size == 0) {
      return Status(Code::kInvalidArgument, uri +
                                                ": not there yet, and `size` is needed to "
                                                "create it");
    }
    DS_RETURN_IF_ERROR(LayOutRemote(o, storage, path));
    return TestFile{path, true};
  }
  if (info->type != FileType::kRegular) {
    return Status(Code::kInvalidArgument,
                  fmt::format("{}: {}; give a file or a directory", uri, FileTypeName(info->type)));
  }
  if (o.size == 0 && info->size > o.offset) o.size = info->size - o.offset;
  // No owner's mark can be set over NFS (user xattrs): an existing file is the user's, written
  // only with allow_overwrite, as a local one that dsbench did not make.
  if (Writes(o.rw) && !o.allow_overwrite) {
    return Status(Code::kInvalidArgument,
                  fmt::format("{}: an existing file; `rw` {} would overwrite it. Remove it, give "
                              "another `name` or `directory`, or `allow_overwrite`",
                              uri, RwName(o.rw)));
  }
  if (!Writes(o.rw) && info->size < o.offset + o.size) {
    return Status(Code::kInvalidArgument,
                  fmt::format("{}: {} bytes, fewer than the {} the job reads; remove it (dsbench "
                              "lays it out again) or lower `size`",
                              uri, info->size, o.offset + o.size));
  }
  return TestFile{path, false};
}

void RemoveRemoteTestFile(const IoJobOptions& o, const std::string& path) {
  auto at = OpenStorage(o.nfs_url);
  if (at.ok()) (void)at->storage->Remove(path);
}

}  // namespace ds::bench
