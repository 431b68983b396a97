#include "src/ordered_workers.h"

#include <atomic>
#include <catch2/catch.hpp>
#include <chrono>
#include <thread>
#include <vector>

using namespace ds;

TEST_CASE("RunOrdered delivers in order whatever the completion order", "[core]") {
  for (int threads : {1, 3, 16}) {
    std::vector<uint64_t> seen;
    RunOrdered<uint64_t>(
        200, threads, 8,
        [](uint64_t i) {
          // Later items finish first now and then.
          std::this_thread::sleep_for(std::chrono::microseconds((7 * i) % 13 * 50));
          return i * i;
        },
        [&](uint64_t i, uint64_t& v) {
          CHECK(v == i * i);
          seen.push_back(i);
          return true;
        });
    REQUIRE(seen.size() == 200);
    for (uint64_t i = 0; i < 200; i++) CHECK(seen[i] == i);
  }
}

TEST_CASE("RunOrdered keeps at most `window` items ahead of the consumer", "[core]") {
  std::atomic<uint64_t> produced{0}, consumed{0}, max_ahead{0};
  RunOrdered<int>(
      500, 8, 16,
      [&](uint64_t) {
        uint64_t ahead = ++produced - consumed.load();
        uint64_t m = max_ahead.load();
        while (ahead > m && !max_ahead.compare_exchange_weak(m, ahead)) {
        }
        return 0;
      },
      [&](uint64_t, int&) {
        consumed++;
        return true;
      });
  CHECK(consumed == 500);
  CHECK(max_ahead <= 16 + 1);
}

TEST_CASE("RunOrdered stops early when the consumer says so", "[core]") {
  std::atomic<uint64_t> produced{0};
  uint64_t last = 0;
  RunOrdered<int>(
      100000, 4, 8, [&](uint64_t) { return static_cast<int>(++produced); },
      [&](uint64_t i, int&) {
        last = i;
        return i < 10;
      });
  CHECK(last == 10);
  CHECK(produced < 100);  // producers stop within a window of the stop point
}
