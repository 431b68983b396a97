#include "bench/watch_cli.h"

#include <unistd.h>

#include <cstdio>
#include <filesystem>

#include "bench/io_cli.h"
#include "bench/watch/downgrade.h"
#include "bench/watch/watch.h"
#include "src/cli_args.h"
#include "src/fd.h"

namespace ds::bench {

struct WatchCommands::Flags {
  WatchOptions o;
  CLI::App* watch = nullptr;
  CLI::App* probe = nullptr;
  std::string interval = "30s";
  bool json = false;
  std::string probe_path = ".", probe_log, output;
  DowngradeOptions d;
  bool warm = false;
};

WatchCommands::~WatchCommands() = default;

WatchCommands::WatchCommands(CLI::App& app) : f_(std::make_unique<Flags>()) {
  Flags& f = *f_;
  f.watch = app.add_subcommand(
      "watch",
      "Why is this training job waiting? Watches a job and its workers: a baseline, a sample "
      "every interval into a JSON-lines log, per-epoch figures, and verdicts (memory leak, swap, "
      "IO, data wait, NFS)");
  f.watch->add_option("COMMAND", f.o.command,
                      "The job to run, after `--`: dsbench watch -- CMD...");
  f.watch->add_option("--pid", f.o.pid, "Watch this running process and its descendants instead");
  f.watch->add_option("--interval", f.interval, "Time between samples, e.g. 30s, 500ms")
      ->capture_default_str();
  f.watch->add_option("--log", f.o.log,
                      "Write the baseline, every sample and the report here "
                      "(JSON lines)");
  f.watch->add_option("--epochs", f.o.epochs,
                      "The epoch-marker file (DSPACK_WATCH_EPOCHS) the job writes; default: a "
                      "temporary file set for the command");
  f.watch
      ->add_option("--leak-min-samples", f.o.leak_min_samples,
                   "Samples a leak verdict needs at least")
      ->capture_default_str();
  f.watch->add_flag("--json", f.json, "The final report as JSON (on stdout, or in --output)");
  f.watch->add_option("--output", f.output,
                      "Write the final report to this file (whole, or not at all) instead of "
                      "stderr (text) or stdout (--json)");
  f.watch
      ->add_option("--downgrade", f.d.dataset,
                   "Instead of watching: run the job's loader alone on this dspack dataset "
                   "(as configured, from memory, with 0 workers, staged) and say where a "
                   "sample's time goes")
      ->group("Downgrade experiment");
  f.watch->add_option("--workers", f.d.workers, "The loader's num_workers")
      ->capture_default_str()
      ->group("Downgrade experiment");
  f.watch->add_option("--batch", f.d.batch, "The loader's batch_size")
      ->capture_default_str()
      ->group("Downgrade experiment");
  f.watch->add_option("--prefetch", f.d.prefetch, "The loader's prefetch_factor")
      ->capture_default_str()
      ->group("Downgrade experiment");
  f.watch->add_option("--transform", f.d.transform, "none, or decode (dspack.torch.decode_image)")
      ->capture_default_str()
      ->group("Downgrade experiment");
  f.watch->add_option("--batches", f.d.batches, "Batches timed in each run")
      ->capture_default_str()
      ->group("Downgrade experiment");
  f.watch
      ->add_option("--stage-dir", f.d.stage_dir,
                   "A remote dataset is staged here with dssync for the staged run (a new "
                   "directory, removed after)")
      ->group("Downgrade experiment");
  f.watch
      ->add_flag("--warm", f.warm,
                 "Keep the page cache between runs (default: dropped before each run from "
                 "storage, as root)")
      ->group("Downgrade experiment");
  f.watch->footer(
      "The report goes to stderr (the job's own output keeps stdout), as JSON to stdout, or to\n"
      "--output FILE.\n"
      "Exit codes: the command's own (128+N for signal N); --pid: 0; 2 usage or IO error.\n"
      "Docs: docs/watch.md");

  f.probe = app.add_subcommand(
      "probe",
      "The baseline alone, as JSON: system probe of PATH, memory, swap, PSI, the block device "
      "since boot, nvidia-smi where it exists (a job script's first line)");
  f.probe->add_option("PATH", f.probe_path, "Where the data lives")->capture_default_str();
  f.probe->add_option("--log", f.probe_log, "Write the JSON here instead of stdout");
  f.probe->footer("Exit codes: 0 ok, 2 usage or IO error (the log cannot be written).");
}

namespace {

// Process names, paths and a job's lines need not be UTF-8: replaced, never thrown on.
std::string Utf8Json(const nlohmann::json& j) {
  return j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace);
}

int RunDowngradeCommand(WatchCommands::Flags& f) {
  if (!f.o.command.empty() || f.o.pid) {
    return DsbenchFail(Status(Code::kInvalidArgument,
                              "--downgrade runs the loader itself: give no command and no --pid"));
  }
  if (!f.d.stage_dir.empty() && std::filesystem::exists(f.d.stage_dir)) {
    return DsbenchFail(
        Status(Code::kAlreadyExists, "--stage-dir " + f.d.stage_dir +
                                         ": already exists; give a new directory (staged into and "
                                         "removed after)"));
  }
  f.d.cold = !f.warm;
  f.d.stage = StageWithDssync;
  auto r = RunDowngrade(f.d);
  if (!r.ok()) return DsbenchFail(r.status());
  std::string text = f.json ? Utf8Json(DowngradeJson(f.d, *r)) + "\n" : DowngradeText(f.d, *r);
  if (!f.output.empty()) {
    if (Status s = WriteFileAtomic(f.output, text); !s.ok()) return DsbenchFail(s);
  } else {
    std::fputs(text.c_str(), stdout);
  }
  return 0;
}

}  // namespace

int WatchCommands::Run() {
  Flags& f = *f_;
  if (f.probe->parsed()) {
    SystemProbe p;
    SystemCounters c;
    std::string text = Baseline(f.probe_path, &p, &c).dump(2) + "\n";
    if (f.probe_log.empty()) {
      std::fputs(text.c_str(), stdout);
      return 0;
    }
    if (Status s = WriteFileAtomic(f.probe_log, text); !s.ok()) return DsbenchFail(s);
    return 0;
  }
  if (!f.watch->parsed()) return -1;
  if (!f.d.dataset.empty()) return RunDowngradeCommand(f);
  if (Status s = DurationFlag(f.interval, "--interval", &f.o.interval); !s.ok()) {
    return DsbenchFail(s);
  }
  if (!f.output.empty()) {  // checked before the job runs: its exit code must not be lost after
    std::string dir = f.output.find('/') == std::string::npos
                          ? std::string(".")
                          : f.output.substr(0, f.output.rfind('/') + 1);
    if (::access(dir.c_str(), W_OK) != 0) {
      return DsbenchFail(Status(Code::kInvalidArgument, "--output " + f.output +
                                                            ": its directory cannot be written " +
                                                            "(choose a writable path)"));
    }
  }
  f.o.live = ::isatty(STDERR_FILENO) && !f.json;
  auto r = RunWatch(f.o);
  if (!r.ok()) return DsbenchFail(r.status());
  std::string text = f.json ? Utf8Json(WatchJson(*r)) + "\n" : WatchText(*r);
  if (!f.json && !f.o.log.empty()) text += "  log: " + f.o.log + "\n";
  if (!f.output.empty()) {
    if (Status s = WriteFileAtomic(f.output, text); !s.ok()) return DsbenchFail(s);
  } else {
    std::fputs(text.c_str(), f.json ? stdout : stderr);
  }
  return r->exit_status.value_or(0);
}

}  // namespace ds::bench
