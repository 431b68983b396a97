// The real DataLoader behind `dsbench replay --loader torch` (docs/dsbench.md#the-real-dataloader):
// the same job as the C++ model (bench/replay/replay.h), run by torch.utils.data.DataLoader in a Python
// subprocess, python/dspack/_replay.py. dsbench stays C++: it starts the child, evicts the page
// cache and measures residency between epochs (as for the model), and reads one JSON line of
// results per epoch.
//
// The child: $DSPACK_PYTHON, else /usr/bin/python3 (Debian's, which has torch), `-m
// dspack._replay`. The package is found next to this binary in a build tree
// (<exe>/../../python, i.e. build/python, prepended to PYTHONPATH), else where it was installed
// (cmake --install, pip). A tree is read by torchvision's ImageFolder (raw bytes); every other
// input by dspack.torch.MapDataset.
//
// Errors: one line naming what Python raised. A corrupt sample (CorruptSampleError) is
// kCorruption and a damaged or missing dataset kBadInput (exit 1: the data); no Python, no
// torch or no dspack package is kUnsupported (exit 2: the environment), with the fix. The child
// runs in a process group of its own with its workers; the destructor closes its stdin (it ends
// by itself), waits up to 10 s, then kills the whole group, so no worker outlives dsbench.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <memory>
#include <string>

#include "bench/replay/replay.h"
#include "src/fd.h"
#include "src/status.h"

namespace ds::bench {

class TorchLoader {
 public:
  // Starts the child over `path` (the dataset as this run reads it: through slowfs when
  // mounted), `kind` "tree" or a layout, `samples` per epoch; returns once the child has made
  // its Dataset (ImageFolder's scan, dspack.open), so that the epochs time only the reads.
  static Result<std::unique_ptr<TorchLoader>> Start(const ReplayOptions& o, const std::string& path,
                                                    const std::string& kind, uint64_t samples);
  ~TorchLoader();
  TorchLoader(const TorchLoader&) = delete;
  TorchLoader& operator=(const TorchLoader&) = delete;

  // Runs epoch `epoch` (1-based) in the child. Fills seconds, samples, bytes, first batch, data
  // waits, AU and CPU (the child's and its workers'); opens are derived for a tree (ImageFolder
  // opens each file once); per-sample latency and per-worker counts are not observable there.
  Result<EpochResult> RunEpoch(int epoch, double files_per_sample);

 private:
  TorchLoader() = default;
  Result<std::string> ReadLine();

  pid_t pid_ = -1;
  OwnedFd to_child_, from_child_;
  std::string buf_;
};

}  // namespace ds::bench
