// Summaries, ranking, recommendation, JSON and text of `dsbench compare` (bench/compare/compare.h;
// the worker sweep is in compare_sweep.cc). Pure functions of their results: unit-tested without
// any IO (tests/bench/compare_test.cc).
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cstdlib>

#include "bench/common/latency_report.h"
#include "bench/compare/compare.h"
#include "src/human.h"

namespace ds::bench {

using nlohmann::json;

double Median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  size_t m = v.size() / 2;
  return v.size() % 2 ? v[m] : (v[m - 1] + v[m]) / 2;
}

namespace {

// What ranks a run: with a simulated accelerator the delivered rate is capped by compute, so the
// loader's capacity (what its workers could deliver, never idle) ranks; else the delivered rate.
double Score(const CompareRun& r) {
  return r.result.compute_time > 0 ? r.capacity_samples_per_sec : r.samples_per_sec;
}

json Cdf(const LatencyHistogram& h) {
  json pts = json::array();
  if (h.count() == 0) return pts;
  std::vector<double> qs = {0.1, 0.5};
  for (int q = 1; q <= 99; q++) qs.push_back(q);
  for (double q : {99.5, 99.9, 100.0}) qs.push_back(q);
  for (double q : qs) pts.push_back({h.Percentile(q), q / 100});
  return pts;
}

int MaxWorkers(const CompareOptions& o) {
  return *std::max_element(o.workers.begin(), o.workers.end());
}

std::string Times(double x) {
  return x >= 10 ? fmt::format("{:.0f}x", x) : fmt::format("{:.1f}x", x);
}

std::string LayoutWords(const std::string& layout) {
  if (layout == "dir") return "the directory tree";
  if (layout == "native") return "native shards";
  return layout;
}

// "local cold: native 2.4x the directory tree, wds 2.2x, ..., zip 0.6x"
std::string GroupSentence(const std::vector<const CompareRun*>& ranked,
                          const std::string& baseline) {
  std::string t;
  for (const CompareRun* r : ranked) {
    if (r->layout == baseline || !r->vs_baseline) continue;
    t += t.empty()
             ? fmt::format("{} {} {}", r->layout, Times(*r->vs_baseline), LayoutWords(baseline))
             : fmt::format(", {} {}", r->layout, Times(*r->vs_baseline));
  }
  return t;
}

// Runs of one (storage, cache) at the largest worker count, best first.
std::vector<const CompareRun*> Ranked(const CompareResult& r, const std::string& storage,
                                      CacheState cache, int workers) {
  std::vector<const CompareRun*> v;
  for (const auto& run : r.runs) {
    if (run.storage == storage && run.cache == cache && run.workers == workers) v.push_back(&run);
  }
  std::stable_sort(v.begin(), v.end(),
                   [](const CompareRun* a, const CompareRun* b) { return Score(*a) > Score(*b); });
  return v;
}

// Whether two runs differ only inside the noise: each has at least 2 measured epochs, and their
// epochs' ranges of the ranking score (min-max) overlap.
bool Tied(const CompareRun& a, const CompareRun& b) {
  return a.epochs_measured > 1 && b.epochs_measured > 1 && a.score_max >= b.score_min &&
         b.score_max >= a.score_min;
}

// The rank of each run of a ranked list: "1", "2", ..., or "=N" for a run tied with the one
// above it, N being the first rank of the tie.
std::vector<std::string> RankLabels(const std::vector<const CompareRun*>& ranked) {
  std::vector<std::string> labels;
  size_t head = 0;
  for (size_t i = 0; i < ranked.size(); i++) {
    bool tied = i > 0 && Tied(*ranked[i], *ranked[i - 1]);
    if (!tied) head = i;
    labels.push_back(tied ? fmt::format("={}", head + 1) : std::to_string(i + 1));
  }
  return labels;
}

std::string StorageWords(const CompareOptions& o, const std::string& storage) {
  if (storage == "local") return "local disk";
  if (storage == "nfs") return "NFS (" + o.nfs_url + ")";
  return "slowfs (" + (o.slowfs ? SlowfsText(*o.slowfs) : std::string("?")) + ")";
}

}  // namespace

// "natural": each layout read the way its loaders read it. Random access by index for the tree
// (ImageFolder), zip (a zipfile Dataset) and LMDB (a python-lmdb Dataset); the shard layouts in
// storage order with a shuffle buffer (WebDataset, tf.data, MXNet's ImageRecordIter).
ReplayMode CompareMode(std::optional<ReplayMode> mode, const std::string& layout) {
  if (mode) return *mode;
  return layout == "dir" || layout == "zip" || layout == "lmdb" ? ReplayMode::kMap
                                                                : ReplayMode::kStream;
}

const char* CompareModeName(std::optional<ReplayMode> mode) {
  return mode ? Name(*mode) : "natural";
}

std::vector<std::string> CompareStorages(const CompareOptions& o) {
  std::vector<std::string> s;
  if (o.local) s.push_back("local");
  if (o.slowfs) s.push_back("slowfs");
  if (!o.nfs_url.empty()) s.push_back("nfs");
  return s;
}

void SummarizeRun(CompareRun* run) {
  const auto& eps = run->result.epochs;
  // A warm run's first epoch only fills the cache (unless the dataset was already cached).
  size_t first = run->cache == CacheState::kWarm && eps.size() > 1 ? 1 : 0;
  std::vector<double> sps, bps, ops, fb, au, head, res, cap;
  for (size_t i = first; i < eps.size(); i++) {
    const EpochResult& e = eps[i];
    double s = e.seconds > 0 ? e.seconds : 1e-9;
    sps.push_back(e.samples / s);
    bps.push_back(e.bytes / s);
    ops.push_back(e.opens / s);
    fb.push_back(e.first_batch_seconds);
    au.push_back(e.au);
    res.push_back(e.residency_before);
    cap.push_back(e.capacity_samples_per_sec);
    if (run->result.required_samples_per_sec > 0) {
      head.push_back(e.capacity_samples_per_sec / run->result.required_samples_per_sec);
    }
    run->sample_lat.Merge(e.sample_lat);
    run->wait_lat.Merge(e.wait_lat);
    if (e.ops) {
      if (!run->ops) run->ops = StorageOps{};
      for (size_t k = 0; k < kStorageOpCount; k++) run->ops->count[k] += e.ops->count[k];
      run->ops->read_bytes += e.ops->read_bytes;
      run->ops->write_bytes += e.ops->write_bytes;
      run->ops_samples += e.samples;
    }
    if (e.rpc) {
      if (!run->rpc) run->rpc = RpcBill{};
      run->rpc->Merge(*e.rpc);
      run->rpc_samples += e.samples;
      run->rpc_bytes += e.bytes;
    }
  }
  run->samples_per_sec = Median(sps);
  run->bytes_per_sec = Median(bps);
  run->opens_per_sec = Median(ops);
  run->first_batch_seconds = Median(fb);
  run->residency_before = Median(res);
  run->capacity_samples_per_sec = Median(cap);
  if (run->result.compute_time > 0 && !au.empty()) run->au = Median(au);
  if (!head.empty()) run->headroom = Median(head);
  const std::vector<double>& score = run->result.compute_time > 0 ? cap : sps;
  run->epochs_measured = score.size();
  if (!score.empty()) {
    run->score_min = *std::min_element(score.begin(), score.end());
    run->score_max = *std::max_element(score.begin(), score.end());
  }
}

void RankAndRecommend(const CompareOptions& o, CompareResult* res) {
  int w = MaxWorkers(o);
  // Ratios against the baseline of the same storage, cache and workers.
  for (auto& run : res->runs) {
    for (const auto& base : res->runs) {
      if (base.layout == res->baseline && base.storage == run.storage && base.cache == run.cache &&
          base.workers == run.workers && Score(base) > 0) {
        run.vs_baseline = Score(run) / Score(base);
      }
    }
  }
  std::vector<std::string> parts;
  for (const auto& storage : CompareStorages(o)) {
    for (const auto& cache : o.caches) {
      auto ranked = Ranked(*res, storage, cache, w);
      std::string s = GroupSentence(ranked, res->baseline);
      if (!s.empty()) parts.push_back(fmt::format("{} {}: {}", storage, Name(cache), s));
    }
  }
  // The pick: the best layout where storage hurts most (the slowest storage, cold).
  std::string storage = !o.nfs_url.empty() ? "nfs" : o.slowfs ? "slowfs" : "local";
  CacheState cache =
      std::find(o.caches.begin(), o.caches.end(), CacheState::kCold) != o.caches.end()
          ? CacheState::kCold
          : o.caches.front();
  auto ranked = Ranked(*res, storage, cache, w);
  if (!ranked.empty()) {
    const CompareRun* best = ranked.front();
    std::string why =
        best->vs_baseline && best->layout != res->baseline
            ? fmt::format("{} {} {}", Times(*best->vs_baseline), LayoutWords(res->baseline),
                          Name(cache))
            : fmt::format("{} samples/s {}", FormatCount(best->samples_per_sec), Name(cache));
    std::string feed;
    double req = res->runs.empty() ? 0 : res->runs.front().result.required_samples_per_sec;
    if (req > 0) {
      std::vector<std::string> feeding;
      for (const CompareRun* r : ranked) {
        if (MeetsRate(*r, req)) feeding.push_back(r->layout);
      }
      feed = feeding.empty() ? "; no layout feeds the job here (more workers?)"
             : feeding.size() == ranked.size()
                 ? "; every layout feeds this job here"
                 : fmt::format("; only {} feed the job here", fmt::join(feeding, ", "));
    }
    // The noise: layouts whose epochs overlap the best's (min-max) are tied with it; a median
    // of fewer than 3 epochs is not a verdict.
    std::vector<std::string> tied;
    for (const CompareRun* r : ranked) {
      if (r != best && r->epochs_measured > 1 && best->epochs_measured > 1 &&
          r->score_max >= best->score_min) {
        tied.push_back(r->layout);
      }
    }
    std::string noise;
    if (!tied.empty()) {
      noise = fmt::format("; tied within the noise with {} (their epochs overlap)",
                          fmt::join(tied, ", "));
    }
    if (best->epochs_measured < 3) {
      noise += fmt::format("; from {} measured epoch{}: run 3 or more before quoting it",
                           best->epochs_measured, best->epochs_measured == 1 ? "" : "s");
    }
    res->recommendation = fmt::format("use {}: {} on {}{}{}", LayoutWords(best->layout), why,
                                      StorageWords(o, storage), feed, noise);
  }
  for (const auto& p : parts) res->recommendation += "\n  " + p;
  // Implausible: a layout read through the slow file system faster than from local disk, both
  // warm, beyond the spread of their epochs (a cache that was not what it seemed, a noisy host).
  for (const auto& s : res->runs) {
    if (s.storage != "slowfs" || s.cache != CacheState::kWarm || s.workers != w) continue;
    for (const auto& l : res->runs) {
      if (l.storage == "local" && l.cache == CacheState::kWarm && l.layout == s.layout &&
          l.workers == w && s.score_min > l.score_max * 1.05) {
        res->recommendation += fmt::format(
            "\n  implausible: {} warm through slowfs ({}/s) beat local disk warm ({}/s) beyond "
            "the noise; rerun before trusting these figures",
            s.layout, FormatCount(s.score_min), FormatCount(l.score_max));
      }
    }
  }
}

json CompareJson(const CompareOptions& o, const CompareResult& r) {
  auto opt = [](const std::optional<double>& v) { return v ? json(*v) : json(nullptr); };
  json runs = json::array();
  for (const auto& run : r.runs) {
    runs.push_back(
        {{"layout", run.layout},
         {"mode", Name(CompareMode(o.mode, run.layout))},
         {"storage", run.storage},
         {"cache", Name(run.cache)},
         {"workers", run.workers},
         {"workers_run", run.result.workers},
         {"samples_per_sec", run.samples_per_sec},
         {"bytes_per_sec", run.bytes_per_sec},
         {"opens_per_sec", run.opens_per_sec},
         {"capacity_samples_per_sec", run.capacity_samples_per_sec},
         {"epochs_measured", run.epochs_measured},
         {"score_min", run.score_min},
         {"score_max", run.score_max},
         {"first_batch_seconds", run.first_batch_seconds},
         {"residency_before", run.residency_before},
         {"au", opt(run.au)},
         {"headroom", opt(run.headroom)},
         {"vs_baseline", opt(run.vs_baseline)},
         {"sample_lat_ns", LatencyJson(run.sample_lat)},
         {"cdf", Cdf(run.sample_lat)},
         {"data_wait_ns", LatencyJson(run.wait_lat)},
         {"storage_ops", run.ops ? StorageOpsJson(*run.ops, run.ops_samples) : json(nullptr)},
         {"rpc_bill",
          run.rpc ? RpcBillJson(*run.rpc, run.rpc_samples, run.rpc_bytes) : json(nullptr)},
         {"replay", ReplayJson(run.options, run.result)}});
    if (run.cluster) {
      const ClusterEpoch& c = *run.cluster;
      runs.back()["straggler"] = {{"rank", run.straggler_rank},
                                  {"hostname", run.straggler_host},
                                  {"epoch", c.epoch},
                                  {"seconds", c.seconds},
                                  {"median_seconds", c.median_seconds},
                                  {"bytes_ratio", c.bytes_ratio},
                                  {"read_latency_ratio", c.latency_ratio},
                                  {"reason", c.reason}};
    }
    if (run.torch) {
      ReplayOptions to = run.options;
      to.loader = Loader::kTorch;
      runs.back()["torch"] = {{"samples_per_sec", run.torch_samples_per_sec},
                              {"model_vs_torch", opt(run.model_vs_torch)},
                              {"replay", ReplayJson(to, *run.torch)}};
    }
  }
  json builds = json::array();
  for (const auto& b : r.builds) {
    builds.push_back({{"layout", b.layout},
                      {"path", b.path},
                      {"bytes", b.bytes},
                      {"build_seconds", b.seconds},
                      {"reused", b.reused}});
  }
  for (auto& run : runs) {
    for (const auto& b : r.builds) {
      if (b.layout == run["layout"]) {
        run["dataset_bytes"] = b.bytes;
        run["build_seconds"] = b.seconds;
        run["replay"]["dataset"] = b.path;
      }
    }
  }
  int w = MaxWorkers(o);
  double required = r.runs.empty() ? 0 : r.runs.front().result.required_samples_per_sec;
  json ranking = json::array(), sweep = json::array();
  for (const auto& storage : CompareStorages(o)) {
    for (const auto& cache : o.caches) {
      json order = json::array();
      auto ranked = Ranked(r, storage, cache, w);
      auto labels = RankLabels(ranked);
      for (size_t i = 0; i < ranked.size(); i++) {
        const CompareRun* run = ranked[i];
        order.push_back({{"layout", run->layout},
                         {"rank", labels[i]},
                         {"tied_with_above", labels[i][0] == '='},
                         {"samples_per_sec", run->samples_per_sec},
                         {"score", Score(*run)},
                         {"score_min", run->score_min},
                         {"score_max", run->score_max},
                         {"epochs_measured", run->epochs_measured},
                         {"vs_baseline", opt(run->vs_baseline)}});
      }
      ranking.push_back({{"storage", storage},
                         {"cache", Name(cache)},
                         {"baseline", r.baseline},
                         {"order", order}});
      if (o.workers.size() < 2) continue;
      for (const auto& layout : o.layouts) {
        std::vector<const CompareRun*> pts;
        json points = json::array();
        for (const auto& run : r.runs) {
          if (run.layout == layout && run.storage == storage && run.cache == cache) {
            pts.push_back(&run);
            points.push_back({{"workers", run.workers},
                              {"samples_per_sec", run.samples_per_sec},
                              {"au", opt(run.au)}});
          }
        }
        auto mw = MinWorkers(pts, required);
        sweep.push_back({{"layout", layout},
                         {"storage", storage},
                         {"cache", Name(cache)},
                         {"min_workers", mw ? json(*mw) : json(nullptr)},
                         {"points", points}});
      }
    }
  }
  return {
      {"source", o.src},
      {"work_dir", o.work_dir},
      {"ranks", r.ranks},
      {"samples", r.samples},
      {"source_bytes", r.source_bytes},
      {"job",
       {{"mode", CompareModeName(o.mode)},
        {"workers", o.workers},
        {"batch", o.job.batch},
        {"prefetch", o.job.prefetch},
        {"batch_reads", o.job.batch_reads},
        {"epochs", o.job.epochs},
        {"compute_time", r.runs.empty() ? o.job.compute_time : r.runs.front().result.compute_time},
        {"required_samples_per_sec", required}}},
      {"slowfs", o.slowfs ? json{{"meta_latency_s", o.slowfs->meta_latency},
                                 {"read_latency_s", o.slowfs->read_latency}}
                          : json(nullptr)},
      {"nfs_url", o.nfs_url.empty() ? json(nullptr) : json(o.nfs_url)},
      {"builds", builds},
      {"runs", runs},
      {"ranking", ranking},
      {"sweep", sweep},
      {"baseline", r.baseline},
      {"recommendation", r.recommendation},
      {"skipped", r.skipped},
      {"interrupted", r.interrupted}};
}

std::string CompareText(const CompareOptions& o, const CompareResult& r) {
  int w = MaxWorkers(o);
  double required = r.runs.empty() ? 0 : r.runs.front().result.required_samples_per_sec;
  std::string t;
  bool any_tie = false;
  if (r.ranks > 1) {
    t += fmt::format(
        "\n{} ranks, one training job: each figure is the job's (samples of all "
        "ranks over the slowest rank's epoch; AU the lowest rank's)\n",
        r.ranks);
  }
  for (const auto& storage : CompareStorages(o)) {
    for (const auto& cache : o.caches) {
      bool capacity = !r.runs.empty() && r.runs.front().result.compute_time > 0;
      t += fmt::format(
          "\n{}, {} cache, {} workers (x = {} vs {}):\n", StorageWords(o, storage), Name(cache), w,
          capacity ? "loader capacity, what the workers could deliver never idle," : "samples/s",
          LayoutWords(r.baseline));
      // With a required rate, whether each layout feeds the job (MLPerf's AU bar with a
      // simulated accelerator, else the loader's capacity against the rate).
      t += fmt::format("  {:<4} {:<9} {:<6} {:>10} {:>15} {:>11} {:>9} {:>9} {:>9} {:>7} {:>7}{}\n",
                       "rank", "layout", "mode", "samples/s", "epochs min-max", "MB/s", "opens/s",
                       "p50", "p99", "AU", "x", required > 0 ? "  verdict" : "");
      auto ranked = Ranked(r, storage, cache, w);
      auto labels = RankLabels(ranked);
      for (size_t i = 0; i < ranked.size(); i++) {
        const CompareRun* run = ranked[i];
        any_tie = any_tie || labels[i][0] == '=';
        std::string verdict =
            required > 0 ? (MeetsRate(*run, required) ? "  FEEDS" : "  STARVES") : "";
        std::string spread = run->epochs_measured > 1
                                 ? FormatCount(run->score_min) + "-" + FormatCount(run->score_max)
                                 : std::string("1 epoch");
        t += fmt::format(
            "  {:<4} {:<9} {:<6} {:>10} {:>15} {:>11} {:>9} {:>9} {:>9} {:>7} {:>7}{}\n", labels[i],
            run->layout, Name(CompareMode(o.mode, run->layout)), FormatCount(run->samples_per_sec),
            spread, FormatRate(run->bytes_per_sec), FormatCount(run->opens_per_sec),
            FormatDuration(run->sample_lat.Percentile(50) / 1e9),
            FormatDuration(run->sample_lat.Percentile(99) / 1e9),
            run->au ? fmt::format("{:.1f}%", *run->au * 100) : "-",
            run->vs_baseline ? fmt::format("{:.2f}", *run->vs_baseline) : "-", verdict);
      }
      // What each layout asked of the storage: on a network file system, its RPC bill.
      for (const CompareRun* run : ranked) {
        if (!run->ops) continue;
        t += fmt::format("  storage bill, {:<9} {}\n", run->layout + ":",
                         FormatStorageBill(*run->ops, run->ops_samples));
      }
      for (const CompareRun* run : ranked) {
        if (!run->rpc) continue;
        t += fmt::format("  RPC bill, {:<9} {} ({})\n", run->layout + ":",
                         FormatRpcBill(*run->rpc, run->rpc_samples), run->rpc->source);
      }
      if (o.workers.size() < 2) continue;
      t += "  worker sweep (fewest workers that meet the required rate):";
      for (const auto& layout : o.layouts) {
        std::vector<const CompareRun*> pts;
        for (const auto& run : r.runs) {
          if (run.layout == layout && run.storage == storage && run.cache == cache) {
            pts.push_back(&run);
          }
        }
        auto mw = MinWorkers(pts, required);
        t += fmt::format(" {} {};", layout,
                         required <= 0 ? "n/a"
                         : mw          ? std::to_string(*mw)
                                       : "none");
      }
      t += required <= 0 ? " (give `step_time` or `samples_per_sec` for a required rate)\n" : "\n";
    }
  }
  if (o.job.loader == Loader::kTorch) {
    t += "\nthe model (dsbench's C++ loader) against a real torch DataLoader, same job:\n";
    t += fmt::format("  {:<6} {:<5} {:<9} {:>7} {:>14} {:>14} {:>8}\n", "storage", "cache",
                     "layout", "workers", "model s/s", "DataLoader s/s", "ratio");
    for (const auto& run : r.runs) {
      if (!run.torch) continue;
      t += fmt::format("  {:<6} {:<5} {:<9} {:>7} {:>14} {:>14} {:>8}\n", run.storage,
                       Name(run.cache), run.layout, run.workers, FormatCount(run.samples_per_sec),
                       FormatCount(run.torch_samples_per_sec),
                       run.model_vs_torch ? fmt::format("{:.2f}x", *run.model_vs_torch) : "-");
    }
  }
  if (any_tie) {
    t += "\n=N: tied with the layout above it within the noise (their measured epochs' "
         "min-max ranges overlap)\n";
  }
  if (r.ranks > 1) {
    t += "\nstragglers (each run's last epoch):\n";
    for (const auto& run : r.runs) {
      t += fmt::format("  {:<6} {:<4} {:<9} workers {:<3} {}\n", run.storage, Name(run.cache),
                       run.layout, run.workers, StragglerText(run));
    }
  }
  for (const auto& why : r.skipped) t += "\nnot run: " + why;
  if (!r.skipped.empty()) t += "\n";
  t += "\nrecommendation: " + r.recommendation + "\n";
  if (r.interrupted) t += "interrupted: partial results\n";
  return t;
}

}  // namespace ds::bench
