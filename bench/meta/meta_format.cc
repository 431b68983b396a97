// dsbench meta's words: phase names, counts, the plan line, and the JSON and text reports.
#include <fmt/format.h>

#include <algorithm>
#include <cctype>

#include "bench/common/latency_report.h"
#include "bench/meta/meta.h"
#include "src/human.h"

namespace ds::bench {

const char* MetaPhaseName(MetaPhase p) {
  switch (p) {
    case MetaPhase::kCreate:
      return "create";
    case MetaPhase::kStat:
      return "stat";
    case MetaPhase::kRead:
      return "read";
    case MetaPhase::kReaddir:
      return "readdir";
    case MetaPhase::kRemove:
      return "remove";
  }
  return "?";
}

Result<std::vector<MetaPhase>> ParsePhases(std::string_view text) {
  std::array<bool, kMetaPhaseCount> want{};
  size_t start = 0;
  while (start <= text.size()) {
    size_t comma = std::min(text.find(',', start), text.size());
    std::string_view name = text.substr(start, comma - start);
    auto it = std::find_if(kAllMetaPhases.begin(), kAllMetaPhases.end(),
                           [&](MetaPhase p) { return name == MetaPhaseName(p); });
    if (it == kAllMetaPhases.end()) {
      return Status(Code::kInvalidArgument, fmt::format("`phases`: unknown phase '{}' (choose from "
                                                        "create,stat,read,readdir,remove)",
                                                        name));
    }
    want[static_cast<size_t>(*it)] = true;
    start = comma + 1;
  }
  if (!want[0]) {
    return Status(Code::kInvalidArgument,
                  "`phases`: include create (every run makes its own files first)");
  }
  std::vector<MetaPhase> out;
  for (MetaPhase p : kAllMetaPhases) {
    if (want[static_cast<size_t>(p)]) out.push_back(p);
  }
  return out;
}

Result<uint64_t> ParseCount(std::string_view text, std::string_view flag) {
  auto bad = [&] {
    return Status(Code::kInvalidArgument,
                  fmt::format("{} '{}': give a count like 2000, 100k or 1m", flag, text));
  };
  size_t i = 0;
  uint64_t n = 0;
  for (; i < text.size() && std::isdigit(static_cast<unsigned char>(text[i])); i++) {
    if (n > UINT64_MAX / 10 - 1) return bad();
    n = n * 10 + static_cast<uint64_t>(text[i] - '0');
  }
  if (i == 0 || text.size() - i > 1) return bad();
  uint64_t mult = 1;
  if (i < text.size()) {
    switch (std::tolower(static_cast<unsigned char>(text[i]))) {
      case 'k':
        mult = 1000;
        break;
      case 'm':
        mult = 1000000;
        break;
      case 'g':
        mult = 1000000000;
        break;
      default:
        return bad();
    }
  }
  if (n > UINT64_MAX / mult) return bad();
  return n * mult;
}

std::string MetaPlanText(const MetaOptions& o) {
  return fmt::format(
      "dsbench meta: {} threads x {} files of {}, {} dirs of at most {} files per thread, "
      "in {}\n",
      o.threads, o.files, FormatBytes(o.file_size), MetaDirsPerThread(o), o.files_per_dir,
      MetaRoot(o));
}

namespace {
double OpsPerSec(const MetaPhaseResult& p) {
  return p.seconds > 0 ? static_cast<double>(p.ops) / p.seconds : 0;
}
}  // namespace

nlohmann::json MetaJson(const MetaOptions& o, const MetaResult& r) {
  nlohmann::json phases = nlohmann::json::array();
  for (const auto& p : r.phases) {
    nlohmann::json j = {{"name", MetaPhaseName(p.phase)},
                        {"ops", p.ops},
                        {"seconds", p.seconds},
                        {"ops_per_sec", OpsPerSec(p)},
                        {"lat_per", p.phase == MetaPhase::kReaddir ? "directory" : "file"},
                        {"lat_ns", LatencyJson(p.lat)},
                        {"interrupted", p.interrupted}};
    if (p.disk) j["disk_util"] = nlohmann::json::array({p.disk->ToJson()});
    uint64_t bytes =
        p.phase == MetaPhase::kCreate || p.phase == MetaPhase::kRead ? p.ops * o.file_size : 0;
    j["rpc_bill"] = p.rpc ? RpcBillJson(*p.rpc, p.ops, bytes, "file") : nlohmann::json(nullptr);
    phases.push_back(std::move(j));
  }
  return {{"path", o.path},
          {"root", r.root},
          {"files_per_thread", o.files},
          {"threads", o.threads},
          {"file_size", o.file_size},
          {"files_per_dir", o.files_per_dir},
          {"dirs_per_thread", r.dirs_per_thread},
          {"kept", r.kept},
          {"interrupted", r.interrupted},
          {"phases", phases}};
}

std::string MetaText(const MetaOptions& o, const MetaResult& r) {
  std::string s;
  for (const auto& p : r.phases) {
    const char* what = p.phase == MetaPhase::kReaddir ? "entries" : "ops";
    s += fmt::format("{}: {}/s={} ({} {}/{:.1f}msec){}\n", MetaPhaseName(p.phase), what,
                     FormatCount(OpsPerSec(p)), p.ops, what, p.seconds * 1e3,
                     p.interrupted ? ", interrupted" : "");
    s += LatencyText(p.phase == MetaPhase::kReaddir ? "lat per directory" : "lat", p.lat);
    if (!o.disk_device.empty()) s += "    " + DiskUtilText(p.disk) + "\n";
    if (p.rpc) {
      s += fmt::format(
          "    RPCs ({}): {}\n", p.rpc->source,
          FormatRpcBill(*p.rpc, p.ops, p.phase == MetaPhase::kReaddir ? "entry" : "file"));
    }
  }
  if (o.disk_device.empty()) s += DiskUtilText(std::nullopt) + "\n";
  if (r.kept) s += fmt::format("kept: {}\n", r.root);
  return s;
}

}  // namespace ds::bench
