// The unit tests' main: Catch2's, plus one switch for ctest's unit_io_uring. With
// DSPACK_SKIP_WITHOUT_IO_URING=1 in the environment, a kernel that refuses io_uring (old kernel,
// seccomp, io_uring_disabled) makes the run exit kSkipExit before any test, which ctest reports
// as a skip (SKIP_RETURN_CODE); Catch2 v2 has no SKIP of its own.
#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "src/io_engine.h"

namespace {
constexpr int kSkipExit = 77;  // tests/CMakeLists.txt: SKIP_RETURN_CODE
}

int main(int argc, char* argv[]) {
  const char* gate = std::getenv("DSPACK_SKIP_WITHOUT_IO_URING");
  if (gate != nullptr && std::strcmp(gate, "1") == 0) {
    auto engine = ds::MakeEngine("io_uring", {});
    if (!engine.ok() && engine.status().code() == ds::Code::kUnsupported) {
      std::printf("SKIP: io_uring unavailable here: %s\n", engine.status().message().c_str());
      return kSkipExit;
    }
  }
  return Catch::Session().run(argc, argv);
}
