#include "src/diskstats.h"

#include <fcntl.h>
#include <fmt/format.h>

#include <algorithm>
#include <charconv>

#include "src/fd.h"
#include "src/human.h"

namespace ds {

// Streams are avoided on purpose: this runs in barrier completions and samplers where fds may
// be exhausted, and parsing with from_chars needs no allocation per field.
std::vector<DiskStat> ParseDiskStats(std::string_view text) {
  std::vector<DiskStat> out;
  while (!text.empty()) {
    size_t eol = std::min(text.find('\n'), text.size());
    std::string_view line = text.substr(0, eol);
    text.remove_prefix(std::min(eol + 1, text.size()));
    std::string_view f[14];
    size_t n = 0;
    while (n < 14) {
      size_t b = line.find_first_not_of(" \t");
      if (b == std::string_view::npos) break;
      line.remove_prefix(b);
      size_t e = std::min(line.find_first_of(" \t"), line.size());
      f[n++] = line.substr(0, e);
      line.remove_prefix(e);
    }
    if (n < 14) continue;
    DiskStat d;
    d.name = std::string(f[2]);
    uint64_t* counters[] = {&d.reads,     &d.read_merges,  &d.read_sectors,  &d.read_ms,
                            &d.writes,    &d.write_merges, &d.write_sectors, &d.write_ms,
                            &d.in_flight, &d.io_ms,        &d.weighted_io_ms};
    auto num = [](std::string_view t, auto* v) {
      auto [p, ec] = std::from_chars(t.data(), t.data() + t.size(), *v);
      return ec == std::errc() && p == t.data() + t.size();
    };
    bool ok = num(f[0], &d.major) && num(f[1], &d.minor);
    for (size_t i = 0; i < 11 && ok; i++) ok = num(f[3 + i], counters[i]);
    if (ok) out.push_back(std::move(d));
  }
  return out;
}

Result<DiskStat> ReadDiskStat(const std::string& device, const std::string& file) {
  // Not ReadWholeFile: /proc files report size 0.
  DS_ASSIGN_OR_RETURN(OwnedFd fd, OpenFile(file, O_RDONLY));
  std::string text;
  while (true) {
    size_t at = text.size();
    text.resize(at + 4096);
    DS_ASSIGN_OR_RETURN(size_t got, ReadUpTo(fd.get(), text.data() + at, 4096, file));
    text.resize(at + got);
    if (got < 4096) break;  // EOF
  }
  for (auto& d : ParseDiskStats(text)) {
    if (d.name == device) return std::move(d);
  }
  return Status(Code::kNotFound, fmt::format("{}: no line for device {}", file, device));
}

namespace {
uint64_t Delta(uint64_t before, uint64_t after) { return after >= before ? after - before : 0; }
double PerSec(double n, double msec) { return msec > 0 ? n * 1000 / msec : 0; }
}  // namespace

DiskUtil DiskDelta(const DiskStat& a, const DiskStat& b, double msec) {
  DiskUtil u;
  u.name = b.name;
  u.read_ios = Delta(a.reads, b.reads);
  u.write_ios = Delta(a.writes, b.writes);
  u.read_merges = Delta(a.read_merges, b.read_merges);
  u.write_merges = Delta(a.write_merges, b.write_merges);
  u.read_sectors = Delta(a.read_sectors, b.read_sectors);
  u.write_sectors = Delta(a.write_sectors, b.write_sectors);
  u.read_ticks = Delta(a.read_ms, b.read_ms);
  u.write_ticks = Delta(a.write_ms, b.write_ms);
  u.io_ticks = Delta(a.io_ms, b.io_ms);
  u.in_queue = Delta(a.weighted_io_ms, b.weighted_io_ms);
  u.msec = msec;
  return u;
}

double DiskUtil::util() const {
  if (msec <= 0) return 0;
  return std::min(100.0, 100.0 * static_cast<double>(io_ticks) / msec);
}
double DiskUtil::reads_per_sec() const { return PerSec(static_cast<double>(read_ios), msec); }
double DiskUtil::writes_per_sec() const { return PerSec(static_cast<double>(write_ios), msec); }
double DiskUtil::read_bytes_per_sec() const {
  return PerSec(static_cast<double>(read_sectors) * 512, msec);
}
double DiskUtil::write_bytes_per_sec() const {
  return PerSec(static_cast<double>(write_sectors) * 512, msec);
}
double DiskUtil::r_await_ms() const {
  return read_ios ? static_cast<double>(read_ticks) / static_cast<double>(read_ios) : 0;
}
double DiskUtil::w_await_ms() const {
  return write_ios ? static_cast<double>(write_ticks) / static_cast<double>(write_ios) : 0;
}

void DiskUtil::Add(const DiskUtil& d) {
  read_ios += d.read_ios;
  write_ios += d.write_ios;
  read_merges += d.read_merges;
  write_merges += d.write_merges;
  read_sectors += d.read_sectors;
  write_sectors += d.write_sectors;
  read_ticks += d.read_ticks;
  write_ticks += d.write_ticks;
  io_ticks += d.io_ticks;
  in_queue += d.in_queue;
  msec += d.msec;
  peak_util = std::max(peak_util, d.peak_util);
}

nlohmann::json DiskUtil::ToJson() const {
  nlohmann::json j = {{"name", name},
                      {"read_ios", read_ios},
                      {"write_ios", write_ios},
                      {"read_sectors", read_sectors},
                      {"write_sectors", write_sectors},
                      {"read_merges", read_merges},
                      {"write_merges", write_merges},
                      {"read_ticks", read_ticks},
                      {"write_ticks", write_ticks},
                      {"in_queue", in_queue},
                      {"util", util()},
                      {"msec", static_cast<uint64_t>(msec)},
                      {"r_await", r_await_ms()},
                      {"w_await", w_await_ms()}};
  if (peak_util >= 0) j["peak_util"] = peak_util;
  return j;
}

std::string DiskUtil::ToText() const {
  std::string s = fmt::format("disk stats ({}): util={:.1f}%", name, util());
  if (peak_util >= 0) s += fmt::format(" (peak {:.1f}%)", peak_util);
  s += fmt::format(" r/s={} rMB/s={:.1f} r_await={:.2f}ms w/s={} wMB/s={:.1f} w_await={:.2f}ms",
                   FormatCount(reads_per_sec()), read_bytes_per_sec() / 1e6, r_await_ms(),
                   FormatCount(writes_per_sec()), write_bytes_per_sec() / 1e6, w_await_ms());
  return s;
}

std::string DiskUtilText(const std::optional<DiskUtil>& util) {
  return util ? util->ToText() : "disk stats: n/a (no block device behind PATH)";
}

DiskSampler::DiskSampler(std::string device, std::chrono::milliseconds interval, std::string file)
    : device_(std::move(device)), file_(std::move(file)), interval_(interval) {
  if (device_.empty()) return;
  auto first = ReadDiskStat(device_, file_);
  if (!first.ok()) return;
  first_ = std::move(*first);
  first_at_ = Clock::now();
  thread_ = std::thread([this] { Loop(); });
}

DiskSampler::~DiskSampler() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void DiskSampler::Loop() {
  DiskStat last = *first_;
  Clock::time_point last_at = first_at_;
  std::unique_lock<std::mutex> lock(mu_);
  while (!cv_.wait_for(lock, interval_, [this] { return stop_; })) {
    lock.unlock();
    auto now_stat = ReadDiskStat(device_, file_);
    Clock::time_point now = Clock::now();
    lock.lock();
    if (!now_stat.ok()) continue;
    double ms = std::chrono::duration<double, std::milli>(now - last_at).count();
    peak_util_ = std::max(peak_util_, DiskDelta(last, *now_stat, ms).util());
    last = std::move(*now_stat);
    last_at = now;
  }
}

std::optional<DiskUtil> DiskSampler::Stop() {
  if (!first_) return std::nullopt;
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
  auto last = ReadDiskStat(device_, file_);
  if (!last.ok()) return std::nullopt;
  double ms = std::chrono::duration<double, std::milli>(Clock::now() - first_at_).count();
  DiskUtil u = DiskDelta(*first_, *last, ms);
  u.peak_util = peak_util_;
  return u;
}

}  // namespace ds
