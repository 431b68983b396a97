#include "src/stop.h"

#include <atomic>
#include <csignal>

namespace ds {
namespace {
std::atomic<bool> g_stop{false};
void OnSignal(int) { g_stop.store(true); }
}  // namespace
void RequestStop() { g_stop.store(true); }
bool StopRequested() { return g_stop.load(std::memory_order_relaxed); }
void InstallStopHandlers() {
  struct sigaction sa {};
  sa.sa_handler = OnSignal;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
}
}  // namespace ds
