#include "formats/registry.h"

#include <fmt/format.h>

#include "formats/interop/layout_meta.h"
#include "formats/interop/lmdb_layout.h"
#include "formats/interop/recordio.h"
#include "formats/interop/tfrecord.h"
#include "formats/interop/wds.h"
#include "formats/native/manifest.h"
#include "formats/native/native_reader.h"
#include "formats/sources/source_readers.h"
#include "formats/sources/zip.h"
#include "formats/subset.h"
#include "src/dir_lock.h"

namespace ds {

namespace {

// The layout whose shard files this name has, if any.
std::optional<Format> ShardExtFormat(std::string_view n) {
  if (n.ends_with(".tfrecord") || n.ends_with(".tfrec")) return Format::kTfrecord;
  if (n.ends_with(".rec")) return Format::kRecordio;
  if (n.ends_with(".tar")) return Format::kWds;
  return std::nullopt;
}

// A directory whose files are all shards and sidecars of one layout (foreign WebDataset,
// TFRecord or RecordIO shards: *.tar, *.tfrecord, *.rec with their .idx/.lst).
std::optional<Format> DetectShardDir(Storage& storage, const std::string& dir) {
  auto entries = storage.List(dir);
  if (!entries.ok()) return std::nullopt;
  std::optional<Format> kind;
  bool mixed = false;
  for (const auto& e : *entries) {
    std::string_view n = e.name;
    if (auto f = ShardExtFormat(n)) {
      if (kind && *kind != *f) mixed = true;
      kind = f;
    } else if (!n.ends_with(".idx") && !n.ends_with(".lst") && n != "classes.txt") {
      mixed = true;
    }
  }
  return mixed ? std::nullopt : kind;
}

bool Exists(Storage& storage, const std::string& path) { return storage.Stat(path, true).ok(); }

// An interop layout: named by dspack.json, or (without one) foreign shards of its kind: a
// directory of them or one shard file.
template <Format F>
bool DetectInterop(const PathFacts& p) {
  if (p.has_dspack_meta) return p.meta_format == F;
  if (p.is_dir) return p.foreign_shards == F;
  return p.is_file && ShardExtFormat(p.path) == F;
}

bool DetectNative(const PathFacts& p) {
  return p.is_dir && Exists(*p.storage, p.path + "/" + native::kManifestName);
}

bool DetectLmdb(const PathFacts& p) {
  if (p.has_dspack_meta) return p.meta_format == Format::kLmdb;
  if (p.is_dir) return Exists(*p.storage, p.path + "/" + lmdb::kDataName);
  return p.is_file && p.path.ends_with(".mdb");
}

// In detection order: a native manifest first; LMDB's data.mdb before a shard directory.
constexpr LayoutEntry kTable[] = {
    {Format::kNative, "native", DetectNative, native::OpenReader, native::CreateWriter,
     native::ListFiles, native::Verify, native::IsDatasetFile, native::kManifestName},
    {Format::kLmdb, "lmdb", DetectLmdb, lmdb::Open, lmdb::CreateWriter, ListInteropFiles, nullptr,
     IsInteropFile, kLayoutMetaName},
    {Format::kWds, "wds", DetectInterop<Format::kWds>, wds::Open, wds::CreateWriter,
     ListInteropFiles, nullptr, IsInteropFile, kLayoutMetaName},
    {Format::kTfrecord, "tfrecord", DetectInterop<Format::kTfrecord>, tfrecord::Open,
     tfrecord::CreateWriter, ListInteropFiles, nullptr, IsInteropFile, kLayoutMetaName},
    {Format::kRecordio, "recordio", DetectInterop<Format::kRecordio>, recordio::Open,
     recordio::CreateWriter, ListInteropFiles, nullptr, IsInteropFile, kLayoutMetaName},
};

}  // namespace

std::span<const LayoutEntry> LayoutTable() { return kTable; }

bool IsAnyLayoutFile(std::string_view name) {
  if (name == kSubsetViewName) return true;  // formats/subset.h: beside any layout
  for (const auto& e : kTable) {
    if (e.owns(name)) return true;
  }
  return false;
}

Status CheckNotDamagedDataset(Storage& storage, const std::string& dir) {
  if (Exists(storage, dir + "/" + native::kManifestName)) return Status::Ok();
  // An interop dataset's per-sample CRCs without its commit point: LayoutMeta::Load names it.
  if (Exists(storage, dir + "/" + kSampleCrcName) &&
      !Exists(storage, dir + "/" + kLayoutMetaName)) {
    return LayoutMeta::Load(dir, storage).status();
  }
  auto entries = storage.List(dir);
  if (!entries.ok()) return Status::Ok();  // not a directory: nothing to say here
  std::string found;
  for (const auto& e : *entries) {
    std::string_view n = e.name;
    if (n == native::kIndexName || (n.rfind("shard-", 0) == 0 && n.ends_with(".dsr"))) {
      found = n;
      break;
    }
  }
  if (found.empty()) return Status::Ok();
  return Status(
      Code::kCorruption,
      fmt::format("{}: holds native dataset files ({}) but no {}: a damaged or "
                  "unfinished dataset; finish the convert that made it (resume it), or restore {}",
                  storage.Uri(dir), found, native::kManifestName, native::kManifestName));
}

bool IsCommitPointName(std::string_view name) {
  for (const auto& e : kTable) {
    if (name == e.commit_point) return true;
  }
  return false;
}

const LayoutEntry& LayoutFor(Format f) {
  for (const auto& e : kTable) {
    if (e.format == f) return e;
  }
  return kTable[0];  // unreachable: every Format has a row (checked by the registry test)
}

PathFacts GatherPathFacts(Storage& storage, const std::string& path) {
  PathFacts p;
  p.storage = &storage;
  p.path = path;
  auto st = storage.Stat(path, true);
  if (!st.ok()) return p;
  p.is_dir = st->type == FileType::kDirectory;
  p.is_file = st->type == FileType::kRegular;
  if (p.is_dir) {
    p.has_dspack_meta = Exists(storage, path + "/" + kLayoutMetaName);
    if (p.has_dspack_meta) {
      auto m = LayoutMeta::Load(path, storage);
      // An unreadable dspack.json is read as wds's, whose reader then names the damage.
      p.meta_format = m.ok() ? m->format : Format::kWds;
    } else {
      p.foreign_shards = DetectShardDir(storage, path);
    }
  }
  return p;
}

namespace {

std::optional<Format> DetectAt(Storage& storage, const std::string& path) {
  PathFacts p = GatherPathFacts(storage, path);
  if (!p.is_dir && !p.is_file) return std::nullopt;
  for (const auto& e : kTable) {
    if (e.detect(p)) return e.format;
  }
  return std::nullopt;
}

}  // namespace

std::optional<Format> DetectLayout(const std::string& path) {
  auto at = OpenStorage(path);
  if (!at.ok()) return std::nullopt;
  return DetectAt(*at->storage, at->path);
}

namespace {

// Why `path`, which no layout detects, is not a dataset: it is not there, it is not a directory
// (nor a file layout), or it is a directory no layout wrote.
Status NotADataset(Storage& storage, const std::string& path) {
  const std::string shown = storage.Uri(path);
  auto st = storage.Stat(path, true);
  if (!st.ok()) {
    if (st.status().err() != ENOENT) return Status::FromStorage(st.status(), shown);
    return Status(Code::kNotFound,
                  shown +
                      ": no such file or directory; give the dataset directory `dspack "
                      "convert` wrote",
                  ENOENT);
  }
  if (st->type != FileType::kDirectory) {
    return Status(Code::kBadInput,
                  fmt::format("{}: not a directory; a dataset is the directory `dspack convert` "
                              "wrote (give a .zip or .tar to `dspack convert` to pack it)",
                              shown));
  }
  DS_RETURN_IF_ERROR(CheckNotDamagedDataset(storage, path));
  // A directory whose entries cannot be read (permission denied): that, not "not a dataset".
  if (auto listed = storage.List(path); !listed.ok()) return listed.status();
  return Status(Code::kBadInput,
                fmt::format("{}: not a dataset dspack reads (native, lmdb, wds, tfrecord or "
                            "recordio); convert it to one first",
                            shown));
}

}  // namespace

Result<std::unique_ptr<LayoutReader>> OpenLayout(const std::string& path) {
  DS_ASSIGN_OR_RETURN(StorageRef at, OpenStorage(path));
  return OpenLayout(at);
}

Result<std::unique_ptr<LayoutReader>> OpenLayout(const StorageRef& at) {
  const std::string& path = at.path;
  // No open of a directory a writer holds (a convert, --force replacing it, dssync staging):
  // the shared lock is held while the reader finds and opens the files, then dropped. Local
  // files only: the lock is flock(2) (src/dir_lock.h).
  const bool local = at.storage->scheme() == "file";
  auto st = at.storage->Stat(path, true);
  const bool dir = st.ok() && st->type == FileType::kDirectory;
  OwnedFd guard;
  if (local && dir) {
    DS_ASSIGN_OR_RETURN(guard, LockDirectoryShared(path));
  }
  auto f = DetectAt(*at.storage, path);
  if (!f) return NotADataset(*at.storage, path);
  if (dir) {  // a subset view sits in a dataset's directory (formats/subset.h)
    DS_ASSIGN_OR_RETURN(auto view, LoadSubsetView(at));
    if (view) return OpenSubset(at, *f, *view);
  }
  return LayoutFor(*f).open(at, nullptr);
}

Result<std::unique_ptr<LayoutReader>> OpenAnyReader(const std::string& path) {
  DS_ASSIGN_OR_RETURN(StorageRef at, OpenStorage(path));
  return OpenAnyReader(at);
}

Result<std::unique_ptr<LayoutReader>> OpenAnyReader(const StorageRef& at) {
  const std::string& path = at.path;
  if (DetectAt(*at.storage, path)) return OpenLayout(at);
  auto st = at.storage->Stat(path, true);
  if (!st.ok()) return Status::FromStorage(st.status(), at.storage->Uri(path));
  if (st->type == FileType::kRegular && LooksLikeZip(*at.storage, path)) return OpenZipReader(at);
  if (st->type == FileType::kDirectory) {
    DS_RETURN_IF_ERROR(CheckNotDamagedDataset(*at.storage, path));  // never read as a plain tree
    return OpenTreeReader(at);
  }
  return Status(Code::kBadInput,
                fmt::format("{}: not a dataset, a .zip or a directory tree; convert other "
                            "archives first (dspack convert {} OUT)",
                            at.storage->Uri(path), at.storage->Uri(path)));
}

Result<std::unique_ptr<LayoutWriter>> CreateLayoutWriter(const std::string& out,
                                                         const WriterOptions& options) {
  DS_RETURN_IF_ERROR(Validate(options));
  return LayoutFor(FormatOf(options)).create(out, options);
}

Result<std::optional<DatasetFiles>> ListDatasetFiles(const std::string& dir) {
  DS_ASSIGN_OR_RETURN(StorageRef at, OpenStorage(dir));
  return ListDatasetFiles(at);
}

Result<std::optional<DatasetFiles>> ListDatasetFiles(const StorageRef& at) {
  auto f = DetectAt(*at.storage, at.path);
  if (!f) return std::optional<DatasetFiles>();
  DS_ASSIGN_OR_RETURN(auto files, LayoutFor(*f).files(at));
  if (!files) return files;
  DS_ASSIGN_OR_RETURN(auto view, LoadSubsetView(at));
  if (view) return std::optional<DatasetFiles>(FilterToView(std::move(*files), *view));
  return files;
}

bool IsLayoutMetadataName(std::string_view name) {
  size_t slash = name.rfind('/');
  std::string_view n = slash == std::string_view::npos ? name : name.substr(slash + 1);
  return n == native::kManifestName || n == native::kIndexName || n == kLayoutMetaName ||
         n == native::kClassesName || n == kSubsetViewName || n.ends_with(".idx") ||
         n.ends_with(".lst");
}

namespace {

// Verify through a reader. A layout whose structure is broken (truncated, bad magic) fails to
// open: that is the problem to report, not a reason to stop.
Status VerifyByReader(Result<std::unique_ptr<LayoutReader>> reader, LayoutVerifyReport* report,
                      const LayoutProgress& progress) {
  if (!reader.ok() && reader.status().code() != Code::kCorruption) return reader.status();
  if (!reader.ok()) {
    report->problems.push_back(reader.status().message());
    return Status::Ok();
  }
  return (*reader)->Verify(report, progress);
}

}  // namespace

Status VerifyLayout(const std::string& path, LayoutVerifyReport* report,
                    const LayoutProgress& progress) {
  // A native dataset's files without its manifest (an interrupted convert): the problem named as
  // every reader names it (CheckNotDamagedDataset), so verify and a failed open say one thing.
  DS_ASSIGN_OR_RETURN(StorageRef at, OpenStorage(path));
  auto detected = DetectAt(*at.storage, at.path);
  if (!detected) {
    if (Status damaged = CheckNotDamagedDataset(*at.storage, at.path); !damaged.ok()) {
      report->problems.push_back(damaged.message());
      return Status::Ok();
    }
    // Not there, or a plain file: say so (not "no manifest").
    if (auto st = at.storage->Stat(at.path, true); !st.ok() || st->type != FileType::kDirectory) {
      return NotADataset(*at.storage, at.path);
    }
  } else if (auto view = LoadSubsetView(path); !view.ok() || *view) {
    // A subset view: its reader checks the present files and samples (formats/subset.h).
    return VerifyByReader(view.ok() ? OpenLayout(path) : view.status(), report, progress);
  }
  // Otherwise, without a commit point the native verify names what is missing.
  Format f = detected.value_or(Format::kNative);
  if (LayoutFor(f).verify) return LayoutFor(f).verify(at, report, progress);
  return VerifyByReader(OpenLayout(path), report, progress);
}

}  // namespace ds
