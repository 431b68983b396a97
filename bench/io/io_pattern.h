// The shape of a `dsbench io` job's stream of IOs (docs/dsbench.md, "dsbench io"): how big each
// IO is (fio's bs, bsrange, bssplit) and where it goes (sequential, or random with fio's
// random_distribution). bench/io/fio_options.cc parses fio's text into these; the job loop
// (bench/io/io_job.cc) draws from an IoPattern.
//
// Sizes:
//   bs=SIZE                    every IO that size;
//   bsrange=MIN-MAX            the multiples of MIN in [MIN, MAX], each as likely (fio's
//                              sizes are multiples of MIN too, unless bs_unaligned);
//   bssplit=SIZE/PCT:SIZE/PCT  a size by weight; entries without a percentage share what the
//                              others leave, equally (fio's rule). The weights add up to 100.
// Offsets, in units of the smallest size (fio's min_bs):
//   sequential   each IO follows the last; a pass that would run past the region's end wraps to
//                its start;
//   random       a unit where the IO fits, drawn by the distribution:
//     random     uniform;
//     zipf:T     Zipf with exponent T (T > 0, T != 1), by Gray et al.'s generator ("Quickly
//                generating billion-record synthetic databases", SIGMOD 1994), as fio draws it;
//     pareto:H   Pareto with shape H in (0, 1): rank = (units - 1) * u^(log H / log(1 - H));
//     normal:D   Gaussian around the region's middle, standard deviation D % of the region
//                (D in (0, 100]; fio's normal, alias gauss).
//   zipf and pareto draw a rank (0 = hottest), then scatter the ranks over the region with a
//   fixed 64-bit mixing hash, as fio does, so the hot units are not all at the start; normal's
//   units stay around the middle (fio hashes them too: a stated difference).
//
// Thread-safety: an IoPattern belongs to one job thread.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "src/random.h"
#include "src/status.h"

namespace ds::bench {

struct BlockSizes {
  uint64_t min = 4096, max = 4096;                 // bs: min == max, no split
  std::vector<std::pair<uint64_t, double>> split;  // bssplit: size, percentage (sum 100)
  bool fixed() const { return split.empty() && min == max; }
};

// fio's text: "1k-64k" (bsrange), "4k/50:64k/30:1m" (bssplit). kInvalidArgument naming the
// option and what to give (per-direction lists with ',' are refused).
Result<BlockSizes> ParseBsRange(const std::string& text);
Result<BlockSizes> ParseBsSplit(const std::string& text);

enum class Distribution { kUniform, kZipf, kPareto, kNormal };
struct OffsetDistribution {
  Distribution kind = Distribution::kUniform;
  double param = 0;  // zipf's exponent, pareto's shape, normal's deviation in %
};
// fio's random_distribution: random | zipf:T | pareto:H | normal:D (gauss:D).
Result<OffsetDistribution> ParseDistribution(const std::string& text);
std::string DistributionText(const OffsetDistribution& d);

class IoPattern {
 public:
  // region: the job's bytes (REQUIRES: region >= sizes.max > 0).
  IoPattern(const BlockSizes& sizes, const OffsetDistribution& dist, uint64_t region, bool random);
  struct Io {
    uint64_t offset = 0;  // within the region
    uint64_t len = 0;
  };
  Io Next(Rng& rng);

 private:
  uint64_t DrawSize(Rng& rng) const;
  uint64_t DrawRank(Rng& rng) const;  // in [0, units_)

  BlockSizes sizes_;
  OffsetDistribution dist_;
  uint64_t region_;
  bool random_;
  uint64_t units_;    // region_ / sizes_.min
  uint64_t seq_ = 0;  // next sequential offset
  double zetan_ = 0;  // zipf: sum over the first units of 1/i^T (at most kZipfTerms terms)
  double zeta2_ = 0;
  double pareto_pow_ = 0;
};

// Terms of the zipf normaliser computed at most (fio's ZIPF_MAX_GEN): beyond this many units
// the tail's share is below what a double resolves for the exponents in use.
inline constexpr uint64_t kZipfTerms = 10'000'000;

}  // namespace ds::bench
