#include "bench/training_cli.h"

#include <fmt/format.h>

#include <cstdio>
#include <filesystem>
#include <fstream>

#include "bench/common/latency_report.h"
#include "bench/compare/compare.h"
#include "bench/compare/report_html.h"
#include "bench/compare/stage_or_stream.h"
#include "bench/io_cli.h"
#include "bench/mpi_cli.h"
#include "bench/replay/replay.h"
#include "pack/packer.h"
#include "slowfs/mount.h"
#include "src/cli_args.h"
#include "src/fd.h"
#include "src/human.h"
#include "src/stop.h"
#include "src/system_probe.h"

namespace ds::bench {

// The job flags replay and compare share (each command has its own set).
struct JobFlags {
  ReplayOptions job;
  std::string workers = "4", format = "normal", compute_time, step_time;
  // The choices as typed; ResolveJob parses them into job (compare's mode may be "natural").
  std::string mode = "map", cache = "cold", on_error = "stop", loader = "model";
  std::string meta_latency, read_latency;
  double mpi_timeout = 3600;
};

struct TrainingCommands::Flags {
  CLI::App* replay = nullptr;
  CLI::App* compare = nullptr;
  CLI::App* slowfs = nullptr;
  JobFlags rj, cj;  // replay's, compare's
  // compare
  CompareOptions co;
  std::string layouts, caches = "cold,warm", html;
  bool no_local = false, zip_store = false;
  // compare of a remote dataset: stage or stream
  std::string stage_dir;
  int train_epochs = 0;
  bool keep_staged = false;
  // slowfs
  std::string sl_src, sl_mnt, sl_meta, sl_read;
};

namespace {

// The flags replay and compare share: the job.
void AddJobFlags(CLI::App* c, JobFlags* f, bool compare) {
  ReplayOptions& j = f->job;
  if (compare) f->mode = "natural";
  c->add_option("--mode", f->mode,
                compare ? "natural (each layout as its loaders read it: map for dir, zip, lmdb; "
                          "stream for shards), map or stream"
                        : "map (DataLoader, shuffled) or stream (shard order)")
      ->capture_default_str();
  c->add_option("--workers", f->workers,
                "Loader workers (threads); a list like 1,2,4,8 sweeps for the fewest that meet "
                "the required rate")
      ->capture_default_str();
  c->add_option("--batch", j.batch, "Samples per batch")->capture_default_str();
  c->add_option("--prefetch", j.prefetch, "Batches in flight per worker")->capture_default_str();
  c->add_option("--batch-reads", j.batch_reads,
                "Read each batch at once with N reads in flight per worker, as "
                "dspack.torch.MapDataset(batch_reads=True, inflight=N) does (0: a sample at a "
                "time, as __getitem__)")
      ->capture_default_str();
  c->add_option("--seed", j.seed, "Shuffle seed")->capture_default_str();
  c->add_option("--epochs", j.epochs,
                compare ? "Measured epochs per run (warm runs add one priming epoch)" : "Epochs")
      ->capture_default_str();
  if (!compare) {
    c->add_option("--cache", f->cache, "cold (evicted before each epoch) or warm")
        ->capture_default_str();
  }
  c->add_flag("--drop-caches", j.drop_caches,
              "Cold by /proc/sys/vm/drop_caches (root) instead of fadvise DONTNEED");
  c->add_option("--compute-time", f->compute_time,
                "Simulated accelerator work per batch, e.g. 50ms");
  c->add_option("--gpus", j.gpus, "GPUs fed by this loader")->capture_default_str();
  c->add_option("--step-time", f->step_time,
                "Time per training step, e.g. 100ms: sets --compute-time and the required rate");
  c->add_option("--samples-per-sec", j.samples_per_sec, "The required rate, directly");
  c->add_option("--max-samples", j.max_samples, "Samples per epoch (0: all)");
  c->add_option("--on-error", f->on_error,
                "A sample that fails to read or check: stop (exit 1) or skip (count, go on, "
                "exit 1 at the end)")
      ->capture_default_str();
  c->add_option("--meta-latency", f->meta_latency,
                compare ? "Also replay through the slow file system with this metadata round "
                          "trip, e.g. 1ms (NFS-like)"
                        : "Read through the slow file system with this metadata round trip, "
                          "e.g. 1ms (NFS-like)");
  c->add_option("--read-latency", f->read_latency,
                "Slow file system: round trip per READ request, e.g. 0.2ms (default 0)");
  c->add_option("--loader", f->loader,
                compare ? "model (the C++ threads) or torch: each run also by a real torch "
                          "DataLoader, the model's prediction and the DataLoader's result side by "
                          "side"
                        : "model (the C++ threads) or torch (a real torch DataLoader, same job, "
                          "in a Python subprocess)")
      ->capture_default_str();
  c->add_option("--output-format", f->format, "normal|json")->capture_default_str();
}

// Fills the job's durations and the slow file system from the flags.
// compare_mode: where the job's mode goes for compare ("natural" leaves it unset); null for
// replay, whose mode is the job's.
Status ResolveJob(JobFlags* f, std::optional<ReplayMode>* compare_mode = nullptr) {
  if (compare_mode == nullptr || f->mode != "natural") {
    DS_ASSIGN_OR_RETURN(f->job.mode, ParseReplayMode(f->mode));
    if (compare_mode) *compare_mode = f->job.mode;
  }
  DS_ASSIGN_OR_RETURN(f->job.cache, ParseCacheState(f->cache));
  DS_ASSIGN_OR_RETURN(f->job.on_error, ParseOnError(f->on_error));
  DS_ASSIGN_OR_RETURN(f->job.loader, ParseLoader(f->loader));
  DS_RETURN_IF_ERROR(DurationFlag(f->compute_time, "--compute-time", &f->job.compute_time));
  DS_RETURN_IF_ERROR(DurationFlag(f->step_time, "--step-time", &f->job.step_time));
  if (f->format != "normal" && f->format != "json") {
    return Status(Code::kInvalidArgument, "--output-format: normal or json");
  }
  f->job.progress = f->format == "normal";  // drawn only on a terminal
  if (!f->meta_latency.empty() || !f->read_latency.empty()) {
    SlowfsOptions s;
    s.meta_latency = 0;
    DS_RETURN_IF_ERROR(DurationFlag(f->meta_latency, "--meta-latency", &s.meta_latency));
    DS_RETURN_IF_ERROR(DurationFlag(f->read_latency, "--read-latency", &s.read_latency));
    f->job.slowfs = s;
  }
  return Status::Ok();
}

std::vector<std::string> SplitList(const std::string& s) {
  std::vector<std::string> v;
  size_t pos = 0;
  while (pos <= s.size()) {
    size_t c = s.find(',', pos);
    std::string item = s.substr(pos, c == std::string::npos ? std::string::npos : c - pos);
    if (!item.empty()) v.push_back(item);
    if (c == std::string::npos) break;
    pos = c + 1;
  }
  return v;
}

bool Starves(const ReplayResult& r) {
  return r.required_samples_per_sec > 0 && !r.epochs.empty() && !Feeds(r, r.epochs.back());
}

// `dsbench compare REMOTE --stage-dir DIR`: stream or stage (bench/compare/stage_or_stream.h), the
// stager being dssync's library.
int RunStageOrStreamCommand(TrainingCommands::Flags* f) {
  if (f->stage_dir.empty()) {
    return DsbenchFail(Status(Code::kInvalidArgument,
                              "compare " + f->co.src +
                                  ": a remote dataset needs --stage-dir, the local directory to "
                                  "stage it into (stream or stage?)"));
  }
  if (std::filesystem::exists(f->stage_dir)) {
    return DsbenchFail(Status(Code::kAlreadyExists,
                              "--stage-dir " + f->stage_dir +
                                  ": already exists; give a new directory (it is staged into and "
                                  "removed after)"));
  }
  std::optional<ReplayMode> mode;  // "natural": the replay's default (map)
  if (Status s = ResolveJob(&f->cj, &mode); !s.ok()) return DsbenchFail(s);
  StageOrStreamOptions o;
  o.url = f->co.src;
  o.stage_dir = f->stage_dir;
  o.job = f->cj.job;
  if (mode) o.job.mode = *mode;
  o.train_epochs = f->train_epochs;
  o.keep = f->keep_staged;
  auto workers = ParseWorkerList(f->cj.workers);
  if (!workers.ok()) return DsbenchFail(workers.status());
  o.job.workers = workers->back();
  o.stage = StageWithDssync;
  const bool json = f->cj.format == "json";
  StageOrStreamResult r;
  Status s = RunStageOrStream(o, &r, [&](const std::string& line) {
    std::fprintf(json ? stderr : stdout, "%s\n", line.c_str());
    std::fflush(json ? stderr : stdout);
  });
  if (!o.keep) {
    std::error_code ec;
    std::filesystem::remove_all(o.stage_dir, ec);
  }
  if (!s.ok()) return DsbenchFail(s);
  if (json) {
    std::printf("%s\n", DumpJson({{"stage_or_stream", StageOrStreamJson(o, r)}}).c_str());
  } else {
    std::fputs(RenderDsbenchFlags(StageOrStreamText(o, r)).c_str(), stdout);
  }
  return 0;
}

int RunReplayCommand(JobFlags* f) {
  if (Status s = ResolveJob(f); !s.ok()) return DsbenchFail(s);
  auto workers = ParseWorkerList(f->workers);
  if (!workers.ok()) return DsbenchFail(workers.status());
  bool json = f->format == "json";
  auto world = mpi::World::Start(nullptr, nullptr);
  if (!world.ok()) return DsbenchFail(world.status());
  if ((*world)->mpi()) {  // one rank of a training job across nodes (docs/mpi.md)
    if (workers->size() != 1) {
      return DsbenchFail(Status(Code::kInvalidArgument,
                                "--workers: one value under mpirun (a sweep is for one node)"));
    }
    ReplayOptions o = f->job;
    o.workers = workers->front();
    (*world)->set_tool("dsbench");
    (*world)->set_timeout(f->mpi_timeout);
    (*world)->set_json_errors(json);
    return RunReplayRanks(**world, o, json,
                          ProbeSystem(WithRank(f->job.dataset, (*world)->rank())));
  }
  SystemProbe probe = ProbeSystem(f->job.dataset);
  f->job.disk_device = probe.block_device;
  if (!json) {
    std::fputs(probe.ToText().c_str(), stdout);
    std::fflush(stdout);
  }
  nlohmann::json runs = nlohmann::json::array();
  bool starves = false, errors = false;
  std::vector<std::pair<int, ReplayResult>> sweep;
  for (int w : *workers) {
    if (StopRequested()) break;
    ReplayOptions o = f->job;
    o.workers = w;
    ReplayResult rr;
    bool first = sweep.empty();
    Status s = RunReplay(o, &rr, [&](const ReplayResult& r) {
      std::string need = RenderDsbenchFlags(RequirementText(o, r));
      if (!json && first && !need.empty()) std::printf("%s\n", need.c_str());
      std::fflush(stdout);
    });
    if (!s.ok()) return DsbenchFail(s);
    starves |= Starves(rr);
    errors |= rr.error_count > 0;
    if (json) {
      runs.push_back(ReplayJson(o, rr));
    } else {
      std::fputs(RenderDsbenchFlags(ReplayText(o, rr)).c_str(), stdout);
      std::fflush(stdout);
    }
    sweep.emplace_back(w, std::move(rr));
  }
  if (sweep.size() > 1) {
    WorkerSweep sw = SweepWorkers(sweep);
    starves = sw.starves();
    if (!json) std::fputs(RenderDsbenchFlags(WorkerSweepText(sw)).c_str(), stdout);
  }
  if (json) {
    nlohmann::json j = {{"dsbench", {{"probe", probe.ToJson()}}}};
    if (runs.size() == 1) {
      j["replay"] = runs[0];
    } else {
      j["replay_sweep"] = runs;
    }
    std::printf("%s\n", DumpJson(j).c_str());
  }
  return starves || errors ? 1 : 0;
}

}  // namespace

TrainingCommands::TrainingCommands(CLI::App& app) : f_(std::make_unique<Flags>()) {
  Flags* f = f_.get();
  f->replay = app.add_subcommand(
      "replay", "Replay a training job's reads against a dataset in any layout (or a tree)");
  f->replay
      ->add_option("DATASET", f->rj.job.dataset,
                   "A dataset (native, lmdb, wds, tfrecord, recordio), a .zip, or a directory "
                   "tree of files")
      ->required();
  AddJobFlags(f->replay, &f->rj, false);
  f->replay
      ->add_option("--mpi-timeout", f->rj.mpi_timeout,
                   "Under mpirun: seconds a rank waits for the others (an epoch's barrier) "
                   "before it aborts the job")
      ->capture_default_str();

  f->compare = app.add_subcommand(
      "compare",
      "Build every layout of a tree, replay the same job against each (cold, warm, local and "
      "slow storage), rank them, and write JSON and an HTML report");
  f->compare
      ->add_option("SRC_DIR", f->co.src,
                   "A directory tree of files; or a remote dataset (s3://, nfs://) with "
                   "--stage-dir: stream it, or stage it with dssync first?")
      ->required();
  f->compare->add_option("--stage-dir", f->stage_dir,
                         "SRC_DIR remote: where dssync stages it (a new local directory, removed "
                         "after unless --keep-staged)");
  f->compare->add_option("--train-epochs", f->train_epochs,
                         "SRC_DIR remote: the training job's epochs, for the recommendation "
                         "(default: state the break-even only)");
  f->compare->add_flag("--keep-staged", f->keep_staged, "Keep the staged copy");
  f->co.work_dir = "dsbench-compare";
  f->compare
      ->add_option("--work-dir", f->co.work_dir,
                   "Where the layouts are built (reused if present) and the reports written")
      ->capture_default_str();
  f->compare->add_option("--layouts", f->layouts,
                         "Comma list from dir,zip,native,lmdb,wds,tfrecord,recordio (default "
                         "dir,zip,native,lmdb,wds,tfrecord)");
  f->compare->add_option("--cache", f->caches, "cold, warm or cold,warm")->capture_default_str();
  f->compare->add_flag("--no-local", f->no_local,
                       "Not on local disk: only through the slow file system (--meta-latency) "
                       "and/or over NFS (--nfs-url)");
  f->compare->add_option("--nfs-url", f->co.nfs_url,
                         "Also replay every layout over real NFS: the nfs:// URL at which a "
                         "server serves WORK_DIR (or --nfs-root) (docs/nfs.md)");
  f->compare->add_option("--nfs-root", f->co.nfs_root,
                         "The local directory --nfs-url serves, when it is above WORK_DIR (so "
                         "that SRC, the dir layout, is read over NFS too; default WORK_DIR)");
  f->compare->add_flag("--label-from-dir", f->co.label_from_dir,
                       "Labels from class folders when building (as dspack convert)");
  f->compare->add_flag("--zip-store", f->zip_store, "Zip members stored, not deflated");
  f->compare->add_flag("--rebuild", f->co.rebuild, "Rebuild layouts already in --work-dir");
  f->compare->add_option("--html", f->html, "HTML report path (default WORK_DIR/report.html)");
  AddJobFlags(f->compare, &f->cj, true);
  f->compare
      ->add_option("--mpi-timeout", f->cj.mpi_timeout,
                   "Under mpirun: seconds a rank waits for the others (rank 0's builds, an "
                   "epoch's barrier) before it aborts the job")
      ->capture_default_str();

  f->slowfs = app.add_subcommand(
      "slowfs",
      "Serve SRC read-only at MNT with NFS-like round trips (FUSE) until Ctrl-C, for any loader");
  f->slowfs->add_option("SRC", f->sl_src, "The directory to serve")->required();
  f->slowfs->add_option("MNT", f->sl_mnt, "An existing empty directory to mount on")->required();
  f->slowfs->add_option("--meta-latency", f->sl_meta,
                        "Delay of each metadata request (lookup, getattr, open, readdir), "
                        "default 1ms");
  f->slowfs->add_option("--read-latency", f->sl_read,
                        "Delay of each READ request (up to 128 KiB), default 0");
}

TrainingCommands::~TrainingCommands() = default;

int TrainingCommands::Run(const std::string& command) {
  Flags* f = f_.get();
  if (f->replay->parsed()) return RunReplayCommand(&f->rj);
  if (f->slowfs->parsed()) {
    SlowfsOptions s;
    if (Status st = DurationFlag(f->sl_meta, "--meta-latency", &s.meta_latency); !st.ok()) {
      return DsbenchFail(st);
    }
    if (Status st = DurationFlag(f->sl_read, "--read-latency", &s.read_latency); !st.ok()) {
      return DsbenchFail(st);
    }
    auto m = SlowfsMount::Mount(f->sl_src, f->sl_mnt, s);
    if (!m.ok()) return DsbenchFail(m.status());
    std::printf("slowfs: %s served read-only at %s with %s; Ctrl-C to unmount\n", f->sl_src.c_str(),
                f->sl_mnt.c_str(), SlowfsText(s).c_str());
    std::fflush(stdout);
    Status st = m->WaitUntilStopped();
    if (!st.ok()) return DsbenchFail(st);
    std::printf("slowfs: unmounted %s\n", f->sl_mnt.c_str());
    return 0;
  }
  if (!f->compare->parsed()) return -1;
  if (f->co.src.find("://") != std::string::npos) return RunStageOrStreamCommand(f);

  CompareOptions& o = f->co;
  if (Status s = ResolveJob(&f->cj, &o.mode); !s.ok()) return DsbenchFail(s);
  o.job = f->cj.job;
  o.slowfs = f->cj.job.slowfs;
  o.job.slowfs.reset();
  o.local = !f->no_local;
  o.zip_deflate = !f->zip_store;
  if (!f->layouts.empty()) o.layouts = SplitList(f->layouts);
  o.caches.clear();
  for (const auto& c : SplitList(f->caches)) {
    auto cache = ParseCacheState(c);
    if (!cache.ok()) return DsbenchFail(cache.status());
    o.caches.push_back(*cache);
  }
  auto workers = ParseWorkerList(f->cj.workers);
  if (!workers.ok()) return DsbenchFail(workers.status());
  o.workers = *workers;
  if (!o.local && !o.slowfs && o.nfs_url.empty()) {
    return DsbenchFail(
        Status(Code::kInvalidArgument, "--no-local needs --meta-latency or --nfs-url"));
  }
  if (!o.nfs_url.empty() && o.nfs_url.rfind("nfs://", 0) != 0) {
    return DsbenchFail(Status(Code::kInvalidArgument,
                              "--nfs-url " + o.nfs_url + ": give an nfs://SERVER/EXPORT/... URL"));
  }
  bool json = f->cj.format == "json";
  auto world = mpi::World::Start(nullptr, nullptr);
  if (!world.ok()) return DsbenchFail(world.status());
  // Under mpirun: every rank replays its part of each run, rank 0 builds and reports
  // (docs/mpi.md#a-compare-across-nodes).
  const bool mpi = (*world)->mpi(), rank0 = (*world)->rank() == 0;
  if (mpi) {
    if (o.job.loader == Loader::kTorch) {
      return DsbenchFail(
          Status(Code::kInvalidArgument,
                 "--loader torch under mpirun: the DataLoader twin runs on one node; "
                 "compare with the model loader, or without mpirun"));
    }
    (*world)->set_tool("dsbench");
    (*world)->set_timeout(f->cj.mpi_timeout);
    (*world)->set_json_errors(json);
    o.ranks = CompareRanksOf(**world);
  }
  SystemProbe probe = ProbeSystem(o.src);
  o.job.disk_device = probe.block_device;
  if (!json && rank0) {
    std::fputs(probe.ToText().c_str(), stdout);
    std::fflush(stdout);
  }
  o.build_layout = [](const std::string& src, const std::string& out, Format format,
                      bool label_from_dir) {
    ConvertOptions c;
    c.src = src;
    c.out = out;
    c.format = format;
    c.label_from_dir = label_from_dir;
    ConvertReport report;
    return Convert(c, &report);
  };
  CompareResult r;
  Status s = RunCompare(o, &r, [&](const std::string& line) {
    if (!rank0) return;
    std::fprintf(json ? stderr : stdout, "%s\n", line.c_str());
    std::fflush(json ? stderr : stdout);
  });
  if (!s.ok()) return mpi ? FailRank(**world, s) : DsbenchFail(s);
  if (!rank0) return 0;
  nlohmann::json cj = CompareJson(o, r);
  // The context a design doc needs beside the figures: where and how they were measured.
  cj["host"] = {
      {"probe", probe.ToJson()}, {"dsbench_version", DSPACK_VERSION}, {"command", command}};
  nlohmann::json j = {{"dsbench", {{"probe", probe.ToJson()}}}, {"compare", cj}};
  std::string json_path = o.work_dir + "/compare.json";
  std::string html_path = f->html.empty() ? o.work_dir + "/report.html" : f->html;
  // Whole or not at all under the final names (path.tmp, fsync, rename).
  if (Status w = WriteFileAtomic(json_path, DumpJson(j) + "\n"); !w.ok()) return DsbenchFail(w);
  if (Status w = WriteFileAtomic(html_path, CompareHtml(cj)); !w.ok()) return DsbenchFail(w);
  if (json) {
    std::printf("%s\n", DumpJson(j).c_str());
  } else {
    std::fputs(RenderDsbenchFlags(CompareText(o, r)).c_str(), stdout);
    std::printf("report: %s\njson:   %s\n", html_path.c_str(), json_path.c_str());
  }
  return 0;
}

}  // namespace ds::bench
