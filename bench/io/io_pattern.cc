#include "bench/io/io_pattern.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <sstream>

#include "src/human.h"

namespace ds::bench {

namespace {

Status Bad(std::string_view key, const std::string& text, std::string_view want) {
  return Status(Code::kInvalidArgument, fmt::format("{}={}: {}", key, text, want));
}

Result<uint64_t> OneSize(std::string_view key, const std::string& text, const std::string& s) {
  auto v = ParseSize(s);
  if (!v.ok() || *v == 0) return Bad(key, text, fmt::format("'{}' is not a size (4k, 1M)", s));
  return *v;
}

Result<double> Number(std::string_view key, const std::string& text, const std::string& s) {
  double v = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || p != s.data() + s.size()) {
    return Bad(key, text, fmt::format("'{}' is not a number", s));
  }
  return v;
}

// A bijective 64-bit mix (SplitMix64's finaliser): scatters ranks over the region.
uint64_t Mix(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

}  // namespace

Result<BlockSizes> ParseBsRange(const std::string& text) {
  if (text.find(',') != std::string::npos) {
    return Bad("bsrange", text, "per-direction ranges are not supported; give one MIN-MAX");
  }
  auto dash = text.find('-');
  if (dash == std::string::npos) return Bad("bsrange", text, "give MIN-MAX (4k-64k)");
  BlockSizes b;
  DS_ASSIGN_OR_RETURN(b.min, OneSize("bsrange", text, text.substr(0, dash)));
  DS_ASSIGN_OR_RETURN(b.max, OneSize("bsrange", text, text.substr(dash + 1)));
  if (b.max < b.min) return Bad("bsrange", text, "MAX is smaller than MIN");
  return b;
}

Result<BlockSizes> ParseBsSplit(const std::string& text) {
  if (text.find(',') != std::string::npos) {
    return Bad("bssplit", text, "per-direction splits are not supported; give one list");
  }
  BlockSizes b;
  std::vector<std::pair<uint64_t, double>> given;
  std::vector<uint64_t> blank;  // sizes without a percentage
  std::stringstream ss(text);
  std::string part;
  double sum = 0;
  while (std::getline(ss, part, ':')) {
    auto slash = part.find('/');
    DS_ASSIGN_OR_RETURN(uint64_t size, OneSize("bssplit", text, part.substr(0, slash)));
    if (slash == std::string::npos || slash + 1 == part.size()) {
      blank.push_back(size);
      continue;
    }
    DS_ASSIGN_OR_RETURN(double pct, Number("bssplit", text, part.substr(slash + 1)));
    if (pct < 0 || pct > 100) return Bad("bssplit", text, "a percentage is in 0..100");
    given.emplace_back(size, pct);
    sum += pct;
  }
  if (given.empty() && blank.empty()) return Bad("bssplit", text, "give SIZE/PCT:SIZE/PCT");
  if (sum > 100 + 1e-9) return Bad("bssplit", text, "the percentages add up to over 100");
  if (blank.empty() && std::abs(sum - 100) > 1e-9) {
    return Bad("bssplit", text, "the percentages add up to less than 100");
  }
  for (uint64_t s : blank) given.emplace_back(s, (100 - sum) / static_cast<double>(blank.size()));
  std::erase_if(given, [](const auto& e) { return e.second <= 0; });
  if (given.empty()) return Bad("bssplit", text, "every size has 0 %");
  b.split = std::move(given);
  b.min = b.max = b.split[0].first;
  for (const auto& [s, p] : b.split) {
    b.min = std::min(b.min, s);
    b.max = std::max(b.max, s);
  }
  return b;
}

Result<OffsetDistribution> ParseDistribution(const std::string& text) {
  OffsetDistribution d;
  auto colon = text.find(':');
  std::string kind = text.substr(0, colon);
  if (kind == "random") {
    if (colon != std::string::npos)
      return Bad("random_distribution", text, "random takes no value");
    return d;
  }
  if (kind != "zipf" && kind != "pareto" && kind != "normal" && kind != "gauss") {
    return Bad("random_distribution", text,
               "choose random, zipf:THETA, pareto:H or normal:DEV (zoned is not supported)");
  }
  if (colon == std::string::npos) {
    return Bad("random_distribution", text, fmt::format("give {}:VALUE", kind));
  }
  DS_ASSIGN_OR_RETURN(d.param, Number("random_distribution", text, text.substr(colon + 1)));
  if (kind == "zipf") {
    d.kind = Distribution::kZipf;
    if (d.param <= 0 || std::abs(d.param - 1) < 1e-9) {
      return Bad("random_distribution", text, "zipf's exponent is > 0 and not 1 (1.2 is usual)");
    }
  } else if (kind == "pareto") {
    d.kind = Distribution::kPareto;
    if (d.param <= 0 || d.param >= 1) {
      return Bad("random_distribution", text, "pareto's shape is in (0, 1) (0.9 is usual)");
    }
  } else {
    d.kind = Distribution::kNormal;
    if (d.param <= 0 || d.param > 100) {
      return Bad("random_distribution", text,
                 "normal's deviation is a percentage of the region in (0, 100]");
    }
  }
  return d;
}

std::string DistributionText(const OffsetDistribution& d) {
  switch (d.kind) {
    case Distribution::kUniform:
      return "random";
    case Distribution::kZipf:
      return fmt::format("zipf:{:g}", d.param);
    case Distribution::kPareto:
      return fmt::format("pareto:{:g}", d.param);
    case Distribution::kNormal:
      return fmt::format("normal:{:g}", d.param);
  }
  return "random";
}

IoPattern::IoPattern(const BlockSizes& sizes, const OffsetDistribution& dist, uint64_t region,
                     bool random)
    : sizes_(sizes),
      dist_(dist),
      region_(region),
      random_(random),
      units_(std::max<uint64_t>(1, region / sizes.min)) {
  if (dist_.kind == Distribution::kZipf) {
    uint64_t terms = std::min(units_, kZipfTerms);
    for (uint64_t i = 1; i <= terms; i++) {
      zetan_ += std::pow(1.0 / static_cast<double>(i), dist_.param);
    }
    zeta2_ = 1.0 + std::pow(0.5, dist_.param);
  } else if (dist_.kind == Distribution::kPareto) {
    pareto_pow_ = std::log(dist_.param) / std::log(1.0 - dist_.param);
  }
}

uint64_t IoPattern::DrawSize(Rng& rng) const {
  if (sizes_.fixed()) return sizes_.min;
  if (sizes_.split.empty()) {  // bsrange: each multiple of min in [min, max] alike
    return sizes_.min * rng.Range(1, sizes_.max / sizes_.min);
  }
  double u = rng.Uniform() * 100;
  for (const auto& [size, pct] : sizes_.split) {
    if (u < pct) return size;
    u -= pct;
  }
  return sizes_.split.back().first;  // rounding: the last entry
}

uint64_t IoPattern::DrawRank(Rng& rng) const {
  const double n = static_cast<double>(units_);
  double r = 0;
  switch (dist_.kind) {
    case Distribution::kUniform:
      return rng.Below(units_);
    case Distribution::kZipf: {
      const double theta = dist_.param, alpha = 1.0 / (1.0 - theta);
      const double eta = (1.0 - std::pow(2.0 / n, 1.0 - theta)) / (1.0 - zeta2_ / zetan_);
      const double u = rng.Uniform(), uz = u * zetan_;
      if (uz < 1.0) {
        r = 0;
      } else if (uz < zeta2_) {
        r = 1;
      } else {
        r = std::floor(n * std::pow(eta * u - eta + 1.0, alpha));
      }
      break;
    }
    case Distribution::kPareto:
      r = std::floor((n - 1) * std::pow(rng.Uniform(), pareto_pow_));
      break;
    case Distribution::kNormal: {
      double x = n / 2 + rng.Normal() * n * dist_.param / 100;
      r = std::floor(std::clamp(x, 0.0, n - 1));
      return static_cast<uint64_t>(r);  // already spread around the middle: not hashed
    }
  }
  uint64_t rank = std::min(static_cast<uint64_t>(std::max(r, 0.0)), units_ - 1);
  return Mix(rank) % units_;
}

IoPattern::Io IoPattern::Next(Rng& rng) {
  Io io;
  io.len = DrawSize(rng);
  if (!random_) {
    if (seq_ + io.len > region_) seq_ = 0;
    io.offset = seq_;
    seq_ += io.len;
    return io;
  }
  uint64_t fit = (region_ - io.len) / sizes_.min + 1;  // units where an IO of len fits
  uint64_t unit = DrawRank(rng);
  if (unit >= fit) unit %= fit;
  io.offset = unit * sizes_.min;
  return io;
}

}  // namespace ds::bench
