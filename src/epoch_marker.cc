#include "src/epoch_marker.h"

#include <fcntl.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <nlohmann/json.hpp>

namespace ds {

void MarkEpoch(const EpochMark& mark) {
  const char* path = std::getenv(kWatchEpochsEnv);
  if (!path || !*path) return;
  double now =
      std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
  nlohmann::json j = {{"event", mark.start ? "start" : "end"},
                      {"epoch", mark.epoch},
                      {"pid", static_cast<int64_t>(::getpid())},
                      {"t", now}};
  if (mark.samples) j["samples"] = *mark.samples;
  if (mark.bytes) j["bytes"] = *mark.bytes;
  if (mark.data_wait_s) j["data_wait_s"] = *mark.data_wait_s;
  std::string line = j.dump() + "\n";
  int fd = ::open(path, O_WRONLY | O_APPEND | O_CLOEXEC);
  if (fd < 0) return;
  [[maybe_unused]] ssize_t n = ::write(fd, line.data(), line.size());
  ::close(fd);
}

}  // namespace ds
