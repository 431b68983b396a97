// `dsbench compare s3://BUCKET/DATASET --stage-dir DIR` (docs/s3.md#stage-or-stream): should a
// training job stream its dataset from remote storage, or stage it to local disk first (dssync)
// and read it there? The same job is replayed both ways and the break-even number of epochs
// decides.
//
// RunStageOrStream:
//   1. stream: the job (bench/replay/replay.h) against the remote dataset (any URL the storage
//      interface opens: s3://, nfs://), its measured epochs;
//   2. stage: the dataset copied into stage_dir by the tool's stager (dsbench hands dssync's
//      library, as it hands compare the packer: bench/ does not link sync/), timed;
//   3. local: the same job against the staged copy, cold (the page cache dropped before every
//      epoch, as the first epochs after staging are), its measured epochs.
//   The staged copy is removed at the end unless `keep`.
//
// DecideStage is the pure decision. With the epoch times t_stream and t_local (medians) and the
// staging time T: streaming E epochs costs E x t_stream, staging costs T + E x t_local, so
// staging wins past E* = T / (t_stream - t_local) epochs; never when t_stream <= t_local. With
// the job's planned epochs (train_epochs > 0) it recommends one; else it states E*.
#pragma once

#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "bench/replay/replay.h"
#include "src/status.h"

namespace ds::bench {

// Copies the dataset at url into the directory dir (created), verified.
using DatasetStager = std::function<Status(const std::string& url, const std::string& dir)>;

struct StageOrStreamOptions {
  std::string url;        // the remote dataset
  std::string stage_dir;  // local; must not exist yet, or be a stage of this dataset (reused)
  DatasetStager stage;    // required
  ReplayOptions job;      // the job (dataset, cache and epochs are set per run)
  int train_epochs = 0;   // the training job's planned epochs (0: state the break-even only)
  bool keep = false;      // keep the staged copy
};

struct StageDecision {
  std::optional<double> break_even_epochs;  // unset: staging never pays off
  bool stage = false;                       // the recommendation (with train_epochs)
  std::string sentence;
};
StageDecision DecideStage(double stage_seconds, double stream_epoch_seconds,
                          double local_epoch_seconds, int train_epochs);

struct StageOrStreamResult {
  ReplayResult stream, local;
  double stream_epoch_seconds = 0, local_epoch_seconds = 0;  // medians of the measured epochs
  double stream_samples_per_sec = 0, local_samples_per_sec = 0;
  double stage_seconds = 0;
  StageDecision decision;
  bool interrupted = false;  // Ctrl-C: the steps before it only, no decision
};

// on_line (optional) gets a one-line summary as each step ends.
Status RunStageOrStream(const StageOrStreamOptions& o, StageOrStreamResult* r,
                        const std::function<void(const std::string&)>& on_line = nullptr);

nlohmann::json StageOrStreamJson(const StageOrStreamOptions& o, const StageOrStreamResult& r);
std::string StageOrStreamText(const StageOrStreamOptions& o, const StageOrStreamResult& r);

}  // namespace ds::bench
