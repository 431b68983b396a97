#include "bench/compare/compare.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <chrono>
#include <filesystem>

#include "formats/layout.h"
#include "formats/registry.h"
#include "formats/sources/zip.h"
#include "src/human.h"
#include "src/stop.h"

namespace ds::bench {

namespace fs = std::filesystem;

namespace {

// Every rank's result of the run to rank 0, where it becomes the job's (ClusterReplayResult).
Status GatherRun(const CompareRanks& ranks, CompareRun* run) {
  DS_ASSIGN_OR_RETURN(
      auto all,
      ranks.job->Gather(EncodeRankReplay(RankReplayOf(ranks.job->rank(), ranks.host, run->result)),
                        "the ranks' results of a run"));
  if (!ranks.job->root()) return Status::Ok();
  std::vector<RankReplay> each;
  for (const auto& text : all) {
    DS_ASSIGN_OR_RETURN(RankReplay r, DecodeRankReplay(text));
    each.push_back(std::move(r));
  }
  ClusterReplay c = AggregateReplay(std::move(each));
  run->result = ClusterReplayResult(run->result, c);
  if (!c.epochs.empty()) {
    run->cluster = c.epochs.back();
    run->straggler_rank = c.ranks[c.epochs.back().straggler].rank;
    run->straggler_host = c.ranks[c.epochs.back().straggler].host;
  }
  return Status::Ok();
}

uint64_t TreeBytes(const std::string& path) {
  std::error_code ec;
  if (fs::is_regular_file(path, ec)) return fs::file_size(path, ec);
  uint64_t total = 0;
  for (auto it = fs::recursive_directory_iterator(path, ec); !ec && it != fs::end(it);
       it.increment(ec)) {
    if (it->is_regular_file(ec)) total += it->file_size(ec);
  }
  return total;
}

std::string ZipPath(const std::string& dir) { return dir + "/dataset.zip"; }

// Builds one layout of src under work/<layout> (complete layouts are reused unless rebuild).
// Where a layout at `path` is read over NFS: nfs_url + its path below nfs_root.
Result<std::string> NfsPathOf(const CompareOptions& o, const std::string& path) {
  std::error_code ec;
  const std::string& root = o.nfs_root.empty() ? o.work_dir : o.nfs_root;
  fs::path r = fs::weakly_canonical(root, ec), p = fs::weakly_canonical(path, ec);
  std::string rel = p.lexically_relative(r).generic_string();
  if (rel.empty() || rel.rfind("..", 0) == 0) {
    return Status(Code::kInvalidArgument,
                  fmt::format("{} is not below {}, the directory `nfs_url` {} serves: put it "
                              "there (`nfs_root` names a directory above both), or leave its "
                              "layout out",
                              path, root, o.nfs_url));
  }
  std::string url = o.nfs_url;
  while (!url.empty() && url.back() == '/') url.pop_back();
  return rel == "." ? url : url + "/" + rel;
}

Status Build(const CompareOptions& o, const std::string& layout, CompareBuild* b) {
  b->layout = layout;
  if (layout == "dir") {
    b->path = o.src;
    b->reused = true;
    b->bytes = TreeBytes(o.src);
    return Status::Ok();
  }
  std::string dir = o.work_dir + "/" + layout;
  b->path = layout == "zip" ? ZipPath(dir) : dir;
  std::error_code ec;
  bool complete = layout == "zip" ? fs::exists(b->path, ec) : DetectLayout(dir).has_value();
  bool rank0 = !o.ranks || o.ranks->job->root();
  if (complete && (!o.rebuild || !rank0)) {
    b->reused = true;
    b->bytes = TreeBytes(b->path);
    return Status::Ok();
  }
  if (!rank0) {
    return Status(Code::kIOError,
                  fmt::format("{}: rank 0 built it, and this rank does not see it; `work_dir` "
                              "must be on storage every rank sees",
                              dir));
  }
  fs::remove_all(dir, ec);
  auto t0 = std::chrono::steady_clock::now();
  if (layout == "zip") {
    fs::create_directories(dir, ec);
    if (ec) return Status(Code::kIOError, dir + ": " + ec.message());
    ZipWriteOptions zo;
    zo.deflate = o.zip_deflate;
    DS_RETURN_IF_ERROR(WriteZip(o.src, b->path, zo));
  } else {
    DS_ASSIGN_OR_RETURN(Format format, ParseFormat(layout));
    if (!o.build_layout) {
      return Status(Code::kInternal, "compare: no layout builder was given (a bug in dspack)");
    }
    DS_RETURN_IF_ERROR(o.build_layout(o.src, dir, format, o.label_from_dir));
  }
  b->seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  b->bytes = TreeBytes(b->path);
  return Status::Ok();
}

}  // namespace

const std::vector<std::string>& CompareLayouts() {
  // The tree, its zip, and every layout of the registry (formats/registry.h), in its order.
  static const std::vector<std::string> all = [] {
    std::vector<std::string> v = {"dir", "zip"};
    for (const auto& e : LayoutTable()) v.emplace_back(e.name);
    return v;
  }();
  return all;
}

Status RunCompare(const CompareOptions& o, CompareResult* res,
                  const std::function<void(const std::string&)>& on_line) {
  auto say = [&](const std::string& s) {
    if (on_line) on_line(s);
  };
  DS_ASSIGN_OR_RETURN(StorageRef src, OpenStorage(o.src));
  auto st = src.storage->Stat(src.path, /*follow=*/true);
  if (!st.ok()) return Status::FromStorage(st.status(), o.src);
  if (st->type != FileType::kDirectory || DetectLayout(o.src)) {
    return Status(Code::kBadInput,
                  o.src +
                      ": compare needs a directory tree of files to build every layout from "
                      "(extract an archive, or `dspack extract` a dataset, first)");
  }
  if (o.layouts.empty() || o.caches.empty() || o.workers.empty() ||
      (!o.local && !o.slowfs && o.nfs_url.empty())) {
    return Status(Code::kInvalidArgument, "nothing to compare: no layouts, caches or storages");
  }
  for (const auto& l : o.layouts) {
    const auto& all = CompareLayouts();
    if (std::find(all.begin(), all.end(), l) == all.end()) {
      return Status(
          Code::kInvalidArgument,
          fmt::format("`layouts`: unknown layout '{}' (known: {})", l, fmt::join(all, ", ")));
    }
  }
  std::error_code ec;
  {
    // A work dir inside the tree would be scanned as part of it: the tree would grow by every
    // layout built.
    fs::path src = fs::canonical(o.src, ec), work = fs::weakly_canonical(o.work_dir, ec);
    auto [s_end, w_it] = std::mismatch(src.begin(), src.end(), work.begin(), work.end());
    if (!ec && s_end == src.end()) {
      return Status(Code::kInvalidArgument,
                    fmt::format("`work_dir` {} is inside SRC_DIR {}: choose a directory outside "
                                "the tree",
                                o.work_dir, o.src));
    }
  }
  fs::create_directories(o.work_dir, ec);
  if (ec) return Status(Code::kIOError, o.work_dir + ": " + ec.message());
  res->baseline = std::find(o.layouts.begin(), o.layouts.end(), "dir") != o.layouts.end()
                      ? "dir"
                      : o.layouts.front();
  auto build_all = [&]() -> Status {
    for (const auto& layout : o.layouts) {
      if (!o.ranks && StopRequested()) break;
      CompareBuild b;
      DS_RETURN_IF_ERROR(Build(o, layout, &b));
      say(b.reused ? fmt::format("{:<9} {} ({})", layout, b.path, FormatBytes(b.bytes))
                   : fmt::format("{:<9} built in {} -> {} ({})", layout, FormatDuration(b.seconds),
                                 b.path, FormatBytes(b.bytes)));
      if (layout == "dir") res->source_bytes = b.bytes;
      res->builds.push_back(b);
    }
    return Status::Ok();
  };
  // Under mpirun rank 0 builds while the others wait, then they reuse its layouts.
  const bool rank0 = !o.ranks || o.ranks->job->root();
  if (rank0) DS_RETURN_IF_ERROR(build_all());
  if (o.ranks) {
    res->ranks = o.ranks->job->size();
    DS_RETURN_IF_ERROR(o.ranks->job->Barrier("rank 0 building the layouts"));
    if (!rank0) DS_RETURN_IF_ERROR(build_all());
  }
  if (res->source_bytes == 0) res->source_bytes = TreeBytes(o.src);
  if (!o.nfs_url.empty()) {  // every layout reachable over NFS, before the first run
    for (const auto& b : res->builds) DS_RETURN_IF_ERROR(NfsPathOf(o, b.path).status());
  }
  // Under mpirun the ranks stop together, before the same run.
  auto stopping = [&]() -> Result<bool> {
    return o.ranks ? AnyRankStopping(*o.ranks->job, "the next run") : Result<bool>(StopRequested());
  };

  for (const auto& storage : CompareStorages(o)) {
    for (const auto& b : res->builds) {
      for (const auto& cache : o.caches) {
        for (int w : o.workers) {
          DS_ASSIGN_OR_RETURN(bool stop, stopping());
          if (stop) break;
          CompareRun run;
          run.layout = b.layout;
          run.storage = storage;
          run.cache = cache;
          run.workers = w;
          ReplayOptions ro = o.job;
          ro.loader = Loader::kModel;
          ro.dataset = b.path;
          ro.mode = CompareMode(o.mode, b.layout);
          ro.cache = cache;
          ro.workers = w;
          ro.epochs = o.job.epochs + (cache == CacheState::kWarm ? 1 : 0);
          if (storage == "slowfs") ro.slowfs = o.slowfs;
          if (storage == "nfs") {
            DS_ASSIGN_OR_RETURN(ro.dataset, NfsPathOf(o, b.path));
          }
          if (o.ranks) {
            ro.rank = static_cast<uint32_t>(o.ranks->job->rank());
            ro.world = static_cast<uint32_t>(o.ranks->job->size());
            ro.before_epoch = EpochBarrier(*o.ranks->job);
            ro.progress = false;
          }
          run.options = ro;
          Status replayed = RunReplay(ro, &run.result);
          // A layout that cannot be read on this storage at all (LMDB over nfs://: liblmdb maps
          // a local file) is left out of that storage's table, with the reason; every rank
          // refuses it alike, at open.
          if (replayed.code() == Code::kUnsupported && storage != "local") {
            std::string why = fmt::format("{} {}: {}", storage, b.layout, replayed.message());
            auto& sk = res->skipped;
            if (std::find(sk.begin(), sk.end(), why) == sk.end()) sk.push_back(why);
            say(fmt::format("{:<6} {:<4} {:<9} skipped: {}", storage, Name(cache), b.layout,
                            replayed.message()));
            continue;
          }
          DS_RETURN_IF_ERROR(replayed.Prefixed(b.layout));
          if (o.ranks) DS_RETURN_IF_ERROR(GatherRun(*o.ranks, &run));
          res->samples = run.result.dataset_samples;
          SummarizeRun(&run);
          say(fmt::format(
              "{:<6} {:<4} {:<9} workers {:<3} {:>8} samples/s {:>11} {:>8} opens/s  "
              "p99 {}{}",
              storage, Name(cache), b.layout, run.workers, FormatCount(run.samples_per_sec),
              FormatRate(run.bytes_per_sec), FormatCount(run.opens_per_sec),
              FormatDuration(run.sample_lat.Percentile(99) / 1e9),
              run.au ? fmt::format("  AU {:.1f}%", *run.au * 100) : ""));
          if (o.job.loader == Loader::kTorch && !StopRequested()) {
            DS_RETURN_IF_ERROR(RunTorchTwin(ro, &run).Prefixed(b.layout));
            say(fmt::format(
                "{:<6} {:<4} {:<9} workers {:<3} {:>8} samples/s by a real torch "
                "DataLoader (model / DataLoader {:.2f}x)",
                storage, Name(cache), b.layout, run.workers, FormatCount(run.torch_samples_per_sec),
                run.model_vs_torch.value_or(0)));
          }
          res->runs.push_back(std::move(run));
        }
      }
    }
  }
  if (o.ranks) {
    DS_ASSIGN_OR_RETURN(res->interrupted, stopping());
  } else {
    res->interrupted = StopRequested();
  }
  RankAndRecommend(o, res);
  return Status::Ok();
}

std::string StragglerText(const CompareRun& run) {
  if (!run.cluster) return "";
  const ClusterEpoch& c = *run.cluster;
  return fmt::format(
      "straggler rank {} ({}): {} (bytes {:.2f}x, mean read {:.2f}x the median "
      "rank's)",
      run.straggler_rank, run.straggler_host, c.reason, c.bytes_ratio, c.latency_ratio);
}

Status RunTorchTwin(const ReplayOptions& model, CompareRun* run) {
  ReplayOptions ro = model;
  ro.loader = Loader::kTorch;
  CompareRun twin;
  twin.cache = run->cache;
  twin.options = ro;
  DS_RETURN_IF_ERROR(RunReplay(ro, &twin.result));
  SummarizeRun(&twin);
  run->torch_samples_per_sec = twin.samples_per_sec;
  if (twin.samples_per_sec > 0) run->model_vs_torch = run->samples_per_sec / twin.samples_per_sec;
  run->torch = std::move(twin.result);
  return Status::Ok();
}

}  // namespace ds::bench
