#include "src/rpc_bill.h"

#include <fmt/format.h>
#include <sys/vfs.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <vector>

#include "src/nfs_connection.h"

namespace ds {
namespace {

constexpr double kGiB = 1024.0 * 1024 * 1024;
constexpr long kNfsSuperMagic = 0x6969;  // linux/magic.h NFS_SUPER_MAGIC

// The ops of a bill, the most frequent first (names break ties), without empty ones.
std::vector<std::pair<std::string, const RpcOpStats*>> ByCount(const RpcBill& bill) {
  std::vector<std::pair<std::string, const RpcOpStats*>> ops;
  for (const auto& [name, stats] : bill.ops) {
    if (stats.count) ops.emplace_back(name, &stats);
  }
  std::stable_sort(ops.begin(), ops.end(),
                   [](const auto& a, const auto& b) { return a.second->count > b.second->count; });
  return ops;
}

std::string Trim(const std::string& s) {
  size_t b = s.find_first_not_of(" \t");
  size_t e = s.find_last_not_of(" \t\r");
  return b == std::string::npos ? "" : s.substr(b, e - b + 1);
}

}  // namespace

void RpcOpStats::Merge(const RpcOpStats& o) {
  count += o.count;
  failed += o.failed;
  latency.Merge(o.latency);
  rtt_ms_sum += o.rtt_ms_sum;
  execute_ms_sum += o.execute_ms_sum;
  bytes_sent += o.bytes_sent;
  bytes_received += o.bytes_received;
  retransmits += o.retransmits;
}

double RpcOpStats::mean_ms() const {
  if (latency.count()) return latency.mean() / 1e6;
  return count ? execute_ms_sum / static_cast<double>(count) : 0;
}

uint64_t RpcBill::total() const {
  uint64_t n = 0;
  for (const auto& [name, stats] : ops) n += stats.count;
  return n;
}

void RpcBill::Merge(const RpcBill& o) {
  if (source.empty()) source = o.source;
  if (protocol.empty()) protocol = o.protocol;
  for (const auto& [name, stats] : o.ops) ops[name].Merge(stats);
}

std::string FormatRpcBill(const RpcBill& bill, uint64_t samples, std::string_view unit) {
  auto ops = ByCount(bill);
  if (ops.empty()) return "no RPCs";
  double per = samples ? static_cast<double>(samples) : 1.0;
  std::string out;
  for (const auto& [name, stats] : ops) {
    if (!out.empty()) out += " + ";
    out += fmt::format("{:.{}f} {}", static_cast<double>(stats->count) / per,
                       samples ? (stats->count < samples ? 3 : 2) : 0, name);
  }
  return out + (samples ? fmt::format(" per {}", unit) : std::string(" RPCs"));
}

nlohmann::json RpcBillJson(const RpcBill& bill, uint64_t samples, uint64_t bytes,
                           std::string_view unit) {
  std::string per_unit = fmt::format("per_{}", unit);
  using json = nlohmann::json;
  auto per = [&](uint64_t n, double of) -> json {
    if (of <= 0) return nullptr;
    return static_cast<double>(n) / of;
  };
  double gib = static_cast<double>(bytes) / kGiB;
  double s = static_cast<double>(samples);
  json ops = json::object();
  for (const auto& [name, stats] : ByCount(bill)) {
    json lat = nullptr;
    if (stats->latency.count()) {
      lat = {{"p50", stats->latency.Percentile(50)},
             {"p90", stats->latency.Percentile(90)},
             {"p99", stats->latency.Percentile(99)},
             {"p99.9", stats->latency.Percentile(99.9)},
             {"max", stats->latency.max()}};
    }
    ops[name] = {{"count", stats->count},          {"failed", stats->failed},
                 {per_unit, per(stats->count, s)}, {"per_gib", per(stats->count, gib)},
                 {"mean_ms", stats->mean_ms()},    {"lat_ns", lat}};
  }
  return {{"source", bill.source},
          {"protocol", bill.protocol},
          {"total", bill.total()},
          {per_unit, per(bill.total(), s)},
          {"per_gib", per(bill.total(), gib)},
          {"ops", ops}};
}

RpcBill RpcBillDelta(const RpcBill& after, const RpcBill& before) {
  RpcBill d;
  d.source = after.source;
  d.protocol = after.protocol;
  for (const auto& [name, a] : after.ops) {
    auto it = before.ops.find(name);
    RpcOpStats s = a;
    if (it != before.ops.end()) {
      const RpcOpStats& b = it->second;
      s.count -= std::min(s.count, b.count);
      s.failed -= std::min(s.failed, b.failed);
      if (!s.latency.Subtract(b.latency)) s.latency = LatencyHistogram();
      s.rtt_ms_sum = std::max(0.0, s.rtt_ms_sum - b.rtt_ms_sum);
      s.execute_ms_sum = std::max(0.0, s.execute_ms_sum - b.execute_ms_sum);
      s.bytes_sent -= std::min(s.bytes_sent, b.bytes_sent);
      s.bytes_received -= std::min(s.bytes_received, b.bytes_received);
      s.retransmits -= std::min(s.retransmits, b.retransmits);
    }
    if (s.count || s.failed) d.ops[name] = std::move(s);
  }
  return d;
}

// mountstats (fs/nfs/super.c nfs_show_stats, net/sunrpc/stats.c rpc_print_iostats):
//   device SRV:/export mounted on /mnt with fstype nfs statvers=1.1
//       RPC iostats version: 1.1  p/v: 100003/3 (nfs)
//       per-op statistics
//           GETATTR: ops trans timeouts bytes_sent bytes_recv queue_ms rtt_ms execute_ms [errors]
std::map<std::string, RpcBill> ParseMountstats(const std::string& text) {
  std::map<std::string, RpcBill> mounts;
  std::istringstream in(text);
  std::string line;
  RpcBill* cur = nullptr;
  bool in_ops = false;
  while (std::getline(in, line)) {
    if (line.rfind("device ", 0) == 0) {
      cur = nullptr;
      in_ops = false;
      size_t on = line.find(" mounted on ");
      size_t with = line.rfind(" with fstype ");
      if (on == std::string::npos || with == std::string::npos || with < on) continue;
      std::string mount = line.substr(on + 12, with - on - 12);
      std::istringstream rest(line.substr(with + 13));
      std::string fstype;
      rest >> fstype;
      if (fstype != "nfs" && fstype != "nfs4") continue;
      cur = &mounts[mount];
      cur->source = "kernel";
      cur->protocol = fstype == "nfs4" ? "NFSv4" : "NFSv3";
      continue;
    }
    if (!cur) continue;
    std::string t = Trim(line);
    if (t.rfind("RPC iostats version:", 0) == 0) {
      size_t pv = t.find("p/v: 100003/");
      if (pv != std::string::npos) cur->protocol = "NFSv" + t.substr(pv + 12, 1);
      continue;
    }
    if (t == "per-op statistics") {
      in_ops = true;
      continue;
    }
    if (!in_ops) continue;
    size_t colon = t.find(':');
    if (colon == std::string::npos || colon == 0) {
      in_ops = false;
      continue;
    }
    std::string name = t.substr(0, colon);
    std::istringstream f(t.substr(colon + 1));
    uint64_t ops = 0, trans = 0, timeouts = 0, sent = 0, recv = 0;
    double queue_ms = 0, rtt_ms = 0, exe_ms = 0;
    if (!(f >> ops >> trans >> timeouts >> sent >> recv >> queue_ms >> rtt_ms >> exe_ms)) continue;
    if (ops == 0 && timeouts == 0) continue;
    RpcOpStats& s = cur->ops[name];
    s.count = ops;
    s.failed = timeouts;
    s.bytes_sent = sent;
    s.bytes_received = recv;
    s.rtt_ms_sum = rtt_ms;
    s.execute_ms_sum = exe_ms;
    s.retransmits = trans > ops ? trans - ops : 0;
  }
  return mounts;
}

namespace {

std::optional<std::map<std::string, RpcBill>> KernelMounts() {
  std::ifstream f("/proc/self/mountstats");
  if (!f) return std::nullopt;
  std::stringstream ss;
  ss << f.rdbuf();
  return ParseMountstats(ss.str());
}

std::optional<RpcBill> KernelMountBill(const std::string& mount_point) {
  auto mounts = KernelMounts();
  if (!mounts) return std::nullopt;
  auto it = mounts->find(mount_point);
  if (it == mounts->end()) return std::nullopt;  // unmounted since
  return it->second;
}

}  // namespace

RpcBillProbe RpcBillProbe::For(const Storage& storage, const std::string& path) {
  RpcBillProbe p;
  if (storage.scheme() == "nfs") {
    p.kind_ = Kind::kLibnfs;
    return p;
  }
  if (storage.scheme() != "file") return p;
  struct statfs fs {};
  if (::statfs(path.c_str(), &fs) != 0 || fs.f_type != kNfsSuperMagic) return p;
  char* real = ::realpath(path.c_str(), nullptr);
  if (!real) return p;
  std::string abs = real;
  std::free(real);
  // The NFS mount holding the path: the longest mount point that is a prefix of it.
  auto mounts = KernelMounts();
  if (!mounts) return p;
  std::string best;
  for (const auto& [m, bill] : *mounts) {
    bool prefix =
        abs == m || m == "/" ||
        (abs.size() > m.size() && abs.compare(0, m.size(), m) == 0 && abs[m.size()] == '/');
    if (prefix && m.size() > best.size()) best = m;
  }
  if (best.empty()) return p;
  p.kind_ = Kind::kKernel;
  p.mount_point_ = best;
  return p;
}

void RpcBillProbe::Start() {
  switch (kind_) {
    case Kind::kLibnfs:
      before_ = LibnfsRpcSnapshot();
      calls_before_ = NfsConnection::calls_made();
      break;
    case Kind::kKernel:
      before_ = KernelMountBill(mount_point_).value_or(RpcBill{});
      break;
    case Kind::kNone:
      break;
  }
}

std::optional<RpcBill> RpcBillProbe::Stop() const {
  std::optional<RpcBill> after;
  if (kind_ == Kind::kLibnfs) {
    after = LibnfsRpcSnapshot();
    // Calls made but no RPC counted: this libnfs binds its own calls (src/nfs_rpc_count.cc).
    if (after->total() == before_.total() && NfsConnection::calls_made() > calls_before_) {
      return std::nullopt;
    }
  } else if (kind_ == Kind::kKernel) {
    after = KernelMountBill(mount_point_);
  }
  if (!after) return std::nullopt;
  RpcBill d = RpcBillDelta(*after, before_);
  if (d.source.empty()) d.source = kind_ == Kind::kLibnfs ? "libnfs" : "kernel";
  return d;
}

}  // namespace ds
