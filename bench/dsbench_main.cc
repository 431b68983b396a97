// dsbench: storage benchmarks for ML training data (docs/dsbench.md). Parses flags and calls
// the bench/ library. Exit codes: 0 ok (storage: PASS), 1 storage: FAIL / replay: STARVES,
// corrupt samples or bad input data, 2 usage or IO error (ExitCode, src/status.h).
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <cstdio>

#include "bench/fio_options.h"
#include "bench/io_cli.h"
#include "bench/latency_report.h"
#include "bench/meta.h"
#include "bench/mpi_cli.h"
#include "bench/stop.h"
#include "bench/storage.h"
#include "bench/training_cli.h"
#include "src/cli_args.h"
#include "src/human.h"
#include "src/system_probe.h"

namespace {

constexpr std::string_view kTool = "dsbench";

int Fail(const ds::Status& s) { return ds::bench::DsbenchFail(s); }

// A flag that only means something for the ranks of an MPI job, given to a plain run.
ds::Status NeedsMpi(std::string_view flag) {
  return ds::Status(ds::Code::kInvalidArgument,
                    std::string(flag) + " is for a run under mpirun or srun (docs/mpi.md)");
}

}  // namespace

static int Run(int argc, char** argv) try {
  CLI::App app{"dsbench: can this storage feed ML training? fio-compatible IO jobs and a verdict"};
  app.set_version_flag("--version", std::string("dsbench ") + DSPACK_VERSION);
  app.require_subcommand(1);
  app.footer(
      "Exit codes: 0 ok / PASS, 1 FAIL (storage verdict; replay: the job STARVES or samples\n"
      "failed their checks), 2 usage or IO error.\n"
      "Docs: docs/dsbench.md");

  ds::bench::IoJobOptions o;
  double mpi_timeout = 600;  // --mpi-timeout of io, storage and meta
  auto* io = app.add_subcommand(
      "io",
      "Run fio jobs: from fio job files (JOB.fio) and/or fio's options, against PATH (a "
      "directory or file) or fio's --filename/--directory");
  // fio's options are parsed by bench/fio_options.h (its table is the help below); CLI11 takes
  // dsbench's own flags and hands every other word over, in order.
  io->allow_extras();
  io->positionals_at_end(false);
  io->footer("\n" + ds::bench::FioOptionsHelp() +
             "Arguments: JOB.fio (or a file starting with '[') is a fio job file; another PATH "
             "is the target (a directory: files NAME.N.0 in it; a file: used as is). Options on "
             "the command line override the files'; each --name starts a job.");
  io->add_flag("--keep", o.keep, "Keep the test files dsbench created (fio's unlink=0)");
  io->add_flag("--allow-device", o.allow_device, "Allow PATH to be a block device");
  io->add_flag("--allow-overwrite", o.allow_overwrite,
               "Allow a write job on an existing file (its bytes are overwritten)");
  ds::bench::MpiIoFlags mpi_io;
  io->add_flag("--shared-file", mpi_io.shared_file,
               "Under mpirun: one test file, rank r's --size bytes at offset r*size (IOR "
               "without -F); default: a file per rank, PATH/dsbench.<name>.r<rank>.0");
  io->add_flag("--mpi-stonewall", mpi_io.stonewall,
               "Under mpirun: all ranks stop when the first one finishes, and only the IO done "
               "by then counts (IOR's -D wear-out, mdtest's -W)");
  io->add_option("--repetitions", mpi_io.repetitions,
                 "Under mpirun: run the job this many times (IOR's -i) and report min/max/mean")
      ->check(CLI::Range(1u, 1000u))
      ->capture_default_str();
  io->add_option("--mpi-timeout", mpi_timeout,
                 "Under mpirun: seconds a rank waits for the others at a barrier or a gather "
                 "before it aborts the job")
      ->capture_default_str();

  std::string min_bw = "500MB/s", ssize = "", sruntime = "";
  uint64_t min_iops = 5000;
  bool quick = false, sjson = false, skeep = false;
  bool sdirect = true;
  auto* storage = app.add_subcommand("storage",
                                     "Verdict: sequential 1 MiB read and random 4 KiB "
                                     "read against the bar (default 500MB/s, 5000 IOPS)");
  std::string spath;
  storage->add_option("PATH", spath)->required();
  storage->add_option("--min-bw", min_bw, "Sequential read bar")->capture_default_str();
  storage->add_option("--min-iops", min_iops, "Random 4k read bar")->capture_default_str();
  storage->add_option("--size", ssize, "Test file size (default 8G, --quick 1G)");
  storage->add_option("--runtime", sruntime, "Seconds per test (default 30, --quick 5)");
  storage->add_option("--direct", sdirect, "1 = O_DIRECT (default)")->capture_default_str();
  storage->add_flag("--quick", quick, "Short run: a first look, not a verdict to trust");
  storage->add_flag("--json", sjson, "Print results as JSON");
  storage->add_flag("--keep", skeep, "Keep the test file");
  std::string min_aggregate_bw = "0";
  storage
      ->add_option("--min-aggregate-bw", min_aggregate_bw,
                   "Under mpirun: also require this aggregate sequential read (0 = none)")
      ->capture_default_str();
  storage
      ->add_option("--mpi-timeout", mpi_timeout,
                   "Under mpirun: seconds a rank waits for the others before it aborts")
      ->capture_default_str();

  ds::bench::MetaOptions mo;
  std::string mfiles = std::to_string(mo.files), mfile_size = "4k", mphases = "all",
              mfiles_per_dir = std::to_string(mo.files_per_dir), mformat = "normal";
  auto* meta = app.add_subcommand(
      "meta", "mdtest-style metadata benchmark: create, stat, read, readdir, remove small files");
  meta->add_option("PATH", mo.path, "An existing directory (dsbench-meta.<pid> is made in it)")
      ->required();
  meta->add_option("--files", mfiles, "Files per thread, e.g. 2000, 100k")->capture_default_str();
  meta->add_option("--threads", mo.threads, "Threads, each in its own subtree")
      ->capture_default_str();
  meta->add_option("--file-size", mfile_size, "Bytes written at create and read back, e.g. 4k")
      ->capture_default_str();
  meta->add_option("--files-per-dir", mfiles_per_dir,
                   "At most this many files in one directory (sets the dirs per thread)")
      ->capture_default_str();
  meta->add_option("--phases", mphases,
                   "Comma list from create,stat,read,readdir,remove (must include create; "
                   "they run in this order)")
      ->capture_default_str();
  meta->add_flag("--keep", mo.keep, "Keep the files (what the remove phase did not remove)");
  meta->add_option("--output-format", mformat, "normal|json")->capture_default_str();
  bool shared_dir = false;
  meta->add_flag("--shared-dir", shared_dir,
                 "Under mpirun: all ranks in one directory (mdtest's default); default: a "
                 "directory per rank (mdtest -u)");
  meta->add_option("--mpi-timeout", mpi_timeout,
                   "Under mpirun: seconds a rank waits for the others at a phase's barrier")
      ->capture_default_str();

  ds::bench::TrainingCommands training(app);  // replay, compare, slowfs

  ds::bench::SetDsbenchFlags(&app);
  if (int rc = ds::ParseArgs(kTool, app, argc, argv); rc >= 0) return rc;
  ds::bench::InstallStopHandlers();

  std::string command;  // as typed, for the report (arguments with spaces quoted)
  for (int i = 0; i < argc; i++) {
    std::string a = argv[i];
    if (a.find_first_of(" \t'\"") != std::string::npos) a = "'" + a + "'";
    command += (i ? " " : "") + a;
  }
  if (int rc = training.Run(command); rc >= 0) return rc;

  if (meta->parsed()) {
    if (mformat != "normal" && mformat != "json") {
      return Fail(ds::Status(ds::Code::kInvalidArgument, "--output-format: normal or json"));
    }
    auto files = ds::bench::ParseCount(mfiles, "--files");
    auto per_dir = ds::bench::ParseCount(mfiles_per_dir, "--files-per-dir");
    if (!files.ok()) return Fail(files.status());
    if (!per_dir.ok()) return Fail(per_dir.status());
    mo.files = *files;
    mo.files_per_dir = *per_dir;
    if (auto s = ds::SizeFlag(mfile_size, "--file-size", &mo.file_size); !s.ok()) return Fail(s);
    if (mphases != "all") {
      auto phases = ds::bench::ParsePhases(mphases);
      if (!phases.ok()) return Fail(phases.status());
      mo.phases = *phases;
    }
    bool json = mformat == "json";
    auto world = ds::mpi::World::Start(&argc, &argv);
    if (!world.ok()) return Fail(world.status());
    if ((*world)->mpi()) {
      (*world)->set_tool(std::string(kTool));
      (*world)->set_timeout(mpi_timeout);
      (*world)->set_json_errors(json);
      ds::SystemProbe probe = ds::ProbeSystem(ds::bench::WithRank(mo.path, (*world)->rank()));
      mo.disk_device = probe.block_device;
      return ds::bench::RunMetaRanks(**world, mo, shared_dir, json, probe);
    }
    if (shared_dir) return Fail(NeedsMpi("--shared-dir"));
    if (auto s = ds::bench::CheckMetaPlan(mo); !s.ok()) return Fail(s);
    ds::SystemProbe probe = ds::ProbeSystem(mo.path);
    mo.disk_device = probe.block_device;
    if (!json) {
      std::fputs(probe.ToText().c_str(), stdout);
      std::fputs(ds::bench::MetaPlanText(mo).c_str(), stdout);
      std::fflush(stdout);
    }
    auto r = ds::bench::RunMeta(mo);
    if (!r.ok()) return Fail(r.status());
    if (json) {
      nlohmann::json j = {
          {"dsbench", {{"probe", probe.ToJson()}, {"interrupted", ds::bench::StopRequested()}}},
          {"meta", ds::bench::MetaJson(mo, *r)}};
      std::printf("%s\n", ds::bench::DumpJson(j).c_str());
    } else {
      std::fputs(ds::bench::MetaText(mo, *r).c_str(), stdout);
      if (r->interrupted) {
        std::puts(r->phases.empty() ? "interrupted before the first phase"
                                    : "interrupted: partial results above");
      }
    }
    if (!r->cleanup_note.empty()) {
      std::fprintf(stderr, "dsbench: warning: cleanup: %s\n", r->cleanup_note.c_str());
    }
    return 0;
  }

  if (io->parsed()) {
    auto spec = ds::bench::ParseFioArgs(io->remaining(), o);
    if (!spec.ok()) return Fail(spec.status());
    for (const auto& n : spec->notes) std::fprintf(stderr, "dsbench: note: %s\n", n.c_str());
    return ds::bench::RunIoCommand(*spec, mpi_io, mpi_timeout, &argc, &argv);
  }

  // storage verdict
  ds::bench::StorageOptions so;
  so.path = spath;
  so.min_iops = min_iops;
  so.direct = sdirect;
  so.quick = quick;
  so.keep = skeep;
  if (auto s = ds::SizeFlag(min_bw, "--min-bw", &so.min_bw); !s.ok()) return Fail(s);
  if (!ssize.empty()) {
    if (auto s = ds::SizeFlag(ssize, "--size", &so.size); !s.ok()) return Fail(s);
  }
  if (auto s = ds::DurationFlag(sruntime, "--runtime", &so.runtime); !s.ok()) return Fail(s);
  uint64_t min_agg = 0;
  if (auto s = ds::SizeFlag(min_aggregate_bw, "--min-aggregate-bw", &min_agg); !s.ok()) {
    return Fail(s);
  }
  auto world = ds::mpi::World::Start(&argc, &argv);
  if (!world.ok()) return Fail(world.status());
  if ((*world)->mpi()) {
    (*world)->set_tool(std::string(kTool));
    (*world)->set_timeout(mpi_timeout + so.runtime);
    (*world)->set_json_errors(sjson);
    ds::SystemProbe probe = ds::ProbeSystem(ds::bench::WithRank(spath, (*world)->rank()));
    so.disk_device = probe.block_device;
    return ds::bench::RunStorageRanks(**world, so, min_agg, sjson, probe);
  }
  if (min_agg > 0) {
    return Fail(NeedsMpi("--min-aggregate-bw"));
  }
  ds::SystemProbe probe = ds::ProbeSystem(spath);
  so.disk_device = probe.block_device;
  if (!sjson) std::fputs(probe.ToText().c_str(), stdout);
  auto r = ds::bench::RunStorage(
      so, [](const std::string& w) { std::fprintf(stderr, "dsbench: warning: %s\n", w.c_str()); });
  if (!r.ok()) return Fail(r.status());
  if (sjson) {
    nlohmann::json j = ds::bench::StorageJson(so, *r);
    j["probe"] = probe.ToJson();
    std::printf("%s\n", ds::bench::DumpJson(j).c_str());
  } else {
    std::fputs(ds::bench::RenderDsbenchFlags(ds::bench::StorageText(so, *r)).c_str(), stdout);
  }
  return r->verdict.pass() ? 0 : 1;
} catch (...) {
  return ds::ExceptionExit(kTool);
}

int main(int argc, char** argv) { return ds::FinishStdout(kTool, Run(argc, argv)); }
