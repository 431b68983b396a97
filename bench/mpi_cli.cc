#include "bench/mpi_cli.h"

#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>

#include "bench/ranks.h"
#include "bench/stop.h"
#include "src/human.h"

namespace ds::bench {

namespace {

constexpr std::string_view kTool = "dsbench";

int64_t SteadyNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

int FailRank(mpi::World& world, const Status& s) {
  return world.Fail(kTool, EscapeBytes(s.message()), ExitCode(s));
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
  int64_t t0 = 0;
  IoHooks hooks;
  int agreed = 0;  // non-zero: a rank failed to lay out its file; rank 0 has said which
  hooks.ready = [&](const Status& prepared) {
    agreed = world.Agree(prepared.ok() ? "" : EscapeBytes(prepared.message()), ExitCode(prepared),
                         "every rank's test file");
    t0 = SteadyNs();
    return agreed == 0 ? Status::Ok() : Status(Code::kBadInput, "another rank failed");
  };
  hooks.poll = [&](bool finished) {
    if (finished) {
      if (flags.stonewall) world.AnnounceDone();
      return false;
    }
    if (flags.stonewall) return world.AnyDone();
    world.Poll();
    return false;
  };
  auto run = RunIoJobs(o, hooks);
  if (agreed != 0) return agreed;  // reported by rank 0; this rank's file is removed
  if (!run.ok()) return FailRank(world, run.status());
  RankIo mine;
  mine.rank = rank;
  mine.host = world.host();
  mine.result = MergeJobResults(o.name, run->jobs);
  mine.result.start_ns -= t0;
  mine.result.end_ns -= t0;
  auto all = world.Gather(EncodeRankIo(mine), "the ranks' results");
  if (!all.ok()) return FailRank(world, all.status());
  if (rank != 0) return 0;
  if (!shared_created.empty() && !o.keep) ::unlink(shared_created.c_str());
  std::vector<RankIo> ranks;
  for (const auto& text : *all) {
    auto r = DecodeRankIo(text);
    if (!r.ok()) return FailRank(world, r.status());
    ranks.push_back(std::move(*r));
  }
  ClusterIo c = AggregateRanks(std::move(ranks), flags.stonewall);
  if (flags.json) {
    nlohmann::json j = ClusterJson(o, c);
    if (run->disk) j["disk_util"] = nlohmann::json::array({run->disk->ToJson()});
    j["dsbench"] = {{"probe", probe.ToJson()},
                    {"interrupted", StopRequested()},
                    {"mpi", {{"world", world.size()}, {"launcher", mpi::LauncherEnv()}}}};
    std::printf("%s\n", j.dump(2).c_str());
  } else {
    std::fputs(probe.ToText().c_str(), stdout);
    std::fputs(ClusterText(o, c).c_str(), stdout);
    std::fputs((DiskUtilText(run->disk) + " (rank 0's host)\n").c_str(), stdout);
  }
  return 0;
}

}  // namespace ds::bench
