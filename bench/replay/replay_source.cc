#include "bench/replay/replay_source.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <functional>
#include <mutex>
#include <thread>

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
  DS_ASSIGN_OR_RETURN(src->reader_, OpenAnyReader(StorageRef{src->counting_, src->path_}));
  src->kind_ = std::string(src->reader_->kind());
  src->samples_ = src->reader_->size();
  src->files_ = src->reader_->DataFiles();
  for (const auto& f : src->files_) {
    if (auto info = src->counting_->Stat(f, true); info.ok()) src->total_bytes_ += info->size;
  }
  if (src->samples_ == 0) return Status(Code::kBadInput, src->path_ + ": no samples to replay");
  src->counting_->Reset();  // the bill is the epochs'
  return src;
}

Result<SampleRead> ReplaySource::Read(uint64_t i) const {
  // A tree is read as ImageFolder reads it: every file of the sample opened, read whole and
  // closed, every time (formats/sources/source_readers.h); a zip as zipfile reads it, opened
  // once; a layout with its shards open.
  DS_ASSIGN_OR_RETURN(Sample s, reader_->Get(i));
  return SampleRead{s.payload_bytes(), kind_ == "tree" ? s.fields.size() : 0};
}

Result<SampleRead> ReplaySource::ReadBatch(std::span<const uint64_t> indices,
                                           unsigned inflight) const {
  BatchReadOptions o;
  o.inflight = inflight;
  std::vector<Sample> samples;
  BatchReadStats st;
  Status s = reader_->ReadBatch(indices, o, &samples, &st);
  if (st.engine != "threads") counting_->Count(StorageOp::kRead, st.bytes, st.reads);
  DS_RETURN_IF_ERROR(s);
  SampleRead out;
  for (const auto& x : samples) {
    out.bytes += x.payload_bytes();
    if (kind_ == "tree") out.opens += x.fields.size();
  }
  return out;
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
  if (!page_cache()) return 0.0;  // nothing of it is cached here
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
  if (kind_ != "tree") reader_.reset();
}

Status ReplaySource::Reopen() {
  if (reader_) return Status::Ok();
  DS_ASSIGN_OR_RETURN(reader_, OpenAnyReader(StorageRef{counting_, path_}));
  return Status::Ok();
}

Result<std::vector<ShardRange>> ReplaySource::ShardRanges() const {
  if (kind_ == "tree" || kind_ == "zip") return std::vector<ShardRange>{};
  return reader_->ShardRanges();
}

}  // namespace ds::bench
