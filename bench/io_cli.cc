#include "bench/io_cli.h"

#include <fmt/format.h>
#include <unistd.h>

#include <cstdio>

#include "bench/common/latency_report.h"
#include "bench/io/io_live.h"
#include "src/cli_args.h"
#include "src/fd.h"
#include "src/rpc_bill.h"
#include "src/stop.h"
#include "src/storage.h"
#include "src/system_probe.h"
#include "sync/syncer.h"

namespace ds::bench {

namespace {

const CLI::App* g_app = nullptr;

std::optional<std::string> DsbenchFlag(std::string_view field) {
  std::string_view name = field.substr(0, field.find('='));
  if (IsFioOption(name)) return "--" + std::string(field);
  if (g_app == nullptr) return std::nullopt;
  return AppFlagResolver(*g_app)(field);
}

bool Has(const FioSpec& spec, std::string_view format) {
  for (const auto& f : spec.out.formats) {
    if (f == format) return true;
  }
  return false;
}

}  // namespace

void SetDsbenchFlags(const CLI::App* app) { g_app = app; }

std::string RenderDsbenchFlags(std::string_view text) {
  return RenderOptionNames(text, FlagResolver(DsbenchFlag));
}

Status NeedsMpi(std::string_view flag) {
  return Status(Code::kInvalidArgument,
                std::string(flag) + " is for a run under mpirun or srun (docs/mpi.md)");
}

Status StageWithDssync(const std::string& url, const std::string& dir) {
  sync::SyncOptions so;
  so.src = url;
  so.dst = dir;
  DS_ASSIGN_OR_RETURN(sync::SyncReport rep, sync::Sync(so));
  if (!rep.errors.empty()) return rep.errors.front();
  return Status::Ok();
}

int DsbenchFail(const Status& s) { return ds::Fail(kDsbench, s, FlagResolver(DsbenchFlag)); }

int RunIoCommand(const FioSpec& spec, MpiIoFlags mpi_io, double mpi_timeout, int* argc,
                 char*** argv) {
  std::vector<IoJobOptions> jobs = spec.jobs;
  const bool json = Has(spec, "json") || Has(spec, "json+");
  auto world = mpi::World::Start(argc, argv);
  if (!world.ok()) return DsbenchFail(world.status());
  if ((*world)->mpi()) {
    (*world)->set_tool(std::string(kDsbench));
    (*world)->set_timeout(mpi_timeout);
    mpi_io.json = json;
    (*world)->set_json_errors(json);
    if (jobs.size() != 1 || !spec.out.file.empty()) {
      return FailRank(**world, Status(Code::kInvalidArgument,
                                      "under mpirun, dsbench io runs one job (no job file with "
                                      "several sections, no --output); each rank is one client"));
    }
    IoJobOptions& o = jobs[0];
    if (o.ioengine == "nfs") {
      return FailRank(**world, Status(Code::kInvalidArgument,
                                      "ioengine=nfs runs in one process here, not under mpirun "
                                      "(docs/nfs.md); give `numjobs` for more connections"));
    }
    SystemProbe probe = ProbeSystem(WithRank(o.path, (*world)->rank()));
    o.disk_device = probe.block_device;
    return RunIoRanks(**world, o, mpi_io, probe);
  }
  if (mpi_io.shared_file) return DsbenchFail(NeedsMpi("--shared-file"));
  if (mpi_io.stonewall) return DsbenchFail(NeedsMpi("--mpi-stonewall"));
  if (mpi_io.repetitions > 1) return DsbenchFail(NeedsMpi("--repetitions"));
  // A --filename that the run will create: probe the directory it goes in.
  std::string where = jobs[0].path;
  if (jobs[0].ioengine == "nfs") {
    where = RemoteJobUrl(jobs[0], jobs[0].path);
  } else if (::access(where.c_str(), F_OK) != 0) {
    size_t slash = where.find_last_of('/');
    where = slash == std::string::npos ? "." : where.substr(0, slash + 1);
  }
  SystemProbe probe = ProbeSystem(where);
  for (auto& o : jobs) o.disk_device = probe.block_device;
  if (spec.out.status_interval > 0 && spec.out.file.empty() &&
      (spec.out.formats.size() != 1 || spec.out.formats[0] != "normal")) {
    return DsbenchFail(
        Status(Code::kInvalidArgument,
               "--status-interval prints text reports on stdout, which would break the "
               "--output-format report there; use --output FILE for it"));
  }
  LiveReport live(spec.out, jobs, ::isatty(STDERR_FILENO) == 1);
  IoHooks hooks;
  if (live.active()) {
    hooks.live = [&live](std::span<const LiveJob> js, double s, bool done) {
      live.Update(js, s, done);
    };
  }
  // The RPC bill of the run (src/rpc_bill.h): libnfs's calls for ioengine=nfs, the kernel
  // client's counters for a PATH on an NFS mount; none elsewhere. It covers the whole run, the
  // test file's layout too.
  RpcBillProbe rpc;
  if (jobs[0].ioengine == "nfs") {
    if (auto at = OpenStorage(RemoteJobUrl(jobs[0], jobs[0].path)); at.ok())
      rpc = RpcBillProbe::For(*at->storage, at->path);
  } else {
    rpc = RpcBillProbe::For(*LocalStorage(), where);
  }
  rpc.Start();
  auto r = RunIoJobs(jobs, hooks);
  const std::optional<RpcBill> bill = r.ok() ? rpc.Stop() : std::nullopt;
  // Per IO over every IO the engines did, the ramp's too; per GiB only without a ramp (the
  // bytes are counted after it).
  uint64_t ios = 0, bytes = 0;
  bool ramp = false;
  if (r.ok()) {
    for (const auto& j : r->jobs) {
      ios += j.engine_ios;
      bytes += j.read.io_bytes + j.write.io_bytes;
    }
  }
  for (const auto& o : jobs) ramp = ramp || o.ramp_time > 0;
  if (ramp) bytes = 0;
  if (!r.ok() && r.status().code() == Code::kUnsupported) {  // asked for explicitly
    return DsbenchFail(
        Status(r.status().code(), r.status().message() + "; rerun with --ioengine psync"));
  }
  if (!r.ok()) return DsbenchFail(r.status());
  std::string report;
  for (const auto& f : spec.out.formats) {
    if (f == "normal") {
      report += probe.ToText();
      report += JobsText(jobs, *r);
      if (bill)
        report += fmt::format("RPCs ({}): {}\n", bill->source, FormatRpcBill(*bill, ios, "IO"));
      if (StopRequested()) report += "interrupted: partial results above\n";
    } else if (f == "terse") {
      report += JobsTerse(jobs, *r);
    } else {
      auto j = JobsJson(jobs, *r, f == "json+", spec.global_given);
      j["dsbench"] = {{"probe", probe.ToJson()},
                      {"interrupted", StopRequested()},
                      {"rpc_bill", bill ? RpcBillJson(*bill, ios, bytes, "io") : nlohmann::json()}};
      report += DumpJson(j) + "\n";
    }
  }
  if (spec.out.file.empty()) {
    std::fputs(report.c_str(), stdout);
    return 0;
  }
  // Written whole under a temporary name and renamed: never a partial report under the name.
  if (Status s = WriteFileAtomic(spec.out.file, report); !s.ok()) return DsbenchFail(s);
  return 0;
}

}  // namespace ds::bench
