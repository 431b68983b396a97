// RunOrdered: a parallel map with in-order delivery, for IO-bound work.
//
// produce(i) runs for i in [0, n) on `threads` plain threads (which may block on IO as long as
// they like: no spinning, no work stealing), at most `window` items ahead of the consumer, so at
// most `window` results exist at once (bounded memory). consume(i, result) runs on the calling
// thread strictly in order 0, 1, 2, ...; returning false stops the run early (producers finish
// the item they hold and exit). Deterministic output for any thread count follows from the
// in-order consumer.
//
// Why not a TBB pipeline: TBB workers spin and sched_yield while waiting, which on a 2-core
// machine with 16 blocking readers cost ~15% of the CPU in measurements (docs/benchmarks.md).
#pragma once

#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

namespace ds {

template <typename T, typename Produce, typename Consume>
void RunOrdered(uint64_t n, int threads, size_t window, Produce&& produce, Consume&& consume) {
  if (threads < 1) threads = 1;
  if (window < static_cast<size_t>(threads)) window = static_cast<size_t>(threads);
  std::mutex mu;
  std::condition_variable ready, space;
  std::vector<std::optional<T>> slots(window);
  uint64_t next_claim = 0, consumed = 0;
  bool stop = false;

  auto worker = [&] {
    for (;;) {
      uint64_t i;
      {
        std::unique_lock<std::mutex> lock(mu);
        space.wait(lock, [&] { return stop || next_claim >= n || next_claim < consumed + window; });
        if (stop || next_claim >= n) return;
        i = next_claim++;
      }
      T result = produce(i);
      bool wanted;
      {
        std::lock_guard<std::mutex> lock(mu);
        slots[i % window].emplace(std::move(result));
        wanted = i == consumed;  // wake the consumer only for the item it waits for
      }
      if (wanted) ready.notify_one();
    }
  };
  std::vector<std::thread> pool;
  pool.reserve(static_cast<size_t>(threads));
  for (int t = 0; t < threads; t++) pool.emplace_back(worker);

  for (uint64_t i = 0; i < n; i++) {
    T item;
    {
      std::unique_lock<std::mutex> lock(mu);
      ready.wait(lock, [&] { return slots[i % window].has_value(); });
      item = std::move(*slots[i % window]);
      slots[i % window].reset();
      consumed = i + 1;
    }
    space.notify_one();  // one slot freed: one more item may be claimed
    if (!consume(i, item)) {
      std::lock_guard<std::mutex> lock(mu);
      stop = true;
      break;
    }
  }
  {
    std::lock_guard<std::mutex> lock(mu);
    stop = true;
  }
  space.notify_all();
  for (auto& t : pool) t.join();
}

}  // namespace ds
