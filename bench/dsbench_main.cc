// dsbench: storage benchmarks for ML training data (docs/dsbench.md).
// Exit codes: 0 ok (storage: PASS), 1 storage: FAIL / replay: STARVES or corrupt samples,
// 2 usage or IO error.
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <cstdio>

#include "bench/io_job.h"
#include "bench/meta.h"
#include "bench/stop.h"
#include "bench/training_cli.h"
#include "src/cli_args.h"
#include "src/human.h"
#include "src/system_probe.h"

namespace {

int Fail(const ds::Status& s) {
  std::fprintf(stderr, "dsbench: %s\n", ds::EscapeBytes(s.message()).c_str());
  return s.code() == ds::Code::kOk ? 0 : 2;
}

bool Size(const std::string& text, const char* flag, uint64_t* out, ds::Status* err) {
  auto v = ds::ParseSize(text);
  if (!v.ok()) {
    *err = v.status().Prefixed(flag);
    return false;
  }
  *out = *v;
  return true;
}

// Runs a job; falls back from io_uring to psync with a warning when the kernel refuses it.
ds::Result<ds::bench::IoRun> RunWithFallback(ds::bench::IoJobOptions o) {
  auto r = ds::bench::RunIoJobs(o);
  if (!r.ok() && r.status().code() == ds::Code::kUnsupported && o.ioengine == "io_uring") {
    std::fprintf(stderr, "dsbench: warning: %s; falling back to psync\n",
                 r.status().message().c_str());
    o.ioengine = "psync";
    return ds::bench::RunIoJobs(o);
  }
  return r;
}

// A one-job run's JSON: the job, with the run's disk_util beside its read and write.
nlohmann::json OneJobJson(const ds::bench::IoJobOptions& o, const ds::bench::IoRun& run) {
  nlohmann::json all = ds::bench::JobsJson(o, run);
  nlohmann::json job = all["jobs"][0];
  if (all.contains("disk_util")) job["disk_util"] = all["disk_util"];
  return job;
}

}  // namespace

int main(int argc, char** argv) try {
  CLI::App app{"dsbench: can this storage feed ML training? fio-compatible IO jobs and a verdict"};
  app.set_version_flag("--version", std::string("dsbench ") + DSPACK_VERSION);
  app.require_subcommand(1);
  app.footer(
      "Exit codes: 0 ok / PASS, 1 FAIL (storage verdict; replay: the job STARVES or samples\n"
      "failed their checks), 2 usage or IO error.\n"
      "Docs: docs/dsbench.md");

  ds::bench::IoJobOptions o;
  std::string rw = "read", bs = "4k", size = "0", output_format = "normal";
  auto* io = app.add_subcommand("io", "Run one fio-style job against PATH (a directory or file)");
  io->add_option("PATH", o.path)->required();
  io->add_option("--name", o.name, "Job name (the test file is PATH/dsbench.<name>.0)")
      ->capture_default_str();
  io->add_option("--rw", rw, "read|write|randread|randwrite|randrw")->capture_default_str();
  io->add_option("--bs", bs, "Block size, e.g. 4k, 1M")->capture_default_str();
  io->add_option("--iodepth", o.iodepth, "Requests in flight per job")->capture_default_str();
  io->add_option("--numjobs", o.numjobs, "Parallel jobs on the same file")->capture_default_str();
  io->add_option("--direct", o.direct, "1 = O_DIRECT")->capture_default_str();
  io->add_option("--size", size, "Bytes per job (and test file size), e.g. 1G")
      ->capture_default_str();
  io->add_option("--runtime", o.runtime, "Seconds (0 = until --size is done)")
      ->capture_default_str();
  io->add_flag("--time_based", o.time_based, "Repeat over the file until --runtime");
  io->add_option("--ramp_time", o.ramp_time, "Seconds not counted")->capture_default_str();
  io->add_option("--ioengine", o.ioengine, "psync|io_uring|mmap")->capture_default_str();
  io->add_option("--iodepth_batch_submit", o.iodepth_batch_submit,
                 "Hand requests to the kernel in groups of this many (fio's option)")
      ->capture_default_str();
  io->add_flag("--registerfiles", o.registerfiles,
               "io_uring: register the file with the ring (no per-IO file lookup)");
  io->add_flag("--fixedbufs", o.fixedbufs,
               "io_uring: register the IO buffers (pinned once, not per IO)");
  io->add_flag("--sqthread_poll", o.sqthread_poll,
               "io_uring: a kernel thread polls the submission queue (no submit syscalls)");
  io->add_option("--invalidate", o.invalidate, "Drop the file's cached pages first")
      ->capture_default_str();
  io->add_option("--rwmixread", o.rwmixread, "randrw: % reads")->capture_default_str();
  io->add_flag("--group_reporting", o.group_reporting, "One result for all jobs");
  io->add_option("--output-format", output_format, "normal|json")->capture_default_str();
  io->add_flag("--keep", o.keep, "Keep the test file");
  io->add_flag("--allow-device", o.allow_device, "Allow PATH to be a block device");

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

  ds::bench::TrainingCommands training(app);  // replay, compare, slowfs

  if (int rc = ds::ParseArgs(app, argc, argv); rc >= 0) return rc;
  ds::bench::InstallStopHandlers();
  ds::Status err;

  if (int rc = training.Run(); rc >= 0) return rc;

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
    if (!Size(mfile_size, "--file-size", &mo.file_size, &err)) return Fail(err);
    if (mphases != "all") {
      auto phases = ds::bench::ParsePhases(mphases);
      if (!phases.ok()) return Fail(phases.status());
      mo.phases = *phases;
    }
    if (auto s = ds::bench::CheckMetaPlan(mo); !s.ok()) return Fail(s);
    ds::SystemProbe probe = ds::ProbeSystem(mo.path);
    mo.disk_device = probe.block_device;
    bool json = mformat == "json";
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
      std::printf("%s\n", j.dump(2).c_str());
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
    auto mode = ds::bench::ParseRw(rw);
    if (!mode.ok()) return Fail(mode.status());
    o.rw = *mode;
    if (!Size(bs, "--bs", &o.bs, &err) || !Size(size, "--size", &o.size, &err)) return Fail(err);
    if (output_format != "normal" && output_format != "json") {
      return Fail(ds::Status(ds::Code::kInvalidArgument, "--output-format: normal or json"));
    }
    ds::SystemProbe probe = ds::ProbeSystem(o.path);
    o.disk_device = probe.block_device;
    auto r = ds::bench::RunIoJobs(o);
    if (!r.ok() && r.status().code() == ds::Code::kUnsupported) {  // asked for explicitly
      return Fail(
          ds::Status(r.status().code(), r.status().message() + "; rerun with --ioengine psync"));
    }
    if (!r.ok()) return Fail(r.status());
    if (output_format == "json") {
      auto j = ds::bench::JobsJson(o, *r);
      j["dsbench"] = {{"probe", probe.ToJson()}, {"interrupted", ds::bench::StopRequested()}};
      std::printf("%s\n", j.dump(2).c_str());
    } else {
      std::fputs(probe.ToText().c_str(), stdout);
      std::fputs(ds::bench::JobsText(o, *r).c_str(), stdout);
      if (ds::bench::StopRequested()) std::puts("interrupted: partial results above");
    }
    return 0;
  }

  // storage verdict
  uint64_t bar_bw = 0, file_size = 0;
  if (!Size(min_bw, "--min-bw", &bar_bw, &err)) return Fail(err);
  if (!Size(ssize.empty() ? (quick ? "1G" : "8G") : ssize, "--size", &file_size, &err))
    return Fail(err);
  double runtime = sruntime.empty() ? (quick ? 5 : 30) : std::stod(sruntime);
  ds::SystemProbe probe = ds::ProbeSystem(spath);
  if (!sjson) std::fputs(probe.ToText().c_str(), stdout);
  // The test file is ours unless it was there before; the two tests share it.
  std::string test_file = spath + "/dsbench.storage.0";
  struct stat pst;
  bool ours = ::stat(spath.c_str(), &pst) == 0 && S_ISDIR(pst.st_mode) &&
              ::access(test_file.c_str(), F_OK) != 0;
  auto remove_test_file = [&] {
    if (ours && !skeep) ::unlink(test_file.c_str());
  };
  ds::bench::IoJobOptions seq;
  seq.disk_device = probe.block_device;
  seq.name = "storage";
  seq.path = spath;
  seq.rw = ds::bench::RwMode::kRead;
  seq.bs = 1 << 20;
  seq.numjobs = 4;
  seq.iodepth = 8;
  seq.direct = sdirect;
  seq.size = file_size;
  seq.runtime = runtime;
  seq.time_based = true;
  seq.ramp_time = quick ? 0.5 : 2;
  seq.ioengine = "io_uring";
  seq.group_reporting = true;
  seq.keep = true;  // the random test reuses the file
  auto s1 = RunWithFallback(seq);
  if (!s1.ok()) {
    remove_test_file();
    return Fail(s1.status());
  }
  ds::bench::IoJobOptions rnd = seq;
  rnd.rw = ds::bench::RwMode::kRandRead;
  rnd.bs = 4096;
  rnd.numjobs = 1;
  rnd.iodepth = 32;
  rnd.keep = skeep;
  auto s2 = RunWithFallback(rnd);
  remove_test_file();
  if (!s2.ok()) return Fail(s2.status());
  const auto& a = s1->jobs[0];
  const auto& b = s2->jobs[0];
  double bw = a.read.io_bytes / (a.runtime_ms / 1e3);
  double iops = b.read.ios / (b.runtime_ms / 1e3);
  bool pass_bw = bw >= static_cast<double>(bar_bw);
  bool pass_iops = iops >= static_cast<double>(min_iops);
  if (sjson) {
    nlohmann::json j = {{"probe", probe.ToJson()},
                        {"sequential_read", OneJobJson(seq, *s1)},
                        {"random_read", OneJobJson(rnd, *s2)},
                        {"verdict",
                         {{"bw_bytes", bw},
                          {"min_bw_bytes", bar_bw},
                          {"bw_pass", pass_bw},
                          {"iops", iops},
                          {"min_iops", min_iops},
                          {"iops_pass", pass_iops},
                          {"pass", pass_bw && pass_iops},
                          {"quick", quick}}}};
    std::printf("%s\n", j.dump(2).c_str());
  } else {
    std::fputs(ds::bench::JobsText(seq, *s1).c_str(), stdout);
    std::fputs(ds::bench::JobsText(rnd, *s2).c_str(), stdout);
    std::printf("\nsequential 1 MiB read: %s  (bar %s)  %s\n", ds::FormatRate(bw).c_str(),
                ds::FormatRate(static_cast<double>(bar_bw)).c_str(), pass_bw ? "PASS" : "FAIL");
    std::printf("random 4 KiB read:     %s IOPS  (bar %llu)  %s\n", ds::FormatCount(iops).c_str(),
                static_cast<unsigned long long>(min_iops), pass_iops ? "PASS" : "FAIL");
    if (quick) std::puts("(--quick: a first look; run without --quick for a verdict to trust)");
  }
  return pass_bw && pass_iops ? 0 : 1;
} catch (const std::bad_alloc&) {
  std::fprintf(stderr, "dsbench: out of memory\n");
  return 2;
} catch (const std::exception& e) {
  std::fprintf(stderr, "dsbench: internal error: %s\n", e.what());
  return 2;
}
