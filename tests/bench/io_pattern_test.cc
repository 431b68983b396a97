// The IO stream's shape (bench/io/io_pattern.h): fio's bsrange and bssplit sizes, sequential and
// random offsets, and the skew of zipf, pareto and normal, checked against their formulas over
// many draws (counts, not timings).
#include "bench/io/io_pattern.h"

#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <map>
#include <vector>

namespace ds::bench {
namespace {

constexpr uint64_t kK = 1024;

TEST_CASE("bsrange and bssplit parse as fio writes them, and refuse what they cannot take",
          "[bench]") {
  auto r = ParseBsRange("4k-64k");
  REQUIRE(r.ok());
  CHECK(r->min == 4 * kK);
  CHECK(r->max == 64 * kK);
  CHECK(!ParseBsRange("64k-4k").ok());
  CHECK(!ParseBsRange("4k").ok());
  CHECK(!ParseBsRange("4k-8k,16k-32k").ok());

  auto s = ParseBsSplit("4k/50:64k/30:1m");
  REQUIRE(s.ok());
  REQUIRE(s->split.size() == 3);
  CHECK(s->split[2].first == 1024 * kK);
  CHECK(s->split[2].second == Approx(20));  // what the others leave
  CHECK(s->min == 4 * kK);
  CHECK(s->max == 1024 * kK);
  CHECK(!ParseBsSplit("4k/60:64k/60").ok());  // over 100
  CHECK(!ParseBsSplit("4k/60:64k/30").ok());  // under 100, nothing blank to take the rest
  CHECK(!ParseBsSplit("4k/50,8k/100").ok());
  CHECK(ParseBsSplit("4k:8k").ok());  // 50/50

  for (const char* bad : {"zoned:50/5", "zipf", "zipf:1", "zipf:-2", "pareto:1.5", "normal:0",
                          "normal:101", "random:3"}) {
    INFO(bad);
    CHECK(!ParseDistribution(bad).ok());
  }
  auto z = ParseDistribution("zipf:1.2");
  REQUIRE(z.ok());
  CHECK(z->kind == Distribution::kZipf);
  CHECK(DistributionText(*z) == "zipf:1.2");
  CHECK(ParseDistribution("gauss:5")->kind == Distribution::kNormal);
}

TEST_CASE("sizes: bsrange draws multiples of MIN in range, bssplit keeps its weights", "[bench]") {
  Rng rng(1);
  IoPattern range(*ParseBsRange("4k-64k"), {}, 64 << 20, true);
  std::map<uint64_t, int> seen;
  for (int i = 0; i < 20000; i++) {
    auto io = range.Next(rng);
    REQUIRE(io.len % (4 * kK) == 0);
    REQUIRE(io.len >= 4 * kK);
    REQUIRE(io.len <= 64 * kK);
    REQUIRE(io.offset % (4 * kK) == 0);
    REQUIRE(io.offset + io.len <= (64u << 20));
    seen[io.len]++;
  }
  CHECK(seen.size() == 16);

  IoPattern split(*ParseBsSplit("4k/50:64k/30:1m"), {}, 256 << 20, true);
  std::map<uint64_t, int> n;
  const int kDraws = 100000;
  for (int i = 0; i < kDraws; i++) n[split.Next(rng).len]++;
  CHECK(n[4 * kK] / double(kDraws) == Approx(0.5).margin(0.01));
  CHECK(n[64 * kK] / double(kDraws) == Approx(0.3).margin(0.01));
  CHECK(n[1024 * kK] / double(kDraws) == Approx(0.2).margin(0.01));
}

TEST_CASE("sequential offsets follow each other and wrap at the region's end", "[bench]") {
  Rng rng(2);
  const uint64_t region = 1 << 20;
  IoPattern seq(*ParseBsRange("4k-16k"), {}, region, false);
  uint64_t expect = 0, wraps = 0;
  for (int i = 0; i < 2000; i++) {
    auto io = seq.Next(rng);
    if (io.offset != expect) {
      REQUIRE(io.offset == 0);  // the next IO would not have fitted
      REQUIRE(expect + io.len > region);
      wraps++;
    }
    REQUIRE(io.offset + io.len <= region);
    expect = io.offset + io.len;
  }
  CHECK(wraps > 0);
  // Fixed bs: block after block, as before bsrange existed.
  IoPattern fixed(BlockSizes{4096, 4096, {}}, {}, 10 * 4096 + 100, false);
  for (int i = 0; i < 25; i++) CHECK(fixed.Next(rng).offset == uint64_t(i % 10) * 4096);
}

// Counts per unit over many draws of a distribution over `units` 4 KiB units, sorted hottest
// first.
std::vector<int> Counts(const char* dist, uint64_t units, int draws) {
  Rng rng(3);
  IoPattern p(BlockSizes{4096, 4096, {}}, *ParseDistribution(dist), units * 4096, true);
  std::vector<int> c(units);
  for (int i = 0; i < draws; i++) c[p.Next(rng).offset / 4096]++;
  std::sort(c.begin(), c.end(), std::greater<>());
  return c;
}

TEST_CASE("zipf, pareto and normal skew the offsets as their formulas say", "[bench]") {
  const uint64_t units = 10000;
  const int draws = 400000;
  SECTION("uniform: no unit is hot") {
    auto c = Counts("random", units, draws);
    CHECK(c[0] < 3 * draws / int(units));
  }
  SECTION("zipf:1.2: the i-th hottest unit gets 1/(i^1.2 zeta) of the IOs") {
    double zeta = 0;
    for (uint64_t i = 1; i <= units; i++) zeta += std::pow(1.0 / double(i), 1.2);
    auto c = Counts("zipf:1.2", units, draws);
    // Gray et al.'s generator is exact for the two hottest ranks and close beyond them.
    for (int i : {1, 2}) {
      INFO("rank " << i);
      CHECK(c[i - 1] / double(draws) == Approx(std::pow(1.0 / i, 1.2) / zeta).epsilon(0.05));
    }
    double want = 0;
    long got = 0;
    for (int i = 1; i <= 100; i++) {
      want += std::pow(1.0 / i, 1.2) / zeta;
      got += c[i - 1];
    }
    CHECK(got / double(draws) == Approx(want).epsilon(0.05));
  }
  SECTION("pareto:0.9: the hottest 20 % of units get over 90 % of the IOs") {
    auto c = Counts("pareto:0.9", units, draws);
    long top = 0;
    for (uint64_t i = 0; i < units / 5; i++) top += c[i];
    CHECK(top > 0.9 * draws);
  }
  SECTION("normal:10: around the middle with a deviation of 10 % of the region") {
    Rng rng(4);
    IoPattern p(BlockSizes{4096, 4096, {}}, *ParseDistribution("normal:10"), units * 4096, true);
    double sum = 0, sq = 0;
    for (int i = 0; i < draws; i++) {
      double u = double(p.Next(rng).offset / 4096);
      sum += u;
      sq += u * u;
    }
    double mean = sum / draws, sd = std::sqrt(sq / draws - mean * mean);
    CHECK(mean == Approx(units / 2.0).epsilon(0.01));
    CHECK(sd == Approx(units * 0.10).epsilon(0.02));
  }
}

}  // namespace
}  // namespace ds::bench
