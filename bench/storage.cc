#include "bench/storage.h"

#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include "src/human.h"

namespace ds::bench {

namespace {

// Falls back from io_uring to psync, with a warning, when the kernel refuses io_uring.
Result<IoRun> RunWithFallback(IoJobOptions* o,
                              const std::function<void(const std::string&)>& warn) {
  auto r = RunIoJobs(*o);
  if (!r.ok() && r.status().code() == Code::kUnsupported && o->ioengine == "io_uring") {
    warn(r.status().message() + "; falling back to psync");
    o->ioengine = "psync";
    return RunIoJobs(*o);
  }
  return r;
}

// A one-job run's JSON: the job, with the run's disk_util beside its read and write.
nlohmann::json OneJobJson(const IoJobOptions& o, const IoRun& run) {
  nlohmann::json all = JobsJson(o, run);
  nlohmann::json job = all["jobs"][0];
  if (all.contains("disk_util")) job["disk_util"] = all["disk_util"];
  return job;
}

double PerSecond(double count, double runtime_ms) {
  return runtime_ms > 0 ? count / (runtime_ms / 1e3) : 0;
}

}  // namespace

IoJobOptions SequentialJob(const StorageOptions& o) {
  IoJobOptions seq;
  seq.disk_device = o.disk_device;
  seq.name = "storage";
  seq.path = o.path;
  seq.rw = RwMode::kRead;
  seq.bs = 1 << 20;
  seq.numjobs = 4;
  seq.iodepth = 8;
  seq.direct = o.direct;
  seq.size = o.size > 0 ? o.size : (o.quick ? 1ull << 30 : 8ull << 30);
  seq.runtime = o.runtime > 0 ? o.runtime : (o.quick ? 5 : 30);
  seq.time_based = true;
  seq.ramp_time = o.quick ? 0.5 : 2;
  seq.ioengine = "io_uring";
  seq.group_reporting = true;
  seq.keep = true;  // the random test reuses the file
  return seq;
}

IoJobOptions RandomJob(const StorageOptions& o) {
  IoJobOptions rnd = SequentialJob(o);
  rnd.rw = RwMode::kRandRead;
  rnd.bs = 4096;
  rnd.numjobs = 1;
  rnd.iodepth = 32;
  rnd.keep = o.keep;
  return rnd;
}

StorageVerdict JudgeStorage(const JobResult& sequential, const JobResult& random,
                            const StorageOptions& bar) {
  StorageVerdict v;
  v.bw = PerSecond(static_cast<double>(sequential.read.io_bytes), sequential.runtime_ms);
  v.iops = PerSecond(static_cast<double>(random.read.ios), random.runtime_ms);
  v.bw_pass = v.bw >= static_cast<double>(bar.min_bw);
  v.iops_pass = v.iops >= static_cast<double>(bar.min_iops);
  return v;
}

Result<StorageRun> RunStorage(const StorageOptions& o,
                              const std::function<void(const std::string&)>& warn) {
  // The test file is ours unless it was there before; the two tests share it.
  std::string test_file = o.path + "/dsbench.storage.0";
  struct stat pst;
  bool ours = ::stat(o.path.c_str(), &pst) == 0 && S_ISDIR(pst.st_mode) &&
              ::access(test_file.c_str(), F_OK) != 0;
  auto remove_test_file = [&] {
    if (ours && !o.keep) ::unlink(test_file.c_str());
  };
  StorageRun r;
  r.seq_job = SequentialJob(o);
  auto seq = RunWithFallback(&r.seq_job, warn);
  if (!seq.ok()) {
    remove_test_file();
    return seq.status();
  }
  r.seq = std::move(*seq);
  r.rnd_job = RandomJob(o);
  r.rnd_job.ioengine = r.seq_job.ioengine;
  auto rnd = RunWithFallback(&r.rnd_job, warn);
  remove_test_file();
  if (!rnd.ok()) return rnd.status();
  r.rnd = std::move(*rnd);
  r.verdict = JudgeStorage(r.seq.jobs[0], r.rnd.jobs[0], o);
  return r;
}

nlohmann::json StorageJson(const StorageOptions& o, const StorageRun& r) {
  const StorageVerdict& v = r.verdict;
  return {{"sequential_read", OneJobJson(r.seq_job, r.seq)},
          {"random_read", OneJobJson(r.rnd_job, r.rnd)},
          {"verdict",
           {{"bw_bytes", v.bw},
            {"min_bw_bytes", o.min_bw},
            {"bw_pass", v.bw_pass},
            {"iops", v.iops},
            {"min_iops", o.min_iops},
            {"iops_pass", v.iops_pass},
            {"pass", v.pass()},
            {"quick", o.quick}}}};
}

std::string StorageText(const StorageOptions& o, const StorageRun& r) {
  const StorageVerdict& v = r.verdict;
  std::string s = JobsText(r.seq_job, r.seq) + JobsText(r.rnd_job, r.rnd);
  s += fmt::format("\nsequential 1 MiB read: {}  (bar {})  {}\n", FormatRate(v.bw),
                   FormatRate(static_cast<double>(o.min_bw)), v.bw_pass ? "PASS" : "FAIL");
  s += fmt::format("random 4 KiB read:     {} IOPS  (bar {})  {}\n", FormatCount(v.iops),
                   o.min_iops, v.iops_pass ? "PASS" : "FAIL");
  if (o.quick) s += "(--quick: a first look; run without --quick for a verdict to trust)\n";
  return s;
}

}  // namespace ds::bench
