// Micro-benchmarks of the hot paths, so later changes can be compared (not a test: no
// assertions on time). Run: build/bench/dspack_micro_bench [--benchmark_filter=Crc]
#include <benchmark/benchmark.h>

#include <string>
#include <vector>

#include "formats/native/global_index.h"
#include "formats/native/native_format.h"
#include "formats/native/native_shard.h"
#include "src/checksum.h"
#include "src/random.h"

namespace {

std::string RandomBytes(size_t n) {
  std::string s(n, '\0');
  ds::Rng(1).Fill(s.data(), n);
  return s;
}

// Crc32c as the formats call it: the VPCLMULQDQ fold where the CPU has it (BM_Crc32cHardware),
// and the crc32-instruction path alone (BM_Crc32cNoFold), side by side.
void Crc32cRun(benchmark::State& state, bool fold) {
  bool was = ds::Crc32cUseFold(fold);
  std::string buf = RandomBytes(static_cast<size_t>(state.range(0)));
  for (auto _ : state) benchmark::DoNotOptimize(ds::Crc32c(buf));
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) * state.range(0));
  ds::Crc32cUseFold(was);
}
void BM_Crc32cHardware(benchmark::State& state) { Crc32cRun(state, true); }
void BM_Crc32cNoFold(benchmark::State& state) { Crc32cRun(state, false); }
BENCHMARK(BM_Crc32cHardware)->Arg(64)->Arg(4096)->Arg(110 << 10)->Arg(4 << 20);
BENCHMARK(BM_Crc32cNoFold)->Arg(4096)->Arg(110 << 10)->Arg(4 << 20);

void BM_Crc32cSoftware(benchmark::State& state) {
  std::string buf = RandomBytes(static_cast<size_t>(state.range(0)));
  for (auto _ : state)
    benchmark::DoNotOptimize(ds::Crc32cSoftwareExtend(0, buf.data(), buf.size()));
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) * state.range(0));
}
BENCHMARK(BM_Crc32cSoftware)->Arg(4096)->Arg(110 << 10);

void BM_Xxh3(benchmark::State& state) {
  std::string buf = RandomBytes(static_cast<size_t>(state.range(0)));
  for (auto _ : state) benchmark::DoNotOptimize(ds::Xxh3_64(buf));
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) * state.range(0));
}
BENCHMARK(BM_Xxh3)->Arg(4096)->Arg(4 << 20);

// Encoding one ImageNet-sized record: head + data CRC (what the packer's writer stage does per
// sample besides the write itself).
void BM_EncodeRecord(benchmark::State& state) {
  std::string payload = RandomBytes(static_cast<size_t>(state.range(0)));
  std::vector<ds::FieldInfo> fields = {{"JPEG", payload.size()}, {"cls", 3}};
  for (auto _ : state) {
    std::string head = ds::native::EncodeRecordHead("n01440764/n01440764_10026", fields);
    uint32_t crc = ds::Crc32cExtend(ds::Crc32c(payload), "123", 3);
    benchmark::DoNotOptimize(head);
    benchmark::DoNotOptimize(crc);
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) * state.range(0));
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations()));
}
BENCHMARK(BM_EncodeRecord)->Arg(110 << 10);

void BM_DecodeRecordHead(benchmark::State& state) {
  std::vector<ds::FieldInfo> fields = {{"JPEG", 112640}, {"cls", 3}};
  std::string head = ds::native::EncodeRecordHead("n01440764/n01440764_10026", fields);
  for (auto _ : state) {
    auto h = ds::native::DecodeRecordHead(reinterpret_cast<const uint8_t*>(head.data()),
                                          head.size(), "bench");
    benchmark::DoNotOptimize(h);
  }
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations()));
}
BENCHMARK(BM_DecodeRecordHead);

// Global index: sample -> (shard, offset, length), and key -> sample, on a mapped 1M-sample index.
class IndexFixture : public benchmark::Fixture {
 public:
  void SetUp(const benchmark::State&) override {
    if (index_) return;
    path_ = "/tmp/dspack-bench-index.dsi";
    ds::native::GlobalIndexBuilder b;
    for (uint64_t i = 0; i < kSamples; i++) {
      (void)b.Add(static_cast<uint32_t>(i / 2300), (i % 2300) * 114688, 112700,
                  "n01440764/n01440764_" + std::to_string(i));
    }
    uint64_t size, hash;
    (void)b.Write(*ds::LocalStorage(), path_, kSamples / 2300 + 1, &size, &hash);
    auto gi = ds::native::GlobalIndex::Open(*ds::LocalStorage(), path_);
    index_ = std::make_unique<ds::native::GlobalIndex>(std::move(gi).value());
  }
  static constexpr uint64_t kSamples = 1'000'000;
  std::string path_;
  static inline std::unique_ptr<ds::native::GlobalIndex> index_;
};

BENCHMARK_F(IndexFixture, EntryLookup)(benchmark::State& state) {
  ds::Rng rng(5);
  for (auto _ : state) benchmark::DoNotOptimize(index_->entry(rng.Below(kSamples)));
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations()));
}

BENCHMARK_F(IndexFixture, KeyLookup)(benchmark::State& state) {
  ds::Rng rng(6);
  std::vector<std::string> keys;
  for (int i = 0; i < 1024; i++)
    keys.push_back("n01440764/n01440764_" + std::to_string(rng.Below(kSamples)));
  size_t k = 0;
  for (auto _ : state) benchmark::DoNotOptimize(index_->Candidates(keys[k++ & 1023]));
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations()));
}

}  // namespace

BENCHMARK_MAIN();
