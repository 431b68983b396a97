// dssync's two commands (sync/sync_cli.h): flags in, the sync/ library called, the report out.
#include "sync/sync_cli.h"

#include <fmt/format.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <new>
#include <nlohmann/json.hpp>

#include "mpi/world.h"
#include "src/cli_args.h"
#include "src/human.h"
#include "sync/staged.h"
#include "sync/syncer.h"

namespace {

// The library's option fields (src/status.h, RenderOptionNames) as this CLI's flags.
constexpr ds::OptionName kFlags[] = {
    {"follow_symlinks", "--follow-symlinks"},
    {"delete", "--delete"},
    {"max_bytes", "--max-bytes"},
    {"world", "--world"},
    {"version_name", "--version-name"},
};
constexpr std::string_view kTool = "dssync";

std::string Render(const std::string& message) {
  return ds::EscapeBytes(ds::RenderOptionNames(message, kFlags));
}

int Fail(const ds::Status& s) { return ds::Fail(kTool, s, kFlags); }

// Prints per-file errors (at most 20 lines) and returns the exit code they call for. A run that
// its storage stopped (an environment error, exit 2: a server gone, a dead disk) says so once,
// in one line: every file after it failed for the same reason, and a rerun resumes them.
int ReportErrors(const std::vector<ds::Status>& errors) {
  for (const ds::Status& e : errors) {
    if (ds::ExitCode(e) != 2) continue;
    std::fprintf(stderr, "dssync: %s (%zu file%s not staged; the same command resumes)\n",
                 Render(e.message()).c_str(), errors.size(), errors.size() == 1 ? "" : "s");
    return 2;
  }
  int rc = 0;
  for (size_t i = 0; i < errors.size(); ++i) {
    if (i < 20) std::fprintf(stderr, "dssync: %s\n", Render(errors[i].message()).c_str());
    rc = std::max(rc, ds::ExitCode(errors[i]));
  }
  if (errors.size() > 20) std::fprintf(stderr, "dssync: ... and %zu more\n", errors.size() - 20);
  return rc;
}

int Verify(int argc, char** argv) {
  CLI::App app{"dssync verify: re-hash a staged copy against its .dssync-manifest.json"};
  std::string dst;
  int threads = 16;
  bool json = false, quiet = false;
  app.add_option("DST", dst, "staged directory (or its parent holding `current`)")->required();
  app.add_option("--threads", threads, "files hashed in parallel")->check(CLI::Range(1, 1024));
  app.add_flag("--json", json, "print a JSON summary");
  app.add_flag("-q,--quiet", quiet, "print nothing on success");
  if (int rc = ds::ParseArgs(kTool, app, argc, argv); rc >= 0) return rc;
  auto r = ds::sync::VerifyStaged(dst, threads);
  if (!r.ok()) return Fail(r.status());
  int rc = ReportErrors(r->problems);
  if (json) {
    std::printf("%s\n", nlohmann::json{{"dir", r->dir},
                                       {"files", r->files},
                                       {"bytes", r->bytes},
                                       {"problems", r->problems.size()}}
                            .dump()
                            .c_str());
  } else if (!quiet || rc != 0) {
    std::printf("%s: %lu files (%s) checked, %zu problems\n", r->dir.c_str(),
                static_cast<unsigned long>(r->files), ds::FormatBytes(r->bytes).c_str(),
                r->problems.size());
  }
  return rc;
}

void PrintSummary(const ds::sync::SyncReport& r, bool json) {
  double bps = r.seconds > 0 ? static_cast<double>(r.bytes) / r.seconds : 0;
  if (json) {
    nlohmann::json j{{"target", r.target},
                     {"files", r.files},
                     {"bytes", r.bytes},
                     {"seconds", r.seconds},
                     {"bytes_per_sec", bps},
                     {"skipped_unchanged", r.skipped_unchanged},
                     {"recopied", r.recopied},
                     {"verified", r.verified},
                     {"resumed_bytes", r.resumed_bytes},
                     {"deleted", r.deleted},
                     {"errors", r.errors.size()},
                     {"rank", r.rank.rank},
                     {"world", r.rank.world},
                     {"shards",
                      {{"total", r.shards_total},
                       {"assigned", r.shards_assigned},
                       {"staged", r.shards_staged},
                       {"staged_bytes", r.staged_shard_bytes}}}};
    std::printf("%s\n", j.dump().c_str());
    return;
  }
  std::printf(
      "staged %lu files (%s) into %s in %s, %s; %lu unchanged skipped, %lu verified "
      "against %s, %lu recopied\n",
      static_cast<unsigned long>(r.files), ds::FormatBytes(r.bytes).c_str(), r.target.c_str(),
      ds::FormatDuration(r.seconds).c_str(), ds::FormatRate(bps).c_str(),
      static_cast<unsigned long>(r.skipped_unchanged), static_cast<unsigned long>(r.verified),
      r.manifest.empty() ? "a manifest" : r.manifest.c_str(),
      static_cast<unsigned long>(r.recopied));
  if (r.rank.world > 1 || r.subset) {
    std::printf(
        "rank %u of %u (%s): %lu of %lu shards assigned; staged the first %lu of them, %s\n",
        r.rank.rank, r.rank.world, r.rank.source.c_str(),
        static_cast<unsigned long>(r.shards_assigned), static_cast<unsigned long>(r.shards_total),
        static_cast<unsigned long>(r.shards_staged), ds::FormatBytes(r.staged_shard_bytes).c_str());
  }
}

}  // namespace

namespace ds::sync {

int VerifyCommand(int argc, char** argv) { return ::Verify(argc, argv); }

int StageCommand(int argc, char** argv) {
  CLI::App app{"dssync: stage a dataset onto local disk: parallel, verified, atomic, resumable"};
  app.set_version_flag("--version", std::string("dssync ") + DSPACK_VERSION);
  app.footer(
      "Also: dssync verify DST. Exit codes: 0 ok, 1 bad data, 2 usage/environment. "
      "Details: docs/dssync.md");
  ds::sync::SyncOptions o;
  std::string chunk = "64MiB", bwlimit, max_bytes;
  double fraction = -1;
  uint32_t rank = 0, world = 0;
  bool json = false, quiet = false, no_space_check = false;
  app.add_option("SRC", o.src, "dataset directory or any directory tree")->required();
  app.add_option("DST", o.dst, "staging directory (created)")->required();
  app.add_option("--threads", o.threads, "files/chunks in flight (default 16)")
      ->check(CLI::Range(1, 1024));
  app.add_option("--chunk-size", chunk, "large files are copied in chunks of this size (64MiB)");
  app.add_flag("--direct", o.direct, "O_DIRECT writes on DST where the file system allows it");
  app.add_flag("--checksum", o.checksum, "skip unchanged files by XXH3 instead of size+mtime");
  app.add_flag("--delete", o.del, "remove files under DST that SRC no longer holds");
  app.add_flag("--follow-symlinks", o.follow_symlinks,
               "copy the targets of symlinks pointing outside SRC (default: skip with a warning)");
  app.add_option("--bwlimit", bwlimit, "bandwidth limit, e.g. 200MB/s");
  auto* r_opt = app.add_option("--rank", rank, "this rank (default: SLURM_PROCID, ...)");
  auto* w_opt = app.add_option("--world", world, "number of ranks (default: SLURM_NTASKS, ...)");
  std::string assign = "bytes";
  app.add_option("--assign", assign,
                 "how shards go to ranks: bytes (largest first to the rank with the fewest bytes, "
                 "as dspack.torch.StreamDataset) or round-robin (shard i to rank i % world)")
      ->check(CLI::IsMember({"bytes", "round-robin"}));
  auto* mb_opt = app.add_option("--max-bytes", max_bytes,
                                "stage only the first shards of this rank's assignment fitting "
                                "SIZE (metadata always)");
  auto* fr_opt = app.add_option("--fraction", fraction,
                                "like --max-bytes, as a fraction of the rank's shard bytes")
                     ->check(CLI::Range(0.0, 1.0));
  mb_opt->excludes(fr_opt);
  app.add_option("--version-name", o.version_name,
                 "stage into DST/NAME, then switch the DST/current symlink to it");
  bool fanout = false;
  app.add_flag("--fanout", fanout,
               "under mpirun: every rank stages the whole dataset into its own DST (%r: the "
               "rank), and SRC is read once, by rank 0, which broadcasts each chunk");
  app.add_flag("--json", json, "print a JSON summary");
  app.add_flag("-q,--quiet", quiet, "print only errors");
  app.add_flag("--no-space-check", no_space_check)->group("");  // tests: force ENOSPC mid-copy
  ds::AddNfsFlags(app);
  if (int rc = ds::ParseArgs(kTool, app, argc, argv); rc >= 0) return rc;

  ds::Status st = ds::SizeFlag(chunk, "--chunk-size", &o.chunk_size);
  if (st.ok() && (o.chunk_size == 0 || o.chunk_size % 4096 != 0)) {
    st = ds::Status(ds::Code::kInvalidArgument, "--chunk-size: must be a multiple of 4 KiB");
  }
  if (st.ok() && !bwlimit.empty()) st = ds::SizeFlag(bwlimit, "--bwlimit", &o.bwlimit);
  if (st.ok() && !max_bytes.empty()) {
    uint64_t b = 0;
    st = ds::SizeFlag(max_bytes, "--max-bytes", &b);
    o.max_bytes = b;
  }
  if (!st.ok()) return ::Fail(st);
  if (*r_opt) o.rank = rank;
  if (*w_opt) o.world = world;
  o.assign = assign == "bytes" ? ds::ShardPolicy::kBalancedBytes : ds::ShardPolicy::kRoundRobin;
  if (*fr_opt) o.fraction = fraction;
  o.space_check = !no_space_check;
  o.progress = !json && !quiet;
  o.warn = [](const std::string& w) {
    std::fprintf(stderr, "dssync: warning: %s\n", Render(w).c_str());
  };
  // MPI only for --fanout: a rank-split run needs no collectives (rank and world come from the
  // launcher's environment), and its ranks may finish far apart.
  std::unique_ptr<ds::mpi::World> job;
  if (fanout) {
    if (ds::mpi::LauncherEnv().empty()) {
      return ::Fail(
          ds::Status(ds::Code::kInvalidArgument,
                     "--fanout needs an MPI job: run it under mpirun or srun (docs/mpi.md)"));
    }
    if (*r_opt || *w_opt || mb_opt->count() > 0 || *fr_opt) {
      return ::Fail(ds::Status(ds::Code::kInvalidArgument,
                               "--fanout stages the whole dataset on every rank: drop --rank, "
                               "--world, --max-bytes and --fraction"));
    }
    auto started = ds::mpi::World::Start(&argc, &argv);
    if (!started.ok()) return ::Fail(started.status());
    job = std::move(*started);
    job->set_tool(std::string(kTool));
    job->set_json_errors(json);
    o.fanout = job.get();  // mpi::World is the job (src/job.h): rank 0 reads
    if (job->rank() != 0) o.progress = false;
  }
  // %r in SRC or DST: this rank's own path (the rank from MPI, else from the environment).
  if (o.src.find("%r") != std::string::npos || o.dst.find("%r") != std::string::npos) {
    uint32_t me = 0;
    if (job) {
      me = static_cast<uint32_t>(job->rank());
    } else {
      auto rw =
          ds::sync::ResolveRank(o.rank, o.world, [](const char* n) { return std::getenv(n); });
      if (!rw.ok()) return ::Fail(rw.status());
      me = rw->rank;
    }
    for (std::string* path : {&o.src, &o.dst}) {
      for (size_t p = path->find("%r"); p != std::string::npos; p = path->find("%r", p)) {
        path->replace(p, 2, std::to_string(me));
      }
    }
  }
  auto r = ds::sync::Sync(o);
  if (!r.ok()) {
    if (job) {
      job->Fail(kTool, Render(r.status().message()), ds::ExitCode(r.status()));
      return ds::ExitCode(r.status());
    }
    return ::Fail(r.status());
  }
  int rc = ReportErrors(r->errors);
  if (json || !quiet) PrintSummary(*r, json);
  return rc;
}

}  // namespace ds::sync
