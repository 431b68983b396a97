// `dsbench watch --downgrade DATASET` (docs/watch.md#downgrade): the write-up's controlled
// experiment. The job's loader (a DataLoader over dspack.torch.MapDataset: its workers, batch,
// prefetch and transform) runs alone, without the model, in short runs, in a Python child
// (python/dspack/_downgrade.py; bench/common/python_child.h finds it):
//   configured  as the job runs it
//   memory      the same samples held in memory: no storage (decode, transform, IPC)
//   memory_w0   in memory, num_workers=0: decode and transform alone
//   workers0    num_workers=0 from the storage: no IPC
//   staged      from a local copy staged with dssync (a remote dataset: nfs://, s3://, or a path
//               on a network file system), when a stager and a stage directory are given
// The data time per sample of `configured` is then attributed (Attribute): storage = configured -
// memory (of it, remote access = configured - staged), decode/transform = memory_w0 / workers
// (what the workers spend on it, in parallel), worker IPC = memory - decode/transform; and the
// change that pays off is named (stage, pack, more workers, pin_memory / persistent_workers).
//
// With `cold` (root), the page cache is dropped before each run from storage. Errors: the
// child's one line (the dataset's errors: exit 1; no torch: exit 2).
#pragma once

#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "src/status.h"

namespace ds::bench {

struct DowngradeOptions {
  std::string dataset;  // a dspack dataset: a path or an nfs:// / s3:// URL
  int workers = 4, batch = 32, prefetch = 2, batches = 20;
  std::string transform = "none";  // none | decode (dspack.torch.decode_image)
  uint64_t seed = 0;
  bool cold = true;  // drop the page cache before each run from storage (root only)
  // A remote dataset is staged here by `stage` (the tool hands dssync's library), then removed.
  std::string stage_dir;
  std::function<Status(const std::string& url, const std::string& dir)> stage;
};

struct DowngradeRun {
  uint64_t samples = 0;
  double seconds = 0, samples_per_s = 0;
  double per_sample() const { return samples_per_s > 0 ? 1 / samples_per_s : 0; }
};

struct Attribution {
  std::string name;                          // storage, remote_access, decode_transform, worker_ipc
  double seconds_per_sample = 0, share = 0;  // share of configured's time per sample
};

struct DowngradeResult {
  std::map<std::string, DowngradeRun> runs;
  std::vector<Attribution> parts;  // largest first; remote_access is a part of storage
  std::string largest;             // of storage, decode_transform, worker_ipc
  std::vector<std::string> advice;
  std::vector<std::string> notes;
};

Status CheckDowngrade(const DowngradeOptions& o);
Result<DowngradeResult> RunDowngrade(const DowngradeOptions& o);
// The attribution and the advice from the runs (pure: a unit test's).
void Attribute(const DowngradeOptions& o, DowngradeResult* r);
nlohmann::json DowngradeJson(const DowngradeOptions& o, const DowngradeResult& r);
std::string DowngradeText(const DowngradeOptions& o, const DowngradeResult& r);

}  // namespace ds::bench
