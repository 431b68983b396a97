// bench/replay/replay.h on tiny real datasets: a synthetic tree (datasets/synth.h) and a native
// dataset whose sample sizes are powers of 7, so that an epoch's byte count says how often each
// sample was read (its base-7 digits). Also the verdict (Feeds), the requirement, and the errors.
#include "bench/replay/replay.h"

#include <algorithm>
#include <catch2/catch.hpp>
#include <filesystem>
#include <numeric>
#include <string>
#include <vector>

#include "datasets/synth.h"
#include "formats/layout.h"
#include "test_util.h"

using namespace ds;
using namespace ds::bench;

namespace {

// Sample i holds 7^i bytes: an epoch reads at most 6 samples, so digit i of its byte count in
// base 7 is how many times it read sample i.
constexpr int kSamples = 6;

uint64_t Pow7(int i) { return i == 0 ? 1 : 7 * Pow7(i - 1); }

// A native dataset of kSamples samples, several shards.
std::string WriteNative(const test::TempDir& dir) {
  std::string out = dir / "native";
  LayoutKnobs k;
  k.shard_size = 4096;
  auto o = MakeWriterOptions(Format::kNative, k, {});
  REQUIRE(o.ok());
  auto w = CreateLayoutWriter(out, *o);
  REQUIRE(w.ok());
  for (int i = 0; i < kSamples; i++) {
    Sample s{"k" + std::to_string(i), {{"bin", std::string(Pow7(i), static_cast<char>('a' + i))}}};
    REQUIRE((*w)->Add(s).ok());
  }
  LayoutSummary sum;
  REQUIRE((*w)->Finish(&sum).ok());
  REQUIRE(sum.shards > 1);
  return out;
}

// How many times each sample was read, from an epoch's bytes.
std::vector<uint64_t> ReadsPerSample(uint64_t bytes) {
  std::vector<uint64_t> reads;
  for (int i = 0; i < kSamples; i++, bytes /= 7) reads.push_back(bytes % 7);
  CHECK(bytes == 0);
  return reads;
}

ReplayOptions Options(const std::string& dataset) {
  ReplayOptions o;
  o.dataset = dataset;
  o.workers = 2;
  o.batch = 2;
  o.prefetch = 1;
  o.epochs = 2;
  o.cache = ds::bench::CacheState::kWarm;
  return o;
}

}  // namespace

TEST_CASE("RunReplay over a synthetic tree reads every file once per epoch", "[bench]") {
  test::TempDir dir;
  SynthReport rep;
  REQUIRE(Synthesize({"tiny-files", dir / "tree", 12, 7, 2}, &rep).ok());
  REQUIRE(rep.samples == 12);
  const std::string mode = GENERATE("map", "stream");
  INFO(mode);
  ReplayOptions o = Options(dir / "tree");
  o.mode = *ds::bench::ParseReplayMode(mode);
  ReplayResult r;
  uint64_t samples_at_start = 0;
  size_t epochs_at_start = 1;
  auto on_start = [&](const ReplayResult& at_start) {
    samples_at_start = at_start.dataset_samples;
    epochs_at_start = at_start.epochs.size();
  };
  REQUIRE(RunReplay(o, &r, on_start).ok());
  CHECK(samples_at_start == 12);  // the dataset's facts, before the first epoch
  CHECK(epochs_at_start == 0);
  CHECK(r.kind == "tree");
  CHECK(r.dataset_samples == 12);
  CHECK(r.dataset_bytes == rep.bytes);
  CHECK(r.files_per_sample == 1);
  CHECK(r.workers == 2);
  CHECK_FALSE(r.interrupted);
  CHECK(r.error_count == 0);
  REQUIRE(r.epochs.size() == 2);
  for (const auto& e : r.epochs) {
    INFO("epoch " << e.epoch);
    CHECK(e.samples == 12);
    CHECK(e.bytes == rep.bytes);
    CHECK(e.opens == rep.files);  // ImageFolder's way: every file opened every epoch
    CHECK(e.sample_lat.count() == 12);
    CHECK(e.wait_lat.count() == 5);  // 6 batches, the first one's wait is not a step's
    REQUIRE(e.worker_samples.size() == 2);
    CHECK(e.worker_samples[0] + e.worker_samples[1] == 12);
    CHECK(e.au == 0);  // no accelerator simulated
    CHECK(e.capacity_samples_per_sec > 0);
  }
  CHECK(r.epochs[0].epoch == 1);
  CHECK(r.epochs[1].epoch == 2);
  auto j = ReplayJson(o, r);
  CHECK(j["epochs"][1]["samples"] == 12);
  CHECK(j["layout"] == "tree");
}

TEST_CASE("RunReplay over a native dataset: map reads each sample once per epoch", "[bench]") {
  test::TempDir dir;
  const std::string native = WriteNative(dir);
  const uint64_t all = (Pow7(kSamples) - 1) / 6;  // 1 + 7 + ... + 7^5
  ReplayOptions o = Options(native);
  o.cache = ds::bench::CacheState::kCold;  // evicted and reopened every epoch
  o.epochs = 3;
  // A sample at a time, or each batch at once (ReadBatch through io_uring: one read a sample,
  // counted in the bill although it does not pass through the storage's files).
  o.batch_reads = GENERATE(0u, 3u);
  INFO("batch_reads " << o.batch_reads);
  ReplayResult r;
  REQUIRE(RunReplay(o, &r).ok());
  CHECK(r.kind != "tree");
  CHECK(r.dataset_samples == kSamples);
  CHECK(r.files_per_sample == 0);
  REQUIRE(r.epochs.size() == 3);
  for (const auto& e : r.epochs) {
    INFO("epoch " << e.epoch);
    CHECK(e.samples == kSamples);
    CHECK(e.bytes == all);
    CHECK(ReadsPerSample(e.bytes) == std::vector<uint64_t>(kSamples, 1));
    CHECK(e.opens == 0);  // the shards stay open
    CHECK(e.sample_lat.count() == kSamples);
    REQUIRE(e.ops);
    if (o.batch_reads > 0) {
      // At most one a sample (two neighbours in a batch share one), at least one a batch, and
      // the index the cold epoch's reopen reads.
      CHECK((*e.ops)[StorageOp::kRead] >= uint64_t{kSamples / 2});  // batches of 2
      CHECK((*e.ops)[StorageOp::kRead] <= kSamples + 1);
      CHECK(e.ops->read_bytes > all);  // each record's framing too
    }
  }
  CHECK(ReplayJson(o, r)["batch_reads"] == o.batch_reads);

  SECTION("max_samples in map mode: that many distinct samples") {
    o.max_samples = 3;
    ReplayResult m;
    REQUIRE(RunReplay(o, &m).ok());
    for (const auto& e : m.epochs) {
      CHECK(e.samples == 3);
      auto reads = ReadsPerSample(e.bytes);
      CHECK(std::accumulate(reads.begin(), reads.end(), uint64_t{0}) == 3);
      CHECK(*std::max_element(reads.begin(), reads.end()) == 1);
    }
  }
  SECTION("max_samples in stream mode: the first ones in storage order") {
    o.mode = ds::bench::ReplayMode::kStream;
    o.max_samples = 3;
    ReplayResult s;
    REQUIRE(RunReplay(o, &s).ok());
    for (const auto& e : s.epochs) {
      CHECK(e.samples == 3);
      CHECK(ReadsPerSample(e.bytes) == std::vector<uint64_t>{1, 1, 1, 0, 0, 0});
    }
  }
}

TEST_CASE("Feeds: AU against the bar with an accelerator, else capacity against the rate",
          "[bench]") {
  ReplayResult r;
  EpochResult e;
  e.capacity_samples_per_sec = 1e9;
  e.au = 1;
  CHECK_FALSE(Feeds(r, e));  // no requirement given: no verdict
  r.required_samples_per_sec = 100;
  e.capacity_samples_per_sec = 100;
  CHECK(Feeds(r, e));
  e.capacity_samples_per_sec = 99.9;
  CHECK_FALSE(Feeds(r, e));
  r.compute_time = 0.01;  // with an accelerator the AU decides, whatever the capacity
  e.au = kAuBar;
  CHECK(Feeds(r, e));
  e.au = 0.89;
  e.capacity_samples_per_sec = 1e9;
  CHECK_FALSE(Feeds(r, e));

  // From real runs: a rate any loader meets, one none does; step_time sets rate and compute.
  test::TempDir dir;
  ReplayOptions o = Options(WriteNative(dir));
  o.epochs = 1;
  o.samples_per_sec = 1;
  ReplayResult easy;
  REQUIRE(RunReplay(o, &easy).ok());
  CHECK(easy.required_samples_per_sec == 1);
  CHECK(Feeds(easy, easy.epochs.at(0)));
  CHECK_THAT(RequirementText(o, easy), Catch::Contains("required"));
  o.samples_per_sec = 1e15;
  ReplayResult hard;
  REQUIRE(RunReplay(o, &hard).ok());
  CHECK_FALSE(Feeds(hard, hard.epochs.at(0)));
  o.samples_per_sec = 0;
  o.gpus = 2;
  o.step_time = 0.002;
  ReplayResult stepped;
  REQUIRE(RunReplay(o, &stepped).ok());
  CHECK(stepped.required_samples_per_sec == Approx(2 * 2 / 0.002));
  CHECK(stepped.compute_time == Approx(0.001));  // per batch: step time / GPUs
  CHECK(stepped.epochs.at(0).au > 0);
  o.step_time = 0;
  o.gpus = 1;
  ReplayResult none;
  REQUIRE(RunReplay(o, &none).ok());
  CHECK(RequirementText(o, none).empty());
  CHECK_FALSE(Feeds(none, none.epochs.at(0)));
}

TEST_CASE("RunReplay: bad options, idle workers trimmed, a corrupt sample stops or is skipped",
          "[bench]") {
  test::TempDir dir;
  SynthReport rep;
  REQUIRE(Synthesize({"tiny-files", dir / "tree", 6, 3, 1}, &rep).ok());
  ReplayOptions o = Options(dir / "tree");
  ReplayResult r;
  for (auto bad : {+[](ReplayOptions& x) { x.workers = 0; }, +[](ReplayOptions& x) { x.batch = 0; },
                   +[](ReplayOptions& x) { x.epochs = 0; },
                   +[](ReplayOptions& x) {
                     x.loader = ds::bench::Loader::kTorch;
                     x.on_error = ds::bench::OnError::kSkip;
                   }}) {
    ReplayOptions b = o;
    bad(b);
    CHECK(RunReplay(b, &r).code() == Code::kInvalidArgument);
  }
  o.dataset = dir / "missing";
  CHECK(RunReplay(o, &r).code() == Code::kNotFound);

  o = Options(dir / "tree");
  o.workers = 8;
  o.batch = 4;  // 6 samples: 2 batches
  ReplayResult trimmed;
  REQUIRE(RunReplay(o, &trimmed).ok());
  CHECK(trimmed.workers == 2);
  REQUIRE(trimmed.notes.size() == 1);
  CHECK_THAT(trimmed.notes[0], Catch::Contains("using 2"));
  CHECK(trimmed.epochs.at(0).samples == 6);

  // A corrupt record (sample k5, alone in its shard): stop names it, skip counts it and goes on.
  const std::string native = WriteNative(dir);
  std::string shard;
  for (const auto& e : std::filesystem::directory_iterator(native)) {
    if (e.path().extension() == ".dsr" &&
        (shard.empty() || e.file_size() > std::filesystem::file_size(shard))) {
      shard = e.path();
    }
  }
  REQUIRE(std::filesystem::file_size(shard) > Pow7(5));
  std::string bytes = test::ReadFile(shard);
  bytes[bytes.size() / 2] ^= 0x01;
  test::WriteFile(shard, bytes);
  o = Options(native);
  o.batch_reads = GENERATE(0u, 2u);  // a batch read stops, or is read again a sample at a time
  INFO("batch_reads " << o.batch_reads);
  ReplayResult stopped;
  Status s = RunReplay(o, &stopped);
  CHECK(s.code() == Code::kCorruption);
  CHECK_THAT(s.message(), Catch::Contains("k5"));
  CHECK(stopped.epochs.empty());
  o.on_error = ds::bench::OnError::kSkip;
  ReplayResult skipped;
  REQUIRE(RunReplay(o, &skipped).ok());
  CHECK(skipped.error_count == 2);  // once per epoch
  REQUIRE(skipped.errors.size() == 2);
  CHECK_THAT(skipped.errors[0], Catch::Contains("k5"));
  REQUIRE(skipped.epochs.size() == 2);
  for (const auto& e : skipped.epochs) {
    CHECK(e.samples == kSamples - 1);
    CHECK(e.errors == 1);
    CHECK(ReadsPerSample(e.bytes) == std::vector<uint64_t>{1, 1, 1, 1, 1, 0});
  }
}

// A tree file that vanished after the scan: the cache measurement (Residency) and a cold
// epoch's eviction pass over it (it holds no cache); reading its sample reports it, so the run
// goes on under on_error=skip, as replay.h and docs/dsbench.md ("Errors") say. (Residency used
// to fail the whole run before any sample was read.)
TEST_CASE("RunReplay under on_error=skip counts a tree file that vanished and goes on", "[bench]") {
  const std::string cache = GENERATE("cold", "warm");
  test::TempDir dir;
  SynthReport rep;
  REQUIRE(Synthesize({"tiny-files", dir / "tree", 6, 3, 1}, &rep).ok());
  std::string removed;
  auto remove_one = [&](const ReplayResult&) {  // once the tree is scanned, before epoch 1
    removed = dir / "tree/d0000/f00000002.bin";
    REQUIRE(std::filesystem::remove(removed));
  };
  ReplayOptions o = Options(dir / "tree");
  o.cache = *ds::bench::ParseCacheState(cache);
  o.on_error = ds::bench::OnError::kSkip;
  ReplayResult skipped;
  Status st = RunReplay(o, &skipped, remove_one);
  INFO(st.ToString());
  REQUIRE(st.ok());
  CHECK(skipped.error_count == 2);  // once per epoch
  REQUIRE(skipped.errors.size() == 2);
  CHECK_THAT(skipped.errors[0], Catch::Contains(removed));
  for (const auto& e : skipped.epochs) {
    CHECK(e.samples == 5);
    CHECK(e.errors == 1);
  }
}

TEST_CASE("replay choices: one word each way; a wrong one names the field", "[bench]") {
  using ds::bench::Name;
  CHECK(*ds::bench::ParseReplayMode("stream") == ds::bench::ReplayMode::kStream);
  CHECK(std::string(Name(ds::bench::CacheState::kWarm)) == "warm");
  CHECK(*ds::bench::ParseOnError("skip") == ds::bench::OnError::kSkip);
  CHECK(std::string(Name(*ds::bench::ParseLoader("torch"))) == "torch");
  auto bad = ds::bench::ParseReplayMode("random");
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.status().code() == Code::kInvalidArgument);
  CHECK(bad.status().message() == "`mode`: map or stream (not 'random')");
  CHECK(ds::bench::ParseCacheState("hot").status().message() ==
        "`cache`: cold or warm (not 'hot')");
  CHECK(ds::bench::ParseOnError("retry").status().message() ==
        "`on_error`: stop or skip (not 'retry')");
}
