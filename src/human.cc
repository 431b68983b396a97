#include "src/human.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <string>
#include <vector>

namespace ds {

std::string AsciiLower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

namespace {

// A leading decimal number and the rest of the text (the unit); the error says why not.
Result<std::pair<double, std::string>> SplitNumber(const std::string& s) {
  size_t i = 0;
  while (i < s.size() && (std::isdigit(static_cast<unsigned char>(s[i])) || s[i] == '.')) i++;
  if (i == 0) return Status(Code::kInvalidArgument, "no number");
  try {
    size_t used = 0;
    double num = std::stod(s.substr(0, i), &used);
    if (used != i) return Status(Code::kInvalidArgument, "malformed number");
    return std::make_pair(num, s.substr(i));
  } catch (...) {
    return Status(Code::kInvalidArgument, "malformed number");
  }
}

}  // namespace

Result<uint64_t> ParseSize(std::string_view text) {
  auto bad = [&](std::string_view why) {
    return Status(
        Code::kInvalidArgument,
        fmt::format("invalid size '{}': {} (examples: 4096, 4k, 1MiB, 256MB, 500MB/s, 4Gbit/s)",
                    text, why));
  };
  std::string s(text);
  // Rates: "500MB/s", "500MBps"; bits: "4Gbit/s", "100Mbps" (SI, 8 bits a byte).
  bool rate = false;
  if (s.size() >= 2 && s.substr(s.size() - 2) == "/s") {
    s.resize(s.size() - 2);
    rate = true;
  } else if (s.size() >= 3 && s.substr(s.size() - 2) == "ps" &&
             std::isalpha(static_cast<unsigned char>(s[s.size() - 3]))) {
    s.resize(s.size() - 2);
    rate = true;
  }
  auto split = SplitNumber(s);
  if (!split.ok()) return bad(split.status().message());
  double num = split->first;
  std::string unit;
  for (char c : split->second)
    unit += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  bool bits = false;
  if (unit.size() >= 3 && unit.substr(unit.size() - 3) == "bit") {
    bits = true;
    unit.resize(unit.size() - 3);
  } else if (rate && split->second.size() >= 2 && split->second.back() == 'b') {  // "Mbps"
    bits = true;
    unit.pop_back();
  }
  if (bits) {  // network units are SI: k = 1000
    static const std::pair<const char*, double> kSi[] = {{"", 1},    {"k", 1e3},  {"m", 1e6},
                                                         {"g", 1e9}, {"t", 1e12}, {"p", 1e15}};
    for (const auto& [u, m] : kSi) {
      if (unit == u) return static_cast<uint64_t>(std::llround(num * m / 8));
    }
    return bad("unknown unit '" + split->second + "'");
  }
  double mult;
  if (unit.empty() || unit == "b")
    mult = 1;
  else if (unit == "k" || unit == "kib" || unit == "ki")
    mult = 0x1p10;
  else if (unit == "m" || unit == "mib" || unit == "mi")
    mult = 0x1p20;
  else if (unit == "g" || unit == "gib" || unit == "gi")
    mult = 0x1p30;
  else if (unit == "t" || unit == "tib" || unit == "ti")
    mult = 0x1p40;
  else if (unit == "p" || unit == "pib" || unit == "pi")
    mult = 0x1p50;
  else if (unit == "kb")
    mult = 1e3;
  else if (unit == "mb")
    mult = 1e6;
  else if (unit == "gb")
    mult = 1e9;
  else if (unit == "tb")
    mult = 1e12;
  else if (unit == "pb")
    mult = 1e15;
  else
    return bad("unknown unit '" + split->second + "'");
  double v = num * mult;
  if (!(v < 0x1p63)) return bad("too large");
  if (v != std::floor(v)) return bad("not a whole number of bytes");
  return static_cast<uint64_t>(v);
}

Result<double> ParseDuration(std::string_view text) {
  auto bad = [&](std::string_view why) {
    return Status(
        Code::kInvalidArgument,
        fmt::format("invalid duration '{}': {} (examples: 1ms, 0.2ms, 50us, 2s)", text, why));
  };
  auto split = SplitNumber(std::string(text));
  if (!split.ok()) return bad(split.status().message());
  auto [num, unit] = *split;
  if (unit.empty() || unit == "s") return num;
  if (unit == "ms") return num * 1e-3;
  if (unit == "us" || unit == "\u00b5s") return num * 1e-6;
  if (unit == "ns") return num * 1e-9;
  if (unit == "m" || unit == "min") return num * 60;
  if (unit == "h") return num * 3600;
  if (unit == "d") return num * 86400;
  return bad("unknown unit '" + unit + "'");
}

std::string FormatBytes(uint64_t bytes) {
  static const char* kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
  double v = static_cast<double>(bytes);
  int u = 0;
  while (v >= 1024 && u < 5) {
    v /= 1024;
    u++;
  }
  if (u == 0) return fmt::format("{} B", bytes);
  return fmt::format("{:.1f} {}", v, kUnits[u]);
}

std::string FormatRate(double bps) {
  static const char* kUnits[] = {"B/s", "kB/s", "MB/s", "GB/s", "TB/s"};
  int u = 0;
  while (bps >= 1000 && u < 4) {
    bps /= 1000;
    u++;
  }
  return fmt::format("{:.1f} {}", bps, kUnits[u]);
}

std::string FormatCount(double v) {
  if (v >= 1e6) return fmt::format("{:.2f}M", v / 1e6);
  if (v >= 1e4) return fmt::format("{:.1f}k", v / 1e3);
  return fmt::format("{:.0f}", v);
}

std::string FormatDuration(double s) {
  if (s < 1e-3) return fmt::format("{:.0f} us", s * 1e6);
  if (s < 0.01) return fmt::format("{:.1f} ms", s * 1e3);
  if (s < 1) return fmt::format("{:.0f} ms", s * 1e3);
  if (s < 100) return fmt::format("{:.2f} s", s);
  auto total = static_cast<long>(std::lround(s));
  if (total < 3600) return fmt::format("{}m{:02d}s", total / 60, static_cast<int>(total % 60));
  return fmt::format("{}h{:02d}m", total / 3600, static_cast<int>(total / 60 % 60));
}

}  // namespace ds

namespace ds {
std::string EscapeBytes(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  size_t i = 0;
  auto hex = [&](unsigned char c) { out += fmt::format("\\x{:02x}", c); };
  while (i < s.size()) {
    auto c = static_cast<unsigned char>(s[i]);
    if (c == '\\') {
      out += "\\\\";
      i++;
    } else if (c >= 0x20 && c < 0x7f) {
      out += static_cast<char>(c);
      i++;
    } else if (c < 0x80) {
      hex(c);
      i++;
    } else {
      int len = (c & 0xe0) == 0xc0 ? 2 : (c & 0xf0) == 0xe0 ? 3 : (c & 0xf8) == 0xf0 ? 4 : 0;
      bool valid = len > 0 && i + len <= s.size();
      for (int k = 1; valid && k < len; k++) {
        valid = (static_cast<unsigned char>(s[i + k]) & 0xc0) == 0x80;
      }
      if (valid) {
        out.append(s.substr(i, len));
        i += len;
      } else {
        hex(c);
        i++;
      }
    }
  }
  return out;
}
size_t EditDistance(std::string_view a, std::string_view b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); j++) row[j] = j;
  for (size_t i = 1; i <= a.size(); i++) {
    size_t diag = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); j++) {
      size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diag + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diag = up;
    }
  }
  return row[b.size()];
}

}  // namespace ds
