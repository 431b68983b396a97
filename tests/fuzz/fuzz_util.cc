#include "fuzz_util.h"

#include <fcntl.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>

namespace ds::fuzz {

const std::string& ScratchDir() {
  // Never destroyed: the atexit cleanup below runs after static destructors registered later.
  static const std::string* dir = [] {
    const char* tmp = std::getenv("TMPDIR");
    auto* d = new std::string(std::string(tmp && *tmp ? tmp : "/tmp") + "/dspack-fuzz-XXXXXX");
    if (!::mkdtemp(d->data())) std::abort();
    std::atexit([] { std::filesystem::remove_all(ScratchDir()); });
    return d;
  }();
  return *dir;
}

std::string WriteScratch(const std::string& name, std::string_view data) {
  std::string path = ScratchDir() + "/" + name;
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) std::abort();
  size_t off = 0;
  while (off < data.size()) {
    ssize_t n = ::write(fd, data.data() + off, data.size() - off);
    if (n <= 0) std::abort();
    off += static_cast<size_t>(n);
  }
  ::close(fd);
  return path;
}

}  // namespace ds::fuzz
