// Deterministic synthetic datasets (docs/datasets.md). The same profile, sample count and seed
// give byte-identical trees on any machine and for any thread count: each file's name, size and
// content come from a generator seeded by (seed, file number) alone.
//
// Profiles:
//   imagenet-like  class folders n0XXXXXXX/, files <class>_<i>.JPEG; log-normal sizes (median
//                  95 KB, mean ~110 KB, clamped to 2 KB..4 MB); JPEG SOI/APP0 header, random
//                  (incompressible) body, EOI marker. 1 class per 100 samples, 2..1000 classes.
//   coco-like      images/<12-digit id>.jpg (log-normal, median 160 KB) + images/<id>.json
//                  (annotation text): two files, one sample.
//   tiny-files     1..8 KiB random files in folders of 1000: dNNNN/fNNNNNNNN.bin
//   large-files    10..100 MB random files: file-NNNNNN.bin
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "src/status.h"

namespace ds {

struct SynthOptions {
  std::string profile;
  std::string dir;
  uint64_t samples = 0;
  uint64_t seed = 0;
  int threads = 4;
};

struct SynthReport {
  uint64_t samples = 0;
  uint64_t files = 0;
  uint64_t bytes = 0;
};

struct SynthProfileInfo {
  std::string name;
  std::string description;
};
const std::vector<SynthProfileInfo>& SynthProfiles();

// Writes the dataset under options.dir (created; must be absent or empty).
Status Synthesize(const SynthOptions& options, SynthReport* report);

}  // namespace ds
