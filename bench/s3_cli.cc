#include "bench/s3_cli.h"

#include <cstdio>

#include "bench/common/latency_report.h"
#include "bench/io_cli.h"
#include "bench/s3/s3_bench.h"
#include "mpi/world.h"
#include "src/cli_args.h"
#include "src/human.h"

namespace ds::bench {

struct S3Commands::Flags {
  S3BenchOptions o;
  CLI::App* s3 = nullptr;
  std::string obj_size = "1MiB", range = "0", duration = "10s", segment = "1s", min_bw = "0",
              max_ttfb = "0";
  bool json = false;
  double mpi_timeout = 600;
};

S3Commands::~S3Commands() = default;

S3Commands::S3Commands(CLI::App& app) : f_(std::make_unique<Flags>()) {
  Flags& f = *f_;
  f.s3 = app.add_subcommand(
      "s3",
      "Object-storage benchmark (warp's ops): get/put/stat/list/delete/mixed at a concurrency, "
      "ops/s and MB/s per segment, TTFB/TTLB percentiles, a verdict");
  f.s3->add_option("URL", f.o.url, "s3://BUCKET[/PREFIX]: objects go under PREFIX/dsbench-s3.*")
      ->required();
  f.s3->add_option("--op", f.o.op, "get|put|stat|list|delete|mixed")->capture_default_str();
  f.s3->add_option("--concurrency", f.o.concurrency, "Requests in flight (per rank)")
      ->capture_default_str();
  f.s3->add_option("--obj-size", f.obj_size,
                   "Object size, or MIN:MAX for sizes spread log-uniformly")
      ->capture_default_str();
  f.s3->add_option("--objects", f.o.objects,
                   "Objects prepared for get/stat/list/delete/mixed (default 2500, at most 1 GiB "
                   "in all, at most --ops)");
  f.s3->add_option("--range", f.range, "get: read this many bytes per request at random offsets")
      ->capture_default_str();
  f.s3->add_option("--duration", f.duration, "How long to run, e.g. 30s, 5m")
      ->capture_default_str();
  f.s3->add_option("--ops", f.o.ops, "Run this many operations per rank instead of a duration");
  f.s3->add_option("--segment", f.segment, "Segment length for the per-segment figures")
      ->capture_default_str();
  f.s3->add_option("--seed", f.o.seed, "Random seed")->capture_default_str();
  f.s3->add_flag("--keep", f.o.keep, "Keep the objects");
  f.s3->add_flag("--existing", f.o.existing,
                 "get/stat/list the objects already under PREFIX; prepare and delete nothing");
  f.s3->add_flag("--json", f.json, "Print results as JSON");
  f.s3->add_option("--min-bw", f.min_bw, "Verdict: at least this MB/s over all ops (0 = none)")
      ->capture_default_str();
  f.s3->add_option("--min-iops", f.o.min_iops, "Verdict: at least this many ops/s (0 = none)");
  f.s3->add_option("--max-ttfb-p99", f.max_ttfb,
                   "Verdict: TTFB p99 of every op but put at most this, e.g. 50ms (0 = none)")
      ->capture_default_str();
  f.s3->add_option("--mpi-timeout", f.mpi_timeout,
                   "Under mpirun: seconds a rank waits for the others before it aborts")
      ->capture_default_str();
  f.s3->footer(
      "Credentials, endpoint and region come from the AWS CLI's chain (docs/s3.md).\n"
      "Exit codes: 0 ok / PASS, 1 FAIL (a bar not met), 2 usage or IO error.");
}

namespace {

Status ParseFlags(S3Commands::Flags& f) {
  S3BenchOptions& o = f.o;
  auto colon = f.obj_size.find(':');
  if (colon != std::string::npos) {
    DS_RETURN_IF_ERROR(SizeFlag(f.obj_size.substr(0, colon), "--obj-size", &o.obj_size_min));
    DS_RETURN_IF_ERROR(SizeFlag(f.obj_size.substr(colon + 1), "--obj-size", &o.obj_size));
    if (o.obj_size_min == 0) return Status(Code::kInvalidArgument, "--obj-size MIN:MAX: MIN is 0");
  } else {
    DS_RETURN_IF_ERROR(SizeFlag(f.obj_size, "--obj-size", &o.obj_size));
  }
  DS_RETURN_IF_ERROR(SizeFlag(f.range, "--range", &o.range));
  DS_RETURN_IF_ERROR(SizeFlag(f.min_bw, "--min-bw", &o.min_bw));
  DS_RETURN_IF_ERROR(DurationFlag(f.duration, "--duration", &o.duration));
  DS_RETURN_IF_ERROR(DurationFlag(f.segment, "--segment", &o.segment));
  DS_RETURN_IF_ERROR(DurationFlag(f.max_ttfb, "--max-ttfb-p99", &o.max_ttfb_p99));
  return CheckS3Bench(&o);
}

void Print(const S3Commands::Flags& f, const std::vector<S3BenchResult>& ranks,
           const S3BenchSummary& s) {
  if (f.json) {
    std::printf("%s\n", DumpJson(S3BenchJson(f.o, ranks, s)).c_str());
  } else {
    std::fputs(RenderDsbenchFlags(S3BenchText(f.o, ranks, s)).c_str(), stdout);
    for (const S3BenchResult& r : ranks) {
      if (f.o.keep && !f.o.existing) std::printf("kept the objects under %s\n", r.prefix.c_str());
    }
    for (const S3BenchResult& r : ranks) {
      if (r.interrupted) {
        std::puts("interrupted: partial results above");
        break;
      }
    }
  }
}

}  // namespace

int S3Commands::Run(int* argc, char*** argv) {
  Flags& f = *f_;
  if (!f.s3->parsed()) return -1;
  if (Status s = ParseFlags(f); !s.ok()) return DsbenchFail(s);
  auto world = mpi::World::Start(argc, argv);
  if (!world.ok()) return DsbenchFail(world.status());
  mpi::World& w = **world;
  if (w.mpi()) {
    w.set_tool(std::string(kDsbench));
    w.set_timeout(f.mpi_timeout + f.o.duration);
    w.set_json_errors(f.json);
  }
  auto r = RunS3Bench(f.o, w);
  if (!r.ok()) {
    if (w.mpi() && w.agreed_failure()) return ReportAgreed(w);
    return w.mpi() ? FailRank(w, r.status()) : DsbenchFail(r.status());
  }
  if (!r->cleanup_note.empty()) {
    std::fprintf(stderr, "dsbench: warning: cleanup: %s\n", r->cleanup_note.c_str());
  }
  auto all = w.Gather(EncodeS3Result(*r), "the ranks' s3 results");
  if (!all.ok()) return w.mpi() ? FailRank(w, all.status()) : DsbenchFail(all.status());
  int code = 0;
  if (w.root()) {
    std::vector<S3BenchResult> ranks;
    for (const std::string& text : *all) {
      auto d = DecodeS3Result(text);
      if (!d.ok()) return w.mpi() ? FailRank(w, d.status()) : DsbenchFail(d.status());
      ranks.push_back(std::move(*d));
    }
    S3BenchSummary s = SummarizeS3(f.o, ranks);
    Print(f, ranks, s);
    code = s.pass() ? 0 : 1;
  }
  if (!w.mpi()) return code;
  auto verdict = w.Broadcast(std::to_string(code), 0, "the verdict");
  if (!verdict.ok()) return FailRank(w, verdict.status());
  return std::atoi(verdict->c_str());
}

}  // namespace ds::bench
