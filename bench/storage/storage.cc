#include "bench/storage/storage.h"

#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include "src/human.h"
#include "src/storage.h"

namespace ds::bench {

namespace {

// Falls back from io_uring to psync, with a warning, when the kernel refuses io_uring.
Result<IoRun> RunWithFallback(IoJobOptions* o, const IoHooks& hooks,
                              const std::function<void(const std::string&)>& warn) {
  auto r = RunIoJobs(*o, hooks);
  // Not with hooks (one rank of an MPI job): a second run would meet its barrier twice; the
  // ranks agreed on the engine before.
  if (!r.ok() && r.status().code() == Code::kUnsupported && o->ioengine == "io_uring" &&
      hooks.job == nullptr) {
    warn(r.status().message() + "; falling back to psync");
    o->ioengine = "psync";
    return RunIoJobs(*o, hooks);
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
  seq.ioengine = o.ioengine;
  if (o.path.rfind("nfs://", 0) == 0) {  // the backend's engine, in the URL's directory
    seq.ioengine = "nfs";
    seq.nfs_url = o.path;
    seq.path = ".";
    seq.direct = false;
  }
  seq.file_name = o.file_name;
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

namespace {

// The storage and path of the test file of a run whose PATH is a URL.
Result<StorageRef> RemoteTestFile(const IoJobOptions& seq) {
  DS_ASSIGN_OR_RETURN(StorageRef at, OpenStorage(RemoteJobUrl(seq, seq.path)));
  DS_ASSIGN_OR_RETURN(FileInfo info, at.storage->Stat(at.path, true));
  if (info.type == FileType::kDirectory) at.path += "/" + seq.file_name;
  return at;
}

}  // namespace

Result<StorageRun> RunStorage(const StorageOptions& o,
                              const std::function<void(const std::string&)>& warn) {
  StorageRun r;
  r.seq_job = SequentialJob(o);
  const bool remote = r.seq_job.ioengine == "nfs";
  if (remote && o.hooks.job) {
    return Status(Code::kInvalidArgument,
                  "dsbench storage nfs://… runs in one process here, not under mpirun");
  }
  // The test file is ours unless it was there before; the two tests share it.
  std::function<void()> remove_test_file = [] {};
  std::shared_ptr<Storage> storage = LocalStorage();
  std::string where = o.path;
  if (remote) {
    DS_ASSIGN_OR_RETURN(StorageRef at, RemoteTestFile(r.seq_job));
    storage = at.storage;
    where = at.path;
    if (!storage->Stat(at.path).ok() && !o.keep) {
      remove_test_file = [storage, p = at.path] { (void)storage->Remove(p); };
    }
  } else {
    std::string test_file = o.path + "/" + o.file_name;
    struct stat pst;
    if (::stat(o.path.c_str(), &pst) == 0 && S_ISDIR(pst.st_mode) &&
        ::access(test_file.c_str(), F_OK) != 0 && !o.keep) {
      remove_test_file = [test_file] { ::unlink(test_file.c_str()); };
    }
  }
  RpcBillProbe rpc = RpcBillProbe::For(*storage, where);
  rpc.Start();
  auto seq = RunWithFallback(&r.seq_job, o.hooks, warn);
  if (!seq.ok()) {
    remove_test_file();
    return seq.status();
  }
  r.seq_rpc = rpc.Stop();
  r.seq = std::move(*seq);
  r.rnd_job = RandomJob(o);
  r.rnd_job.ioengine = r.seq_job.ioengine;
  rpc.Start();
  auto rnd = RunWithFallback(&r.rnd_job, o.hooks, warn);
  r.rnd_rpc = rpc.Stop();
  remove_test_file();
  if (!rnd.ok()) return rnd.status();
  r.rnd = std::move(*rnd);
  r.verdict = JudgeStorage(r.seq.jobs[0], r.rnd.jobs[0], o);
  return r;
}

nlohmann::json StorageJson(const StorageOptions& o, const StorageRun& r) {
  const StorageVerdict& v = r.verdict;
  // Per IO over every IO, the ramp's too (the bytes are counted after the ramp: no per GiB).
  auto with_bill = [](nlohmann::json job, const std::optional<RpcBill>& bill, const IoRun& run) {
    uint64_t ios = run.jobs.empty() ? 0 : run.jobs[0].engine_ios;
    job["rpc_bill"] = bill ? RpcBillJson(*bill, ios, 0, "io") : nlohmann::json();
    return job;
  };
  return {{"sequential_read", with_bill(OneJobJson(r.seq_job, r.seq), r.seq_rpc, r.seq)},
          {"random_read", with_bill(OneJobJson(r.rnd_job, r.rnd), r.rnd_rpc, r.rnd)},
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
  for (const auto& [name, bill, run] :
       {std::tuple{"sequential", &r.seq_rpc, &r.seq}, std::tuple{"random", &r.rnd_rpc, &r.rnd}}) {
    if (!*bill || run->jobs.empty()) continue;
    s += fmt::format("RPCs ({}), {}: {}\n", (*bill)->source, name,
                     FormatRpcBill(**bill, run->jobs[0].engine_ios, "IO"));
  }
  s += fmt::format("\nsequential 1 MiB read: {}  (bar {})  {}\n", FormatRate(v.bw),
                   FormatRate(static_cast<double>(o.min_bw)), v.bw_pass ? "PASS" : "FAIL");
  s += fmt::format("random 4 KiB read:     {} IOPS  (bar {})  {}\n", FormatCount(v.iops),
                   o.min_iops, v.iops_pass ? "PASS" : "FAIL");
  if (o.quick) s += "(`quick`: a first look; run without `quick` for a verdict to trust)\n";
  return s;
}

ClusterStorageVerdict JudgeCluster(const ClusterIo& seq, const ClusterIo& rnd,
                                   const StorageOptions& bar, uint64_t min_aggregate_bw) {
  ClusterStorageVerdict v;
  for (size_t i = 0; i < seq.ranks.size() && i < rnd.ranks.size(); i++) {
    v.clients.push_back(JudgeStorage(seq.ranks[i].result, rnd.ranks[i].result, bar));
    if (!v.clients.back().pass()) v.failing++;
  }
  v.aggregate_bw = PerSecond(static_cast<double>(seq.aggregate.read.io_bytes), seq.window_ms);
  v.aggregate_iops = PerSecond(static_cast<double>(rnd.aggregate.read.ios), rnd.window_ms);
  v.min_aggregate_bw = min_aggregate_bw;
  v.aggregate_pass = v.aggregate_bw >= static_cast<double>(min_aggregate_bw);
  return v;
}

nlohmann::json ClusterStorageJson(const StorageOptions& o, const IoJobOptions& seq_job,
                                  const IoJobOptions& rnd_job, const ClusterIo& seq,
                                  const ClusterIo& rnd, const ClusterStorageVerdict& v) {
  nlohmann::json clients = nlohmann::json::array();
  for (size_t i = 0; i < v.clients.size(); i++) {
    const StorageVerdict& c = v.clients[i];
    clients.push_back({{"rank", seq.ranks[i].rank},
                       {"hostname", seq.ranks[i].host},
                       {"bw_bytes", c.bw},
                       {"bw_pass", c.bw_pass},
                       {"iops", c.iops},
                       {"iops_pass", c.iops_pass},
                       {"pass", c.pass()}});
  }
  return {{"sequential_read", ClusterJson(seq_job, seq)},
          {"random_read", ClusterJson(rnd_job, rnd)},
          {"verdict",
           {{"clients", clients},
            {"min_bw_bytes", o.min_bw},
            {"min_iops", o.min_iops},
            {"every_client_pass", v.failing == 0},
            {"aggregate_bw_bytes", v.aggregate_bw},
            {"aggregate_iops", v.aggregate_iops},
            {"min_aggregate_bw_bytes", v.min_aggregate_bw},
            {"aggregate_pass", v.aggregate_pass},
            {"pass", v.pass()},
            {"quick", o.quick}}}};
}

std::string ClusterStorageText(const StorageOptions& o, const ClusterIo& seq, const ClusterIo& rnd,
                               const ClusterStorageVerdict& v) {
  std::string s =
      fmt::format("{} clients at once, each against the bar ({} and {} IOPS):\n", v.clients.size(),
                  FormatRate(static_cast<double>(o.min_bw)), o.min_iops);
  for (size_t i = 0; i < v.clients.size(); i++) {
    const StorageVerdict& c = v.clients[i];
    s += fmt::format("  rank {:>3} {:<16} seq {:>12} {}  rand {:>8} IOPS {}  {}\n",
                     seq.ranks[i].rank, seq.ranks[i].host, FormatRate(c.bw),
                     c.bw_pass ? "ok  " : "LOW ", FormatCount(c.iops),
                     c.iops_pass ? "ok  " : "LOW ", c.pass() ? "PASS" : "FAIL");
  }
  s += fmt::format("aggregate (first start to last end): sequential {}, random {} IOPS\n",
                   FormatRate(v.aggregate_bw), FormatCount(v.aggregate_iops));
  const RankIo &slow = seq.ranks[seq.slowest], &slow_rnd = rnd.ranks[rnd.slowest];
  s += fmt::format("slowest client: rank {} ({}) sequential, rank {} ({}) random\n", slow.rank,
                   slow.host, slow_rnd.rank, slow_rnd.host);
  s += fmt::format("every client >= the bar: {}  ({} of {} below)\n",
                   v.failing == 0 ? "PASS" : "FAIL", v.failing, v.clients.size());
  if (v.min_aggregate_bw > 0) {
    s += fmt::format("aggregate >= {}: {}\n", FormatRate(static_cast<double>(v.min_aggregate_bw)),
                     v.aggregate_pass ? "PASS" : "FAIL");
  }
  if (o.quick) s += "(`quick`: a first look; run without `quick` for a verdict to trust)\n";
  return s;
}

}  // namespace ds::bench
