#include "sync/syncer.h"

#include <dirent.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <set>
#include <thread>

#include "formats/shard_assignment.h"
#include "formats/subset.h"
#include "src/checksum.h"
#include "src/dir_lock.h"
#include "src/fd.h"
#include "src/human.h"
#include "src/progress.h"
#include "sync/staged.h"

namespace ds::sync {
namespace {

Status MakeDirs(const std::string& path) {
  std::error_code ec;
  std::filesystem::create_directories(path, ec);
  if (ec) return Status::FromErrno(ec.value(), path + ": mkdir", Code::kIOError);
  return Status::Ok();
}

// Picks this rank's files: metadata, then the assigned shards' prefix.
std::vector<PlanFile> Select(const SyncOptions& o, Plan* plan, SyncReport* r) {
  std::vector<PlanFile> out = std::move(plan->meta);
  std::vector<uint64_t> shard_bytes;
  for (const auto& f : plan->shards) shard_bytes.push_back(f.size);
  std::vector<size_t> mine = AssignShards(shard_bytes, r->rank.rank, r->rank.world, o.assign);
  std::vector<uint64_t> sizes;
  for (size_t i : mine) sizes.push_back(plan->shards[i].size);
  r->shards_total = plan->shards.size();
  r->shards_assigned = mine.size();
  for (uint64_t b : sizes) r->assigned_bytes += b;
  Subset keep{mine.size(), r->assigned_bytes};
  if (o.max_bytes || o.fraction) {
    uint64_t budget = o.max_bytes ? *o.max_bytes
                                  : static_cast<uint64_t>(std::floor(
                                        *o.fraction * static_cast<double>(r->assigned_bytes)));
    keep = PrefixSubset(sizes, budget);
    r->subset = true;
  }
  r->shards_staged = keep.shards;
  r->staged_shard_bytes = keep.bytes;
  for (size_t k = 0; k < keep.shards; ++k) out.push_back(std::move(plan->shards[mine[k]]));
  return out;
}

// What chose the staged shards, for the subset view's `info` line.
std::string SubsetReason(const SyncOptions& o, const SyncReport& r) {
  std::string s;
  if (r.rank.world > 1) {
    s = fmt::format("rank {} of {}, {}", r.rank.rank, r.rank.world,
                    o.assign == ShardPolicy::kRoundRobin ? "round robin" : "balanced by bytes");
  }
  if (r.subset) {
    if (!s.empty()) s += "; ";
    s += o.max_bytes ? fmt::format("the first {} of them", FormatBytes(*o.max_bytes))
                     : fmt::format("a {:g} fraction of them", *o.fraction);
  }
  return "dssync: " + s;
}

struct Known {  // hashes of files a previous run committed
  StagedManifest staged;
  std::map<std::string, std::vector<JournalEntry>> journal;
  std::optional<uint64_t> Find(const PlanFile& f) const {
    auto s = staged.find(f.rel);
    if (s != staged.end() && s->second.size == f.size && s->second.mtime_ns == f.mtime_ns) {
      return s->second.xxh3;
    }
    auto j = journal.find(f.rel);
    if (j == journal.end()) return std::nullopt;
    for (const auto& e : j->second) {
      if (e.kind == 'F' && e.src_size == f.size && e.src_mtime_ns == f.mtime_ns) return e.xxh3;
    }
    return std::nullopt;
  }
};

// Splits `files` into those to copy and those already in T, filling `staged` for the latter.
std::vector<PlanFile> SkipUnchanged(const SyncOptions& o, const std::string& target,
                                    std::vector<PlanFile> files, const Known& known,
                                    StagedManifest* staged, SyncReport* r) {
  std::vector<int> state(files.size(), 0);  // 0 copy, 1 unchanged
  std::vector<uint64_t> hash(files.size(), 0);
  ParallelFor(files.size(), o.threads, [&](size_t i) {
    const PlanFile& f = files[i];
    std::string path = target + "/" + f.rel;
    struct stat st;
    if (::lstat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode) ||
        static_cast<uint64_t>(st.st_size) != f.size) {
      return;
    }
    if (!o.checksum) {
      if (MtimeNs(st) != f.mtime_ns) return;
      auto h = f.expected_xxh3 ? f.expected_xxh3 : known.Find(f);
      if (!h) {
        auto d = HashFile(*o.dst_storage, path);
        if (!d.ok()) return;
        h = *d;
      }
      hash[i] = *h;
      state[i] = 1;
      return;
    }
    auto d = HashFile(*o.dst_storage, path);
    if (!d.ok()) return;
    std::optional<uint64_t> want = f.expected_xxh3;
    if (!want) {
      auto s = HashFile(*o.src_storage, f.src_path);
      if (!s.ok()) return;
      want = *s;
    }
    if (*d != *want) return;
    struct timespec ts[2];
    ts[0].tv_sec = ts[1].tv_sec = f.mtime_ns / 1000000000;
    ts[0].tv_nsec = ts[1].tv_nsec = f.mtime_ns % 1000000000;
    if (::utimensat(AT_FDCWD, path.c_str(), ts, AT_SYMLINK_NOFOLLOW) != 0) return;
    hash[i] = *d;
    state[i] = 1;
  });
  std::vector<PlanFile> copy;
  for (size_t i = 0; i < files.size(); ++i) {
    if (state[i] == 1) {
      ++r->skipped_unchanged;
      (*staged)[files[i].rel] = StagedFile{files[i].size, files[i].mtime_ns, hash[i]};
    } else {
      copy.push_back(std::move(files[i]));
    }
  }
  return copy;
}

Status CheckSpace(const std::string& target, const std::vector<PlanFile>& files) {
  uint64_t need = 0;
  for (const auto& f : files) need += f.size;
  struct statvfs vfs;
  if (::statvfs(target.c_str(), &vfs) != 0) return Status::FromErrno(errno, target + ": statvfs");
  uint64_t have = static_cast<uint64_t>(vfs.f_bavail) * vfs.f_frsize;
  if (need <= have) return Status::Ok();
  return Status(
      Code::kNoSpace,
      fmt::format("{}: not enough space: need {} ({} bytes, {} files to copy), have {} "
                  "({} bytes); free space or stage a subset (`max_bytes`, `world`)",
                  target, FormatBytes(need), need, files.size(), FormatBytes(have), have));
}

bool IsOwnTopName(const std::string& n) {
  return n == kJournalName || n == kStagedManifestName || n == kReadyName;
}

// Removes what SRC no longer holds under T; never follows symlinks.
void DeleteGone(const std::string& target, const std::string& rel_dir, const Plan& plan,
                SyncReport* r) {
  std::string dir = rel_dir.empty() ? target : target + "/" + rel_dir;
  DIR* d = ::opendir(dir.c_str());
  if (d == nullptr) return;
  std::vector<std::string> names;
  while (struct dirent* e = ::readdir(d)) {
    std::string n = e->d_name;
    if (n != "." && n != ".." && !(rel_dir.empty() && IsOwnTopName(n))) names.push_back(n);
  }
  ::closedir(d);
  for (const auto& n : names) {
    std::string rel = rel_dir.empty() ? n : rel_dir + "/" + n;
    std::string path = target + "/" + rel;
    struct stat st;
    if (::lstat(path.c_str(), &st) != 0) continue;
    bool gone = plan.all.count(rel) == 0;
    if (S_ISDIR(st.st_mode)) {
      DeleteGone(target, rel, plan, r);
      if (gone && ::rmdir(path.c_str()) == 0) ++r->deleted;
    } else if (gone && ::unlink(path.c_str()) == 0) {
      ++r->deleted;
    }
  }
}

Status SwitchCurrent(const std::string& dst, const std::string& version) {
  std::string tmp = dst + "/" + kTmpPrefix + kCurrentName;
  ::unlink(tmp.c_str());
  if (::symlink(version.c_str(), tmp.c_str()) != 0) return Status::FromErrno(errno, tmp);
  std::string cur = dst + "/" + kCurrentName;
  if (::rename(tmp.c_str(), cur.c_str()) != 0) return Status::FromErrno(errno, cur + ": rename");
  return FsyncDir(dst);
}

}  // namespace

Result<SyncReport> Sync(const SyncOptions& options) {
  auto t0 = std::chrono::steady_clock::now();
  SyncOptions o = options;
  // SRC's backend and the path inside it: src_storage and src as given, or OpenStorage(src) (a
  // plain path, nfs://...). o.src stays what the user named: the metadata and reports use it.
  std::string src_path = o.src;
  if (!o.src_storage) {
    DS_ASSIGN_OR_RETURN(StorageRef at, OpenStorage(o.src));
    o.src_storage = at.storage;
    src_path = at.path;
  }
  if (!o.dst_storage) o.dst_storage = LocalStorage();
  SyncReport r;
  DS_RETURN_IF_ERROR(ValidateChunkSize(o.chunk_size));
  if (o.threads < 1) {
    return Status(Code::kInvalidArgument, fmt::format("threads {}: must be at least 1", o.threads));
  }
  if (o.src_storage->scheme() == "file") DS_RETURN_IF_ERROR(CheckDisjoint(src_path, o.dst));
  const std::string& v = o.version_name;
  if (!v.empty() && (v.find('/') != std::string::npos || v == "." || v == ".." ||
                     v == kCurrentName || v.rfind(".dssync-", 0) == 0)) {
    return Status(Code::kInvalidArgument, "`version_name` " + v + ": must be a plain name");
  }
  if (o.fanout) {  // every rank stages the whole dataset
    r.rank = RankWorld{0, 1, "fanout"};
  } else {
    DS_ASSIGN_OR_RETURN(r.rank,
                        ResolveRank(o.rank, o.world, [](const char* n) { return std::getenv(n); }));
  }
  DS_ASSIGN_OR_RETURN(
      Plan plan, BuildPlan(src_path, PlanOptions{o.follow_symlinks, o.threads, o.src_storage}));
  r.manifest = plan.manifest;
  r.errors = plan.errors;
  if (o.warn) {
    for (const auto& w : plan.warnings) o.warn(w);
  }
  std::vector<PlanFile> files = Select(o, &plan, &r);

  r.target = v.empty() ? o.dst : o.dst + "/" + v;
  DS_RETURN_IF_ERROR(MakeDirs(r.target));
  // One run per DST (src/dir_lock.h): a second gets "DST: is being written by PID N", exit 2,
  // before it touches the journal or a tmp file. Held until this function returns.
  std::string lock_warning;
  DS_ASSIGN_OR_RETURN(OwnedFd dst_lock, LockDirectory(o.dst, &lock_warning));
  if (!lock_warning.empty() && o.warn) o.warn(lock_warning);
  std::string ready = r.target + "/" + kReadyName;
  if (::unlink(ready.c_str()) != 0 && errno != ENOENT) return Status::FromErrno(errno, ready);

  Known known;
  std::vector<JournalEntry> previous;
  DS_ASSIGN_OR_RETURN(Journal journal, Journal::Open(r.target, &previous, o.dst_storage));
  for (auto& e : previous) known.journal[e.path].push_back(std::move(e));
  if (auto m = LoadStagedManifest(r.target); m.ok()) known.staged = std::move(*m);

  StagedManifest staged;
  std::vector<PlanFile> planned = files;  // before skipping: the fan-out's common list
  std::vector<std::string> staged_shards;
  for (const auto& f : planned) {
    if (!f.meta) staged_shards.push_back(f.rel);
  }
  files = SkipUnchanged(o, r.target, std::move(files), known, &staged, &r);
  if (o.space_check) DS_RETURN_IF_ERROR(CheckSpace(r.target, files));
  for (const auto& f : files) {
    size_t slash = f.rel.rfind('/');
    if (slash != std::string::npos)
      DS_RETURN_IF_ERROR(MakeDirs(r.target + "/" + f.rel.substr(0, slash)));
  }

  TokenBucket bucket(o.bwlimit, std::max<uint64_t>(kBufferSize, o.bwlimit / 10));
  std::atomic<uint64_t> files_done{0}, bytes_done{0};
  CopyOptions co;
  co.dst = r.target;
  co.src_storage = o.src_storage;
  co.dst_storage = o.dst_storage;
  co.threads = o.threads;
  co.chunk_size = o.chunk_size;
  co.direct = o.direct;
  co.bucket = o.bwlimit > 0 ? &bucket : nullptr;
  co.journal = &journal;
  co.previous = &known.journal;
  co.files_done = &files_done;
  co.bytes_done = &bytes_done;
  std::atomic<bool> copying{true};
  std::thread monitor([&] {
    Progress bar(o.progress, "files", files.size());
    while (bar.enabled() && copying) {
      bar.Update(files_done, bytes_done);
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
  });
  std::vector<CopyResult> results;
  if (o.fanout) {
    std::set<std::string> left;
    for (const auto& f : files) left.insert(f.rel);
    std::vector<bool> needed;
    for (const auto& f : planned) needed.push_back(left.count(f.rel) > 0);
    results = FanoutCopy(planned, needed, co, o.fanout);
  } else {
    results = CopyFiles(files, co);
  }
  copying = false;
  monitor.join();

  for (const auto& c : results) {
    if (!c.status.ok()) {
      r.errors.push_back(c.status);
      continue;
    }
    ++r.files;
    r.bytes += c.size;
    r.recopied += c.recopied ? 1 : 0;
    r.verified += c.verified ? 1 : 0;
    r.resumed_bytes += c.resumed_bytes;
    staged[c.rel] = StagedFile{c.size, c.mtime_ns, c.xxh3};
  }
  DS_RETURN_IF_ERROR(
      WriteFileAtomic(r.target + "/" + kStagedManifestName, StagedManifestJson(staged, o.src)));
  if (o.del) DeleteGone(r.target, "", plan, &r);
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (!r.errors.empty()) return r;
  // A subset of a dataset's shards is a readable dataset of its own (formats/subset.h).
  DS_RETURN_IF_ERROR(RecordStagedShards(o.src, r.target, staged_shards, SubsetReason(o, r)));
  DS_RETURN_IF_ERROR(journal.Remove());
  nlohmann::json marker{{"files", staged.size()},
                        {"source", EncodePath(o.src, false)},
                        {"rank", r.rank.rank},
                        {"world", r.rank.world}};
  DS_RETURN_IF_ERROR(WriteFileAtomic(ready, marker.dump() + "\n"));
  if (!v.empty()) DS_RETURN_IF_ERROR(SwitchCurrent(o.dst, v));
  return r;
}

}  // namespace ds::sync
