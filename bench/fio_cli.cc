#include "bench/fio_cli.h"

#include <cstdio>

#include "bench/common/latency_report.h"
#include "bench/io/fio_options.h"
#include "bench/io_cli.h"
#include "bench/meta/meta.h"
#include "bench/mpi_cli.h"
#include "bench/storage/storage.h"
#include "src/cli_args.h"
#include "src/human.h"
#include "src/stop.h"
#include "src/system_probe.h"

namespace ds::bench {

namespace {}  // namespace

struct FioCommands::Flags {
  IoJobOptions o;
  double mpi_timeout = 600;  // --mpi-timeout of io, storage and meta
  CLI::App* io = nullptr;
  CLI::App* storage = nullptr;
  CLI::App* meta = nullptr;
  MpiIoFlags mpi_io;
  // storage
  std::string min_bw = "500MB/s", ssize, sruntime, spath, min_aggregate_bw = "0";
  uint64_t min_iops = 5000;
  bool quick = false, sjson = false, skeep = false, sdirect = true;
  // meta
  MetaOptions mo;
  std::string mfiles = std::to_string(mo.files), mfile_size = "4k", mphases = "all",
              mfiles_per_dir = std::to_string(mo.files_per_dir), mformat = "normal";
  bool shared_dir = false;
};

FioCommands::~FioCommands() = default;

FioCommands::FioCommands(CLI::App& app) : f_(std::make_unique<Flags>()) {
  Flags& f = *f_;
  f.io = app.add_subcommand(
      "io",
      "Run fio jobs: from fio job files (JOB.fio) and/or fio's options, against PATH (a "
      "directory or file) or fio's --filename/--directory");
  // fio's options are parsed by bench/io/fio_options.h (its table is the help below); CLI11 takes
  // dsbench's own flags and hands every other word over, in order.
  f.io->allow_extras();
  f.io->positionals_at_end(false);
  f.io->footer("\n" + FioOptionsHelp() +
               "Arguments: JOB.fio (or a file starting with '[') is a fio job file; another PATH "
               "is the target (a directory: files NAME.N.0 in it; a file: used as is). Options on "
               "the command line override the files'; each --name starts a job.");
  f.io->add_flag("--keep", f.o.keep, "Keep the test files dsbench created (fio's unlink=0)");
  f.io->add_flag("--allow-device", f.o.allow_device, "Allow PATH to be a block device");
  f.io->add_flag("--allow-overwrite", f.o.allow_overwrite,
                 "Allow a write job on an existing file (its bytes are overwritten)");
  f.io->add_flag("--shared-file", f.mpi_io.shared_file,
                 "Under mpirun: one test file, rank r's --size bytes at offset r*size (IOR "
                 "without -F); default: a file per rank, PATH/dsbench.<name>.r<rank>.0");
  f.io->add_flag("--mpi-stonewall", f.mpi_io.stonewall,
                 "Under mpirun: all ranks stop when the first one finishes, and only the IO done "
                 "by then counts (IOR's -D wear-out, mdtest's -W)");
  f.io->add_option("--repetitions", f.mpi_io.repetitions,
                   "Under mpirun: run the job this many times (IOR's -i) and report min/max/mean")
      ->check(CLI::Range(1u, 1000u))
      ->capture_default_str();
  f.io->add_option("--mpi-timeout", f.mpi_timeout,
                   "Under mpirun: seconds a rank waits for the others at a barrier or a gather "
                   "before it aborts the job")
      ->capture_default_str();

  f.storage = app.add_subcommand("storage",
                                 "Verdict: sequential 1 MiB read and random 4 KiB "
                                 "read against the bar (default 500MB/s, 5000 IOPS)");
  f.storage->add_option("PATH", f.spath)->required();
  f.storage->add_option("--min-bw", f.min_bw, "Sequential read bar")->capture_default_str();
  f.storage->add_option("--min-iops", f.min_iops, "Random 4k read bar")->capture_default_str();
  f.storage->add_option("--size", f.ssize, "Test file size (default 8G, --quick 1G)");
  f.storage->add_option("--runtime", f.sruntime, "Seconds per test (default 30, --quick 5)");
  f.storage->add_option("--direct", f.sdirect, "1 = O_DIRECT (default)")->capture_default_str();
  f.storage->add_flag("--quick", f.quick, "Short run: a first look, not a verdict to trust");
  f.storage->add_flag("--json", f.sjson, "Print results as JSON");
  f.storage->add_flag("--keep", f.skeep, "Keep the test file");
  f.storage
      ->add_option("--min-aggregate-bw", f.min_aggregate_bw,
                   "Under mpirun: also require this aggregate sequential read (0 = none)")
      ->capture_default_str();
  f.storage
      ->add_option("--mpi-timeout", f.mpi_timeout,
                   "Under mpirun: seconds a rank waits for the others before it aborts")
      ->capture_default_str();

  f.meta = app.add_subcommand(
      "meta", "mdtest-style metadata benchmark: create, stat, read, readdir, remove small files");
  f.meta
      ->add_option("PATH", f.mo.path,
                   "An existing directory or nfs:// URL (dsbench-meta.<pid> is made in it)")
      ->required();
  f.meta->add_option("--files", f.mfiles, "Files per thread, e.g. 2000, 100k")
      ->capture_default_str();
  f.meta->add_option("--threads", f.mo.threads, "Threads, each in its own subtree")
      ->capture_default_str();
  f.meta->add_option("--file-size", f.mfile_size, "Bytes written at create and read back, e.g. 4k")
      ->capture_default_str();
  f.meta
      ->add_option("--files-per-dir", f.mfiles_per_dir,
                   "At most this many files in one directory (sets the dirs per thread)")
      ->capture_default_str();
  f.meta
      ->add_option("--phases", f.mphases,
                   "Comma list from create,stat,read,readdir,remove (must include create; "
                   "they run in this order)")
      ->capture_default_str();
  f.meta->add_flag("--keep", f.mo.keep, "Keep the files (what the remove phase did not remove)");
  f.meta->add_option("--output-format", f.mformat, "normal|json")->capture_default_str();
  f.meta->add_flag("--shared-dir", f.shared_dir,
                   "Under mpirun: all ranks in one directory (mdtest's default); default: a "
                   "directory per rank (mdtest -u)");
  f.meta
      ->add_option("--mpi-timeout", f.mpi_timeout,
                   "Under mpirun: seconds a rank waits for the others at a phase's barrier")
      ->capture_default_str();
}

int FioCommands::Run(int* argc, char*** argv) {
  Flags& f = *f_;
  if (f.meta->parsed()) {
    if (f.mformat != "normal" && f.mformat != "json") {
      return DsbenchFail(Status(Code::kInvalidArgument, "--output-format: normal or json"));
    }
    auto files = ParseCount(f.mfiles, "--files");
    auto per_dir = ParseCount(f.mfiles_per_dir, "--files-per-dir");
    if (!files.ok()) return DsbenchFail(files.status());
    if (!per_dir.ok()) return DsbenchFail(per_dir.status());
    f.mo.files = *files;
    f.mo.files_per_dir = *per_dir;
    if (auto s = SizeFlag(f.mfile_size, "--file-size", &f.mo.file_size); !s.ok())
      return DsbenchFail(s);
    if (f.mphases != "all") {
      auto phases = ParsePhases(f.mphases);
      if (!phases.ok()) return DsbenchFail(phases.status());
      f.mo.phases = *phases;
    }
    bool json = f.mformat == "json";
    auto world = mpi::World::Start(argc, argv);
    if (!world.ok()) return DsbenchFail(world.status());
    if ((*world)->mpi()) {
      (*world)->set_tool(std::string(kDsbench));
      (*world)->set_timeout(f.mpi_timeout);
      (*world)->set_json_errors(json);
      SystemProbe probe = ProbeSystem(WithRank(f.mo.path, (*world)->rank()));
      f.mo.disk_device = probe.block_device;
      return RunMetaRanks(**world, f.mo, f.shared_dir, json, probe);
    }
    if (f.shared_dir) return DsbenchFail(NeedsMpi("--shared-dir"));
    if (auto s = CheckMetaPlan(f.mo); !s.ok()) return DsbenchFail(s);
    SystemProbe probe = ProbeSystem(f.mo.path);
    f.mo.disk_device = probe.block_device;
    if (!json) {
      std::fputs(probe.ToText().c_str(), stdout);
      std::fputs(MetaPlanText(f.mo).c_str(), stdout);
      std::fflush(stdout);
    }
    auto r = RunMeta(f.mo);
    if (!r.ok()) return DsbenchFail(r.status());
    if (json) {
      nlohmann::json j = {
          {"dsbench", {{"probe", probe.ToJson()}, {"interrupted", StopRequested()}}},
          {"meta", MetaJson(f.mo, *r)}};
      std::printf("%s\n", DumpJson(j).c_str());
    } else {
      std::fputs(MetaText(f.mo, *r).c_str(), stdout);
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

  if (f.io->parsed()) {
    auto spec = ParseFioArgs(f.io->remaining(), f.o);
    if (!spec.ok()) return DsbenchFail(spec.status());
    for (const auto& n : spec->notes) std::fprintf(stderr, "dsbench: note: %s\n", n.c_str());
    return RunIoCommand(*spec, f.mpi_io, f.mpi_timeout, argc, argv);
  }

  if (!f.storage->parsed()) return -1;
  // storage verdict
  StorageOptions so;
  so.path = f.spath;
  so.min_iops = f.min_iops;
  so.direct = f.sdirect;
  so.quick = f.quick;
  so.keep = f.skeep;
  if (auto s = SizeFlag(f.min_bw, "--min-bw", &so.min_bw); !s.ok()) return DsbenchFail(s);
  if (!f.ssize.empty()) {
    if (auto s = SizeFlag(f.ssize, "--size", &so.size); !s.ok()) return DsbenchFail(s);
  }
  if (auto s = DurationFlag(f.sruntime, "--runtime", &so.runtime); !s.ok()) return DsbenchFail(s);
  uint64_t min_agg = 0;
  if (auto s = SizeFlag(f.min_aggregate_bw, "--min-aggregate-bw", &min_agg); !s.ok()) {
    return DsbenchFail(s);
  }
  auto world = mpi::World::Start(argc, argv);
  if (!world.ok()) return DsbenchFail(world.status());
  if ((*world)->mpi()) {
    (*world)->set_tool(std::string(kDsbench));
    (*world)->set_timeout(f.mpi_timeout + so.runtime);
    (*world)->set_json_errors(f.sjson);
    SystemProbe probe = ProbeSystem(WithRank(f.spath, (*world)->rank()));
    so.disk_device = probe.block_device;
    return RunStorageRanks(**world, so, min_agg, f.sjson, probe);
  }
  if (min_agg > 0) {
    return DsbenchFail(NeedsMpi("--min-aggregate-bw"));
  }
  SystemProbe probe = ProbeSystem(f.spath);
  so.disk_device = probe.block_device;
  if (!f.sjson) std::fputs(probe.ToText().c_str(), stdout);
  auto r = RunStorage(
      so, [](const std::string& w) { std::fprintf(stderr, "dsbench: warning: %s\n", w.c_str()); });
  if (!r.ok()) return DsbenchFail(r.status());
  if (f.sjson) {
    nlohmann::json j = StorageJson(so, *r);
    j["probe"] = probe.ToJson();
    std::printf("%s\n", DumpJson(j).c_str());
  } else {
    std::fputs(RenderDsbenchFlags(StorageText(so, *r)).c_str(), stdout);
  }
  return r->verdict.pass() ? 0 : 1;
}

}  // namespace ds::bench
