// The compare report's model and accessors (bench/compare/report_model.h).
#include "bench/compare/report_model.h"

#include <cstdlib>

#include "src/human.h"

namespace ds::bench::report {

double Num(const json& j, const char* key) {
  if (!j.is_object()) return kNaN;
  auto it = j.find(key);
  return it != j.end() && it->is_number() ? it->get<double>() : kNaN;
}

std::string Str(const json& j, const char* key) {
  if (!j.is_object()) return "";
  auto it = j.find(key);
  return it != j.end() && it->is_string() ? it->get<std::string>() : "";
}

const json& Arr(const json& j, const char* key) {
  static const json kEmpty = json::array();
  if (!j.is_object()) return kEmpty;
  auto it = j.find(key);
  return it != j.end() && it->is_array() ? *it : kEmpty;
}

// A percentile from fio's block {"percentile": {"99.000000": ns, ...}}.
double Pct(const json& lat, double p) {
  if (!lat.is_object() || !lat.contains("percentile") || !lat["percentile"].is_object()) {
    return kNaN;
  }
  for (const auto& [k, v] : lat["percentile"].items()) {
    if (v.is_number() && std::abs(std::strtod(k.c_str(), nullptr) - p) < 1e-9) {
      return v.get<double>();
    }
  }
  return kNaN;
}

std::string Seconds(double s) {
  return s <= 0 ? "0 s" : s < 1 ? svg::Ns(s * 1e9) : FormatDuration(s);
}
std::string Percent(double f) { return fmt::format("{:.0f}%", f * 100); }
std::string PerSec(double v) { return FormatCount(v) + "/s"; }

std::string Key(const std::string& layout, const Combo& k, const char* field) {
  return svg::Esc(fmt::format("{}/{}/{}/{}", layout, k.storage, k.cache, field));
}

std::string DataAttrs(const std::string& key, double v) {
  if (std::isnan(v)) return fmt::format("data-key=\"{}\"", key);
  return fmt::format("data-key=\"{}\" data-value=\"{}\"", key, svg::Exact(v));
}

}  // namespace ds::bench::report
