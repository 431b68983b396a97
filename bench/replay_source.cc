#include "bench/replay_source.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <functional>
#include <mutex>
#include <thread>

#include "formats/sources/zip.h"
#include "src/fd.h"
#include "src/progress.h"
#include "src/storage.h"

namespace ds::bench {

ReplaySource::~ReplaySource() = default;

Result<std::unique_ptr<ReplaySource>> ReplaySource::Open(const std::string& uri) {
  auto src = std::unique_ptr<ReplaySource>(new ReplaySource());
  DS_ASSIGN_OR_RETURN(StorageRef at, OpenStorage(uri));
  src->counting_ = std::make_shared<CountingStorage>(at.storage);
  src->path_ = at.path;
  const std::string& path = src->path_;
  Storage& fs = *src->counting_;
  auto st = fs.Stat(path, true);
  if (!st.ok()) return Status::FromErrno(st.status().err(), path, Code::kBadInput);
  if (DetectLayout(uri)) {
    DS_ASSIGN_OR_RETURN(src->layout_, OpenLayout(StorageRef{src->counting_, path}));
    src->kind_ = std::string(src->layout_->kind());
    src->samples_ = src->layout_->size();
    src->files_ = src->layout_->DataFiles();
  } else if (st->type == FileType::kRegular && LooksLikeZip(path)) {
    DS_ASSIGN_OR_RETURN(ZipArchive zip, ZipArchive::Open(fs, path));
    src->zip_ = std::make_unique<ZipArchive>(std::move(zip));
    src->kind_ = "zip";
    src->samples_ = src->zip_->sample_count();
    src->files_ = {path};
  } else if (st->type == FileType::kDirectory) {
    DS_RETURN_IF_ERROR(CheckNotDamagedDataset(path));  // never benchmarked as a plain tree
    DS_ASSIGN_OR_RETURN(src->tree_,
                        FileTree::Scan(path, {}, [&](std::string_view, const Status& s) {
                          return s.Prefixed(path);
                        }));
    src->kind_ = "tree";
    src->samples_ = src->tree_.sample_count();
    for (uint64_t f = 0; f < src->tree_.file_count(); f++) {
      src->files_.push_back(path + "/" + std::string(src->tree_.path(f)));
    }
  } else {
    return Status(Code::kBadInput,
                  fmt::format("{}: not a dataset, a .zip or a directory tree; convert other "
                              "archives first (dspack convert {} OUT)",
                              path, path));
  }
  for (const auto& f : src->files_) {
    if (auto info = fs.Stat(f, true); info.ok()) src->total_bytes_ += info->size;
  }
  if (src->samples_ == 0) return Status(Code::kBadInput, path + ": no samples to replay");
  src->counting_->Reset();  // the bill is the epochs'
  return src;
}

Result<SampleRead> ReplaySource::Read(uint64_t i) const {
  SampleRead r;
  if (layout_) {
    DS_ASSIGN_OR_RETURN(Sample s, layout_->Get(i));
    r.bytes = s.payload_bytes();
    return r;
  }
  if (zip_) {  // opens stay 0: the archive was opened once, as by each zipfile worker
    DS_ASSIGN_OR_RETURN(r.bytes, zip_->ReadSample(i));
    return r;
  }
  // ImageFolder's way: every file of the sample opened (open + fstat), read whole and closed,
  // every time.
  thread_local std::string buf;
  auto [begin, end] = tree_.files_of(i);
  for (uint64_t f = begin; f < end; f++) {
    const std::string& name = files_[f];
    DS_ASSIGN_OR_RETURN(auto file, counting_->OpenRead(name));
    r.opens++;
    uint64_t size = file->size();
    if (buf.size() < size) buf.resize(size);
    DS_ASSIGN_OR_RETURN(size_t n, file->ReadSome(0, buf.data(), size));
    r.bytes += n;
  }
  return r;
}

namespace {

// Runs fn on every file from kFileThreads threads: through a slow file system each open is a
// round trip, and a tree has a file per sample. The first error wins.
constexpr int kFileThreads = 16;

Status ForEachFile(const std::vector<std::string>& files,
                   const std::function<Status(const std::string&)>& fn) {
  std::atomic<size_t> next{0};
  std::mutex mu;
  Status first;
  auto work = [&] {
    for (size_t i = next++; i < files.size(); i = next++) {
      Status s = fn(files[i]);
      if (!s.ok()) {
        std::lock_guard lock(mu);
        if (first.ok()) first = s;
        next = files.size();
      }
    }
  };
  std::vector<std::thread> threads;
  int n = static_cast<int>(std::min<size_t>(kFileThreads, files.size()));
  for (int t = 1; t < n; t++) threads.emplace_back(work);
  work();
  for (auto& t : threads) t.join();
  return first;
}

}  // namespace

Status ReplaySource::Evict(const std::vector<std::string>& files, bool progress) {
  Progress bar(progress, "files evicted", files.size());
  std::atomic<uint64_t> done{0};
  Storage& storage = *LocalStorage();
  return ForEachFile(files, [&](const std::string& f) -> Status {
    bar.Update(done.fetch_add(1, std::memory_order_relaxed) + 1, 0);
    Status s = storage.EvictCache(f);
    // A file that vanished holds no cache to evict; reading its sample reports it (on_error).
    return s.code() == Code::kNotFound ? Status::Ok() : s;
  });
}

Result<double> ReplaySource::Residency() const {
  std::atomic<uint64_t> pages{0}, resident{0};
  Storage& storage = *counting_;  // cache queries pass uncounted
  DS_RETURN_IF_ERROR(ForEachFile(files_, [&](const std::string& f) -> Status {
    auto r = storage.CachedPages(f);
    // A file that vanished is not in the cache; reading its sample reports it (on_error).
    if (!r.ok() && r.status().code() == Code::kNotFound) return Status::Ok();
    DS_RETURN_IF_ERROR(r.status());
    pages += r->pages;
    resident += r->resident;
    return Status::Ok();
  }));
  return pages ? static_cast<double>(resident) / pages : 0.0;
}

void ReplaySource::Close() {
  layout_.reset();
  zip_.reset();
}

Status ReplaySource::Reopen() {
  if (kind_ == "tree") return Status::Ok();
  if (kind_ == "zip") {
    DS_ASSIGN_OR_RETURN(ZipArchive zip, ZipArchive::Open(*counting_, path_));
    zip_ = std::make_unique<ZipArchive>(std::move(zip));
  } else {
    DS_ASSIGN_OR_RETURN(layout_, OpenLayout(StorageRef{counting_, path_}));
  }
  return Status::Ok();
}

Result<std::vector<ShardRange>> ReplaySource::ShardRanges() const {
  if (!layout_) return std::vector<ShardRange>{};
  return layout_->ShardRanges();
}

}  // namespace ds::bench
