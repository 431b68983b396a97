// fio's option table (bench/io/fio_option_table.h).
#include "bench/io/fio_option_table.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <sstream>

#include "src/human.h"

namespace ds::bench {
namespace fio {

namespace {

Status Bad(const std::string& key, const std::string& value, std::string_view want) {
  return Status(Code::kInvalidArgument,
                fmt::format("{}={}: {}", key, value.empty() ? "''" : value, want));
}

Result<uint64_t> Uint(const std::string& key, const std::string& v, uint64_t lo, uint64_t hi) {
  uint64_t x = 0;
  auto [p, ec] = std::from_chars(v.data(), v.data() + v.size(), x);
  if (ec != std::errc() || p != v.data() + v.size() || x < lo || x > hi) {
    return Bad(key, v, fmt::format("give a whole number in {}..{}", lo, hi));
  }
  return x;
}

Result<bool> Bool(const std::string& key, const std::string& v) {
  if (v == "1" || v == "true" || v == "yes" || v == "on") return true;
  if (v == "0" || v == "false" || v == "no" || v == "off") return false;
  return Bad(key, v, "give 1 or 0");
}

Result<uint64_t> Size(const std::string& key, const std::string& v) {
  if (v.find_first_of(",:%") != std::string::npos) {
    return Bad(key, v, "per-direction lists and percentages are not supported; give one size");
  }
  auto s = ParseSize(v);
  if (!s.ok()) return Bad(key, v, s.status().message());
  return *s;
}

// fio's time options: seconds when no unit is given (thinktime: microseconds).
Result<double> Seconds(const std::string& key, const std::string& v, double bare_unit = 1) {
  bool bare = !v.empty() && v.find_first_not_of("0123456789.") == std::string::npos;
  auto d = ParseDuration(v);
  if (!d.ok()) return Bad(key, v, d.status().message());
  return bare ? *d * bare_unit : *d;
}

// A setter from statements (variadic: a braced initialiser's commas are not argument breaks).
#define DS_SET(...)                              \
  [](Build& b, const std::string& v) -> Status { \
    (void)b;                                     \
    (void)v;                                     \
    __VA_ARGS__;                                 \
    return Status::Ok();                         \
  }
#define DS_SET_U(field, key, lo, hi) DS_SET(DS_ASSIGN_OR_RETURN(b.o.field, Uint(key, v, lo, hi)))
#define DS_SET_B(field, key) DS_SET(DS_ASSIGN_OR_RETURN(b.o.field, Bool(key, v)))

Status SetRw(Build& b, const std::string& v) {
  if (v == "rw" || v == "readwrite") {
    b.o.rw = RwMode::kRw;
    return Status::Ok();
  }
  auto m = ParseRw(v);
  if (!m.ok()) {
    return Bad("rw", v,
               "choose read, write, randread, randwrite, rw (readwrite), randrw, trim or randtrim");
  }
  b.o.rw = *m;
  return Status::Ok();
}

Status SetEngine(Build& b, const std::string& v) {
  if (v == "sync" || v == "psync") {
    b.o.ioengine = "psync";  // both are pread/pwrite here (fio's sync seeks then reads)
  } else if (v == "posixaio") {
    b.o.ioengine = "psync";
    // A named string, not a literal: GCC 12's -Warray-bounds misfires on push_back("...") here.
    static const std::string kNote =
        "ioengine=posixaio runs as psync (glibc's POSIX AIO is a thread pool issuing "
        "pread/pwrite)";
    b.notes->push_back(kNote);
  } else if (v == "io_uring" || v == "libaio" || v == "mmap" || v == "nfs") {
    b.o.ioengine = v;
  } else {
    return Bad("ioengine", v, "choose psync, sync, libaio, io_uring, mmap, nfs or posixaio");
  }
  return Status::Ok();
}

Status SetFileService(Build& b, const std::string& v) {
  auto colon = v.find(':');
  std::string kind = v.substr(0, colon);
  if (kind == "roundrobin") {
    b.o.file_service = FileService::kRoundRobin;
  } else if (kind == "random") {
    b.o.file_service = FileService::kRandom;
  } else if (kind == "sequential") {
    b.o.file_service = FileService::kSequential;
  } else {
    return Bad("file_service_type", v,
               "choose roundrobin, random or sequential (fio's zipf/pareto/gauss file choice is "
               "not supported)");
  }
  b.o.file_service_n = 1;
  if (colon != std::string::npos) {
    DS_ASSIGN_OR_RETURN(uint64_t n, Uint("file_service_type", v.substr(colon + 1), 1, UINT32_MAX));
    b.o.file_service_n = static_cast<unsigned>(n);
  }
  return Status::Ok();
}

Status SetFallocate(Build& b, const std::string& v) {
  static const std::pair<const char*, FallocateMode> kModes[] = {
      {"none", FallocateMode::kNone},        {"0", FallocateMode::kNone},
      {"posix", FallocateMode::kPosix},      {"1", FallocateMode::kPosix},
      {"keep", FallocateMode::kKeep},        {"native", FallocateMode::kNative},
      {"truncate", FallocateMode::kTruncate}};
  for (const auto& [name, mode] : kModes) {
    if (v == name) {
      b.o.fallocate = mode;
      return Status::Ok();
    }
  }
  return Bad("fallocate", v, "choose none, posix, keep, native or truncate");
}

Status SetCpus(Build& b, const std::string& v) {
  b.o.cpus.clear();
  std::stringstream ss(v);
  std::string part;
  while (std::getline(ss, part, ',')) {
    auto dash = part.find('-');
    std::string lo_s = part.substr(0, dash);
    std::string hi_s = dash == std::string::npos ? lo_s : part.substr(dash + 1);
    auto lo = Uint("cpus_allowed", lo_s, 0, 4095);
    auto hi = Uint("cpus_allowed", hi_s, 0, 4095);
    if (!lo.ok() || !hi.ok() || *hi < *lo) return Bad("cpus_allowed", v, "give a list: 0-3,6");
    for (uint64_t c = *lo; c <= *hi; c++) b.o.cpus.push_back(static_cast<int>(c));
  }
  if (b.o.cpus.empty()) return Bad("cpus_allowed", v, "give a list: 0-3,6");
  return Status::Ok();
}

Status SetPercentiles(Build& b, const std::string& v) {
  b.o.percentiles.clear();
  std::stringstream ss(v);
  std::string part;
  while (std::getline(ss, part, ':')) {
    double p = 0;
    auto [e, ec] = std::from_chars(part.data(), part.data() + part.size(), p);
    if (ec != std::errc() || e != part.data() + part.size() || p <= 0 || p > 100) {
      return Bad("percentile_list", v, "give percentiles in (0, 100] separated by ':'");
    }
    b.o.percentiles.push_back(p);
  }
  if (b.o.percentiles.empty() || b.o.percentiles.size() > 20) {  // fio's FIO_IO_U_LIST_MAX_LEN
    return Bad("percentile_list", v, "give 1 to 20 percentiles separated by ':'");
  }
  std::sort(b.o.percentiles.begin(), b.o.percentiles.end());
  return Status::Ok();
}

// The table: every option dsbench io accepts, with fio's meaning (fio's HOWTO).
const Option kOptions[] = {
    {"name", nullptr, false, "Job name; on the command line, starts a new job",
     DS_SET(b.o.name = v)},
    {"filename", nullptr, false,
     "Test file (created with `size` bytes when missing); shared by the job's numjobs",
     DS_SET(b.filename = v)},
    {"directory", nullptr, false, "Directory for the test files NAME.N.0 (one per numjobs)",
     DS_SET(b.directory = v)},
    {"rw", "readwrite", false, "read|write|randread|randwrite|rw|randrw|trim|randtrim", SetRw},
    {"bs", "blocksize", false, "Block size (4k, 1M)",
     DS_SET(DS_ASSIGN_OR_RETURN(b.o.bs, Size("bs", v)); b.o.sizes = {b.o.bs, b.o.bs, {}})},
    {"bsrange", "blocksize_range", false, "Block sizes in MIN-MAX, multiples of MIN (4k-64k)",
     DS_SET(DS_ASSIGN_OR_RETURN(b.o.sizes, ParseBsRange(v)); b.o.bs = b.o.sizes.min)},
    {"bssplit", nullptr, false, "Block sizes by weight (4k/50:64k/30:1m/20)",
     DS_SET(DS_ASSIGN_OR_RETURN(b.o.sizes, ParseBsSplit(v)); b.o.bs = b.o.sizes.min)},
    {"iodepth", nullptr, false, "Requests in flight per job",
     DS_SET_U(iodepth, "iodepth", 1, kMaxIodepth)},
    {"numjobs", nullptr, false, "Clones of this job, each with its own file unless filename",
     DS_SET_U(numjobs, "numjobs", 1, kMaxJobs)},
    {"direct", nullptr, true, "1 = O_DIRECT", DS_SET_B(direct, "direct")},
    {"buffered", nullptr, true, "1 = through the page cache (direct=0)",
     DS_SET(DS_ASSIGN_OR_RETURN(bool x, Bool("buffered", v)); b.o.direct = !x)},
    {"size", nullptr, false, "Bytes each job works on, over its nrfiles files (1G)",
     DS_SET(DS_ASSIGN_OR_RETURN(b.o.size, Size("size", v)))},
    {"filesize", nullptr, false, "Bytes of each file (default: size / nrfiles)",
     DS_SET(DS_ASSIGN_OR_RETURN(uint64_t s, Size("filesize", v)); b.filesize = s)},
    {"nrfiles", nullptr, false, "Files per job, NAME.N.F in the directory",
     DS_SET_U(nrfiles, "nrfiles", 1, kMaxFilesPerJob)},
    {"file_service_type", nullptr, false,
     "Which file each IO goes to: roundrobin|random|sequential, :N = after N IOs", SetFileService},
    {"io_size", "io_limit", false, "Bytes each job transfers (default size x loops)",
     DS_SET(DS_ASSIGN_OR_RETURN(b.o.io_size, Size("io_size", v)))},
    {"offset", nullptr, false, "Where in the file the job's region starts",
     DS_SET(DS_ASSIGN_OR_RETURN(b.o.offset, Size("offset", v)))},
    {"loops", nullptr, false, "Passes over the region", DS_SET_U(loops, "loops", 1, 1u << 30)},
    {"runtime", "timeout", false, "Time limit (30, 30s, 5m)",
     DS_SET(DS_ASSIGN_OR_RETURN(b.o.runtime, Seconds("runtime", v)))},
    {"time_based", nullptr, true, "Repeat over the region until runtime",
     DS_SET(DS_ASSIGN_OR_RETURN(b.o.time_based, Bool("time_based", v)))},
    {"ramp_time", nullptr, false, "Time run but not counted",
     DS_SET(DS_ASSIGN_OR_RETURN(b.o.ramp_time, Seconds("ramp_time", v)))},
    {"startdelay", nullptr, false, "Wait this long before the job starts",
     DS_SET(DS_ASSIGN_OR_RETURN(b.o.startdelay, Seconds("startdelay", v)))},
    {"thinktime", nullptr, false, "Pause after each completion (microseconds without a unit)",
     DS_SET(DS_ASSIGN_OR_RETURN(b.o.thinktime, Seconds("thinktime", v, 1e-6)))},
    {"rate", nullptr, false, "Bandwidth cap per job (bytes/s: 50M)",
     DS_SET(DS_ASSIGN_OR_RETURN(b.o.rate, Size("rate", v)))},
    {"rate_iops", nullptr, false, "IOPS cap per job",
     DS_SET_U(rate_iops, "rate_iops", 0, UINT32_MAX)},
    {"ioengine", nullptr, false, "psync|sync|libaio|io_uring|mmap|nfs|posixaio", SetEngine},
    {"nfs_url", nullptr, false,
     "ioengine=nfs: the export, nfs://SERVER/EXPORT[/DIR][?ARGS]; PATH is inside it",
     DS_SET(b.o.nfs_url = v)},
    {"iodepth_batch_submit", "iodepth_batch", false, "Submit queued requests in groups of N",
     DS_SET_U(iodepth_batch_submit, "iodepth_batch_submit", 1, kMaxIodepth)},
    {"registerfiles", nullptr, true, "io_uring: register the file",
     DS_SET_B(registerfiles, "registerfiles")},
    {"fixedbufs", nullptr, true, "io_uring: register the IO buffers",
     DS_SET_B(fixedbufs, "fixedbufs")},
    {"sqthread_poll", nullptr, true, "io_uring: a kernel thread polls the submission queue",
     DS_SET_B(sqthread_poll, "sqthread_poll")},
    {"invalidate", nullptr, true, "Drop the file's cached pages before the job",
     DS_SET_B(invalidate, "invalidate")},
    {"rwmixread", nullptr, false, "rw/randrw: % reads", DS_SET_U(rwmixread, "rwmixread", 0, 100)},
    {"rwmixwrite", nullptr, false, "rw/randrw: % writes",
     DS_SET(DS_ASSIGN_OR_RETURN(uint64_t w, Uint("rwmixwrite", v, 0, 100));
            b.o.rwmixread = static_cast<unsigned>(100 - w))},
    {"fsync", nullptr, false, "fsync the file after every N writes",
     DS_SET_U(fsync_every, "fsync", 0, UINT32_MAX)},
    {"end_fsync", nullptr, true, "fsync the file when the job's writes are done",
     DS_SET_B(end_fsync, "end_fsync")},
    {"randrepeat", nullptr, true, "1: the same random offsets every run; 0: new ones",
     DS_SET_B(randrepeat, "randrepeat")},
    {"randseed", nullptr, false, "Seed of the random offsets",
     DS_SET_U(seed, "randseed", 0, UINT64_MAX)},
    {"norandommap", nullptr, true,
     "Random offsets drawn with replacement (dsbench always does: it keeps no random map)",
     DS_SET(DS_ASSIGN_OR_RETURN(bool x, Bool("norandommap", v));
            if (!x) return Bad("norandommap", v, "dsbench keeps no random map; give 1"))},
    {"random_distribution", nullptr, false,
     "Random offsets: random (uniform), zipf:THETA, pareto:H, normal:DEV%",
     DS_SET(DS_ASSIGN_OR_RETURN(b.o.distribution, ParseDistribution(v)))},
    {"cpus_allowed", nullptr, false, "CPUs the job's threads may run on (0-3,6)", SetCpus},
    {"percentile_list", nullptr, false, "clat percentiles to report (50:99:99.9)", SetPercentiles},
    {"lat_percentiles", nullptr, true, "Report lat's percentiles too (lat is clat: no slat apart)",
     DS_SET_B(lat_percentiles, "lat_percentiles")},
    {"gtod_reduce", nullptr, true, "No per-IO clock: no latencies or bw/iops samples, totals only",
     DS_SET_B(gtod_reduce, "gtod_reduce")},
    {"hipri", nullptr, true, "io_uring: polled completions (needs direct=1 and poll queues)",
     DS_SET_B(hipri, "hipri")},
    {"verify", nullptr, false,
     "Writes: checksum each block, read back and check it after the job (crc32c|md5)",
     DS_SET(DS_ASSIGN_OR_RETURN(b.o.verify, ParseVerify(v)))},
    {"fallocate", nullptr, false,
     "Preallocation of a laid-out file: none|posix|keep|native|truncate", SetFallocate},
    {"group_reporting", nullptr, true, "One result for each reporting group",
     DS_SET_B(group_reporting, "group_reporting")},
    {"stonewall", "wait_for_previous", true, "Wait for the jobs before this one to finish",
     DS_SET_B(stonewall, "stonewall")},
    {"new_group", nullptr, true, "Start a new reporting group", DS_SET_B(new_group, "new_group")},
    {"write_bw_log", nullptr, true, "Log bandwidth to PREFIX_bw.N.log (bare: the job's name)",
     DS_SET(b.o.logs.bw = v), kJobName},
    {"write_lat_log", nullptr, true, "Log latency to PREFIX_{lat,clat,slat}.N.log",
     DS_SET(b.o.logs.lat = v), kJobName},
    {"write_iops_log", nullptr, true, "Log IOPS to PREFIX_iops.N.log", DS_SET(b.o.logs.iops = v),
     kJobName},
    {"log_avg_msec", nullptr, false, "Average the logs over this many ms (0: every IO)",
     DS_SET_U(logs.avg_msec, "log_avg_msec", 0, 86400000)},
    {"unlink", nullptr, true, "Remove the test files dsbench created (dsbench's default: 1)",
     DS_SET(DS_ASSIGN_OR_RETURN(bool x, Bool("unlink", v)); b.o.keep = !x)},
};

}  // namespace

// fio's command-line options (not job options).
namespace {
const char* const kCliOnly[] = {"output", "output-format", "section", "eta", "status-interval"};
}  // namespace

bool IsCliOnly(std::string_view key) {
  return std::find(std::begin(kCliOnly), std::end(kCliOnly), key) != std::end(kCliOnly);
}

Status SetCliOnly(const std::string& key, const std::string& value, FioOutput* out) {
  if (key == "output") {
    out->file = value;
  } else if (key == "eta") {
    if (value == "auto") {
      out->eta = FioOutput::Eta::kAuto;
    } else if (value == "always") {
      out->eta = FioOutput::Eta::kAlways;
    } else if (value == "never") {
      out->eta = FioOutput::Eta::kNever;
    } else {
      return Bad("--eta", value, "choose auto, always or never");
    }
  } else if (key == "status-interval") {
    DS_ASSIGN_OR_RETURN(out->status_interval, Seconds("--status-interval", value));
    if (out->status_interval <= 0) return Bad("--status-interval", value, "give a time > 0 (5s)");
  } else {
    std::stringstream ss(value);
    std::string part;
    auto& list = key == "section" ? out->sections : out->formats;
    if (key == "output-format") list.clear();  // a later one wins; --section adds up
    while (std::getline(ss, part, ',')) list.push_back(part);
  }
  return Status::Ok();
}

std::span<const Option> Options() { return kOptions; }

const Option* Find(std::string_view key) {
  for (const auto& o : kOptions) {
    if (key == o.name || (o.alias && key == o.alias)) return &o;
  }
  return nullptr;
}

Status Unknown(const std::string& key, const std::string& where) {
  // A typo of one we support: "did you mean bsrange?" (at most 2 edits away).
  std::string_view best;
  size_t best_d = 3;
  for (const auto& o : kOptions) {
    for (const char* n : {o.name, o.alias}) {
      if (!n) continue;
      if (size_t d = EditDistance(key, n); d < best_d) {
        best_d = d;
        best = n;
      }
    }
  }
  std::string hint =
      best.empty() ? std::string("remove it") : fmt::format("did you mean {}?", best);
  return Status(Code::kInvalidArgument,
                fmt::format("{}: '{}' is not an option dsbench io supports (`dsbench io --help` "
                            "lists them); {}",
                            where, key, hint));
}

}  // namespace fio

bool IsFioOption(std::string_view name) {
  return fio::Find(name) != nullptr || fio::IsCliOnly(name);
}

std::string FioOptionsHelp() {
  std::string s =
      "fio options (--key=VALUE or --key VALUE; in a job file: key=VALUE), with fio's "
      "meaning:\n";
  for (const auto& o : fio::Options()) {
    std::string name = o.alias ? fmt::format("{} ({})", o.name, o.alias) : o.name;
    s += fmt::format("  --{:<36} {}\n", name, o.help);
  }
  s += "  --output=FILE                          Write the report to FILE\n"
       "  --output-format=normal|json|json+|terse  A comma list prints each\n"
       "  --section=NAME                         Run only this job section (repeatable)\n"
       "  --eta=auto|always|never                The progress line on stderr (auto: a terminal)\n"
       "  --status-interval=TIME                 A status report every TIME (5s), text only\n"
       "Any other option is refused (exit 2), never ignored.\n";
  return s;
}

}  // namespace ds::bench
