#include "bench/mpi_cli.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <system_error>

#include "bench/common/latency_report.h"
#include "bench/io/ranks.h"
#include "bench/io_cli.h"
#include "bench/meta/meta_ranks.h"
#include "bench/replay/replay_ranks.h"
#include "src/human.h"
#include "src/io_engine.h"
#include "src/stop.h"

namespace ds::bench {

namespace {

// The hooks that make RunIoJobs one rank's part: the job agrees on every rank's test file (the
// start barrier); `poll` lets rank 0 take other ranks' failures and, with stonewall, stops this
// rank when another has finished.
IoHooks RankHooks(mpi::World& world, bool stonewall) {
  IoHooks hooks;
  hooks.job = &world;
  hooks.poll = [&world, stonewall](bool finished) {
    if (finished) {
      if (stonewall) world.AnnounceDone();
      return false;
    }
    if (stonewall) return world.AnyDone();
    world.Poll();
    return false;
  };
  return hooks;
}

// This rank's jobs (merged, times relative to its start barrier at t0) to rank 0, which gets
// them all aggregated; the other ranks get an empty ClusterIo.
Result<ClusterIo> GatherRanks(mpi::World& world, const std::string& name,
                              const std::vector<JobResult>& jobs, int64_t t0, bool stonewall) {
  RankIo mine;
  mine.rank = world.rank();
  mine.host = world.host();
  mine.result = MergeJobResults(name, jobs);
  mine.result.start_ns -= t0;
  mine.result.end_ns -= t0;
  DS_ASSIGN_OR_RETURN(auto all, world.Gather(EncodeRankIo(mine), "the ranks' results"));
  if (world.rank() != 0) return ClusterIo{};
  std::vector<RankIo> ranks;
  for (const auto& text : all) {
    DS_ASSIGN_OR_RETURN(RankIo r, DecodeRankIo(text));
    ranks.push_back(std::move(r));
  }
  return AggregateRanks(std::move(ranks), stonewall);
}

}  // namespace

int RunIoRanks(mpi::World& world, IoJobOptions o, const MpiIoFlags& flags,
               const SystemProbe& probe) {
  const int rank = world.rank();
  const bool per_rank_path = o.path.find("%r") != std::string::npos;
  o.path = WithRank(o.path, rank);
  struct stat st;
  bool dir = ::stat(o.path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
  // A directory: a file per rank unless shared. A file: one file, a region per rank, unless its
  // name has %r (each rank its own file, whole). Rank 0's view decides for all, so that every
  // rank takes the same collectives.
  bool share = flags.shared_file || (!dir && !per_rank_path);
  auto mode = world.Broadcast(share ? "shared" : "per-rank", 0, "the plan");
  if (!mode.ok()) return FailRank(world, mode.status());
  bool shared = *mode == "shared";
  if (shared && !dir && o.size == 0 && ::stat(o.path.c_str(), &st) == 0) {
    o.size = static_cast<uint64_t>(st.st_size) / static_cast<uint64_t>(world.size());
  }
  std::string shared_created;  // rank 0: the shared file it laid out (removed at the end)
  if (shared) {
    // Rank 0 lays the whole file out (world * size bytes), then every rank works on its slice.
    std::string made = "0";
    if (rank == 0 && dir) {
      IoJobOptions whole = o;
      whole.offset = 0;
      whole.size = o.size * static_cast<uint64_t>(world.size());
      auto f = PrepareTestFile(whole);
      if (!f.ok()) return FailRank(world, f.status());
      o.path = f->path;
      if (f->created) shared_created = f->path;
      made = f->created ? "1" : "0";
    }
    auto path = world.Broadcast(o.path + "\n" + made, 0, "the shared test file");
    if (!path.ok()) return FailRank(world, path.status());
    o.path = path->substr(0, path->rfind('\n'));
    if (path->back() == '1') o.allow_overwrite = true;  // dsbench made it: writing is fine
    o.offset = o.size * static_cast<uint64_t>(rank);
  } else if (dir) {
    o.file_name = "dsbench." + o.name + ".r" + std::to_string(rank) + ".0";
  }
  // IOR's -i: the same job `repetitions` times, each starting on its own barrier; the test
  // file is laid out once and kept between them.
  std::vector<ClusterIo> reps;
  Result<IoRun> run = Status(Code::kInternal, "no repetition ran");
  const bool keep = o.keep;
  // A file per rank that the first repetition makes is this rank's to remove after the last.
  std::string own_file = dir && !shared ? o.path + "/" + o.file_name : "";
  if (!own_file.empty() && ::access(own_file.c_str(), F_OK) == 0) own_file.clear();
  for (unsigned i = 0; i < flags.repetitions; i++) {
    o.keep = keep || i + 1 < flags.repetitions;
    run = RunIoJobs(o, RankHooks(world, flags.stonewall));
    if (int code = ReportAgreed(world); code != 0) {  // RunIoJobs removed what it made this time
      if (!own_file.empty() && !keep) ::unlink(own_file.c_str());
      if (!shared_created.empty() && !keep) ::unlink(shared_created.c_str());
      return code;
    }
    if (!run.ok()) return FailRank(world, run.status());
    auto cluster = GatherRanks(world, o.name, run->jobs, run->start_barrier_ns, flags.stonewall);
    if (!cluster.ok()) return FailRank(world, cluster.status());
    reps.push_back(std::move(*cluster));
    if (flags.stonewall) {
      if (Status s = world.EndRound(); !s.ok()) return FailRank(world, s);
    }
  }
  if (!own_file.empty() && !keep) ::unlink(own_file.c_str());
  if (rank != 0) return 0;
  if (!shared_created.empty() && !keep) ::unlink(shared_created.c_str());
  const ClusterIo& c = reps.back();
  if (flags.json) {
    nlohmann::json j = ClusterJson(o, c);
    if (reps.size() > 1) j["repetitions"] = RepetitionsJson(reps);
    if (run->disk) j["disk_util"] = nlohmann::json::array({run->disk->ToJson()});
    j["dsbench"] = {{"probe", probe.ToJson()},
                    {"interrupted", StopRequested()},
                    {"mpi", {{"world", world.size()}, {"launcher", mpi::LauncherEnv()}}}};
    std::printf("%s\n", DumpJson(j).c_str());
  } else {
    std::fputs(probe.ToText().c_str(), stdout);
    if (reps.size() > 1) std::fputs("last repetition:\n", stdout);
    std::fputs(ClusterText(o, c).c_str(), stdout);
    if (reps.size() > 1) std::fputs(RepetitionsText(reps).c_str(), stdout);
    std::fputs((DiskUtilText(run->disk) + " (rank 0's host)\n").c_str(), stdout);
  }
  return 0;
}

int RunStorageRanks(mpi::World& world, StorageOptions so, uint64_t min_aggregate_bw, bool json,
                    const SystemProbe& probe) {
  const int rank = world.rank();
  so.path = WithRank(so.path, rank);
  so.file_name = "dsbench.storage.r" + std::to_string(rank) + ".0";
  // One engine for all: a rank that fell back to psync alone would run its jobs twice and
  // take its barriers twice. Every rank tries io_uring; if one cannot, all use psync.
  EngineOptions eo;
  eo.depth = 32;
  bool no_uring = !MakeEngine(so.ioengine, eo).ok();
  auto without = world.SumAll(no_uring ? 1 : 0, "the IO engine");
  if (!without.ok()) return FailRank(world, without.status());
  if (*without > 0) {
    if (rank == 0) {
      std::fprintf(stderr, "dsbench: warning: %llu of %d ranks cannot use %s; all use psync\n",
                   static_cast<unsigned long long>(*without), world.size(), so.ioengine.c_str());
    }
    so.ioengine = "psync";
  }
  so.hooks = RankHooks(world, false);
  auto r = RunStorage(
      so, [](const std::string& w) { std::fprintf(stderr, "dsbench: warning: %s\n", w.c_str()); });
  if (int code = ReportAgreed(world); code != 0) return code;
  if (!r.ok()) return FailRank(world, r.status());
  // One start barrier per job (RunStorage does not fall back to psync in a job).
  auto seq = GatherRanks(world, r->seq_job.name, r->seq.jobs, r->seq.start_barrier_ns, false);
  if (!seq.ok()) return FailRank(world, seq.status());
  auto rnd = GatherRanks(world, r->rnd_job.name, r->rnd.jobs, r->rnd.start_barrier_ns, false);
  if (!rnd.ok()) return FailRank(world, rnd.status());
  int verdict = 0;
  if (rank == 0) {
    ClusterStorageVerdict v = JudgeCluster(*seq, *rnd, so, min_aggregate_bw);
    if (json) {
      nlohmann::json j = ClusterStorageJson(so, r->seq_job, r->rnd_job, *seq, *rnd, v);
      j["probe"] = probe.ToJson();
      j["mpi"] = {{"world", world.size()}, {"launcher", mpi::LauncherEnv()}};
      std::printf("%s\n", DumpJson(j).c_str());
    } else {
      std::fputs(probe.ToText().c_str(), stdout);
      std::fputs(RenderDsbenchFlags(ClusterStorageText(so, *seq, *rnd, v)).c_str(), stdout);
    }
    std::fflush(stdout);
    verdict = v.pass() ? 0 : 1;
  }
  // Every rank exits with the verdict, so mpirun's exit code is the verdict's.
  auto code = world.Broadcast(std::to_string(verdict), 0, "the verdict");
  if (!code.ok()) return FailRank(world, code.status());
  return std::stoi(*code);
}

int FailRank(mpi::World& world, const Status& s) {
  world.Fail(kDsbench, EscapeBytes(RenderDsbenchFlags(s.message())), ExitCode(s));
  return ExitCode(s);
}

int ReportAgreed(mpi::World& world) {
  const auto& f = world.agreed_failure();
  if (!f) return 0;
  const int code = ExitCode(f->status);
  world.ReportAgreed(*f, EscapeBytes(RenderDsbenchFlags(f->status.message())), code);
  return code;
}

CompareRanks CompareRanksOf(mpi::World& world) { return CompareRanks{&world, world.host()}; }

int RunReplayRanks(mpi::World& world, ReplayOptions o, bool json, const SystemProbe& probe) {
  const int rank = world.rank();
  o.dataset = WithRank(o.dataset, rank);
  o.rank = static_cast<uint32_t>(rank);
  o.world = static_cast<uint32_t>(world.size());
  o.progress = false;  // N bars on one terminal would only garble each other
  o.before_epoch = EpochBarrier(world);
  ReplayResult rr;
  Status s = RunReplay(o, &rr, [&](const ReplayResult& r) {
    std::string need = RenderDsbenchFlags(RequirementText(o, r));
    if (rank == 0 && !json) {
      std::fputs(probe.ToText().c_str(), stdout);
      if (!need.empty()) std::printf("per rank, %s\n", need.c_str());
      std::fflush(stdout);
    }
  });
  if (!s.ok()) return FailRank(world, s);
  auto all = world.Gather(EncodeRankReplay(RankReplayOf(rank, world.host(), rr)),
                          "the ranks' replay results");
  if (!all.ok()) return FailRank(world, all.status());
  int code = 0;
  if (rank == 0) {
    std::vector<RankReplay> ranks;
    for (const auto& text : *all) {
      auto r = DecodeRankReplay(text);
      if (!r.ok()) return FailRank(world, r.status());
      ranks.push_back(std::move(*r));
    }
    ClusterReplay c = AggregateReplay(std::move(ranks));
    bool errors = false;
    for (const auto& r : c.ranks) {
      for (const auto& e : r.epochs) errors |= e.errors > 0;
    }
    if (json) {
      nlohmann::json j = {{"dsbench",
                           {{"probe", probe.ToJson()},
                            {"mpi", {{"world", world.size()}, {"launcher", mpi::LauncherEnv()}}}}},
                          {"replay_ranks", ClusterReplayJson(o, c)}};
      std::printf("%s\n", DumpJson(j).c_str());
    } else {
      for (const auto& n : rr.notes) std::printf("note (rank 0): %s\n", n.c_str());
      std::fputs(RenderDsbenchFlags(ClusterReplayText(o, c)).c_str(), stdout);
    }
    std::fflush(stdout);
    code = c.starves() || errors ? 1 : 0;
  }
  auto verdict = world.Broadcast(std::to_string(code), 0, "the verdict");
  if (!verdict.ok()) return FailRank(world, verdict.status());
  return std::stoi(*verdict);
}

namespace {

// Removes paths, then the directory `also` once it is empty (the other ranks may still be
// removing theirs: retried for up to 30 s), from a process of its own in a session of its own:
// mpirun SIGKILLs this rank about a second after its SIGTERM, which a tree of 70,000 entries
// outlasts. Without a process (fork failed), here.
void RemoveDetached(const std::vector<std::string>& paths, const std::string& also) {
  int ready[2];
  const bool piped = ::pipe(ready) == 0;
  pid_t pid = ::fork();
  if (pid > 0) {
    // Until the child is in its own session, a kill of this rank's process group reaches it.
    if (piped) {
      ::close(ready[1]);
      char c;
      while (::read(ready[0], &c, 1) < 0 && errno == EINTR) {
      }
      ::close(ready[0]);
    }
    return;
  }
  if (pid == 0) {
    ::setsid();
    if (piped) {
      ::close(ready[0]);
      ::close(ready[1]);  // EOF for the parent: this process has left the process group
    }
  } else if (piped) {
    ::close(ready[0]);
    ::close(ready[1]);
  }
  std::error_code ec;
  for (const auto& p : paths) std::filesystem::remove_all(p, ec);
  for (int i = 0; !also.empty() && i < 300; i++) {
    if (::rmdir(also.c_str()) == 0 || errno == ENOENT) break;
    ::usleep(100000);
  }
  if (pid == 0) std::_Exit(0);
}

}  // namespace

int RunMetaRanks(mpi::World& world, MetaOptions mo, bool shared_dir, bool json,
                 const SystemProbe& probe) {
  const int rank = world.rank();
  mo.path = WithRank(mo.path, rank);
  // One name for the job, from rank 0's pid: a directory per rank (mdtest -u) or one for all.
  auto pid = world.Broadcast(std::to_string(::getpid()), 0, "the run's name");
  if (!pid.ok()) return FailRank(world, pid.status());
  mo.root_name = "dsbench-meta." + *pid;
  // Every rank's plan (PATH, free space and inodes) is agreed on before anything is made.
  (void)world.Agree(CheckMetaPlan(mo), "every rank's plan");
  if (int code = ReportAgreed(world); code != 0) return code;
  if (shared_dir) {
    mo.root_exists = true;
    mo.thread_base = static_cast<unsigned>(rank) * mo.threads;
    Status made;  // rank 0 makes the shared directory; its failure is everyone's
    if (rank == 0 && ::mkdir(MetaRoot(mo).c_str(), 0755) != 0) {
      made = Status::FromErrno(errno, MetaRoot(mo) + ": mkdir");
    }
    (void)world.Agree(made, "the shared directory");
    if (int code = ReportAgreed(world); code != 0) return code;
  } else {
    mo.root_name += ".r" + std::to_string(rank);
  }
  // Killed from outside (mpirun ends the job when a rank dies): the tree goes with this rank.
  world.set_stop(StopRequested);
  if (!mo.keep) {
    world.set_abort_cleanup(
        [paths = MetaOwnedPaths(mo), root = MetaRoot(mo), shared = shared_dir && rank == 0] {
          RemoveDetached(paths, shared ? root : std::string());
        });
  }
  mo.job = &world;
  auto r = RunMeta(mo);
  world.set_abort_cleanup(nullptr);                     // RunMeta removed what it made
  if (int agreed = ReportAgreed(world); agreed != 0) {  // this rank's files are removed
    if (shared_dir && rank == 0 && !mo.keep) {
      // The others may still be removing theirs: wait for them, then the directory.
      (void)world.Barrier("every rank's cleanup");
      ::rmdir(MetaRoot(mo).c_str());
    } else if (shared_dir) {
      (void)world.Barrier("every rank's cleanup");
    }
    return agreed;
  }
  if (!r.ok()) return FailRank(world, r.status());
  RankMeta mine{rank, world.host(), r->phases};
  auto all = world.Gather(EncodeRankMeta(mine), "the ranks' meta results");
  if (!all.ok()) return FailRank(world, all.status());
  if (!r->cleanup_note.empty()) {
    std::fprintf(stderr, "dsbench: warning: rank %d: cleanup: %s\n", rank, r->cleanup_note.c_str());
  }
  if (rank != 0) return 0;
  if (shared_dir && !mo.keep && ::rmdir(MetaRoot(mo).c_str()) != 0) {
    std::fprintf(stderr, "dsbench: warning: cleanup: %s\n",
                 Status::FromErrno(errno, MetaRoot(mo) + ": rmdir").message().c_str());
  }
  std::vector<RankMeta> ranks;
  for (const auto& text : *all) {
    auto d = DecodeRankMeta(text);
    if (!d.ok()) return FailRank(world, d.status());
    ranks.push_back(std::move(*d));
  }
  auto phases = AggregateMeta(ranks);
  if (json) {
    nlohmann::json j = {{"dsbench",
                         {{"probe", probe.ToJson()},
                          {"interrupted", StopRequested()},
                          {"mpi", {{"world", world.size()}, {"launcher", mpi::LauncherEnv()}}}}},
                        {"meta", MetaJson(mo, *r)},
                        {"meta_ranks", ClusterMetaJson(ranks, phases, shared_dir)}};
    std::printf("%s\n", DumpJson(j).c_str());
  } else {
    std::fputs(probe.ToText().c_str(), stdout);
    std::fputs(("rank 0: " + MetaPlanText(mo)).c_str(), stdout);
    std::fputs(ClusterMetaText(ranks, phases, shared_dir).c_str(), stdout);
  }
  return 0;
}

}  // namespace ds::bench
