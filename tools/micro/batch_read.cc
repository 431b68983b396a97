// dspack_batch_read: reads N random samples of a dataset (any layout) either one after another
// (LayoutReader::Get: one pread at a time) or with LayoutReader::ReadBatch (K reads in flight
// through the IO engine), and prints one JSON line: mode, samples, bytes, seconds, engine, reads,
// peak_inflight. tools/peers/batch_read_slowfs.sh runs both through the slow file system.
//   dspack_batch_read DATASET --samples N --inflight K --mode serial|batch [--seed S]
#include <CLI/CLI.hpp>
#include <chrono>
#include <cstdio>
#include <nlohmann/json.hpp>

#include "formats/layout.h"
#include "src/cli_args.h"
#include "src/random.h"

int main(int argc, char** argv) try {
  CLI::App app{"dspack_batch_read: N random samples, serially or batched (K in flight)"};
  std::string dataset, mode = "batch";
  uint64_t n = 1000, seed = 1;
  unsigned k = 32;
  app.add_option("DATASET", dataset)->required();
  app.add_option("--samples", n, "Samples to read")->capture_default_str();
  app.add_option("--inflight", k, "Reads in flight (batch)")->capture_default_str();
  app.add_option("--mode", mode, "serial or batch")
      ->check(CLI::IsMember({"serial", "batch"}))
      ->capture_default_str();
  app.add_option("--seed", seed, "Seed of the sample order")->capture_default_str();
  if (int rc = ds::ParseArgs("dspack_batch_read", app, argc, argv); rc >= 0) return rc;

  auto reader = ds::OpenLayout(dataset);
  if (!reader.ok()) return ds::Fail("dspack_batch_read", reader.status());
  std::vector<uint64_t> idx(n);
  ds::Rng rng(seed);
  for (auto& i : idx) i = rng.Below((*reader)->size());

  auto t0 = std::chrono::steady_clock::now();
  std::vector<ds::Sample> out;
  ds::BatchReadStats st;
  uint64_t bytes = 0;
  if (mode == "serial") {
    st.engine = "pread";
    for (uint64_t i : idx) {
      auto s = (*reader)->Get(i);
      if (!s.ok()) return ds::Fail("dspack_batch_read", s.status());
      bytes += s->payload_bytes();
      st.reads++;
    }
    st.peak_inflight = 1;
  } else {
    ds::Status s = (*reader)->ReadBatch(idx, {k, true}, &out, &st);
    if (!s.ok()) return ds::Fail("dspack_batch_read", s);
    for (const auto& x : out) bytes += x.payload_bytes();
  }
  double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  nlohmann::json j = {{"mode", mode},     {"samples", n},         {"bytes", bytes},
                      {"seconds", secs},  {"engine", st.engine},  {"reads", st.reads},
                      {"inflight", k},    {"peak_inflight", st.peak_inflight}};
  std::printf("%s\n", j.dump().c_str());
  return 0;
} catch (...) {
  return ds::ExceptionExit("dspack_batch_read");
}
