#include <catch2/catch.hpp>
#include <filesystem>

#include "formats/native/native_dataset.h"
#include "pack/inspect.h"
#include "test_util.h"

using namespace ds;

TEST_CASE("extract refuses keys that would land outside DIR and writes the rest", "[pack]") {
  test::TempDir dir;
  {
    auto w = native::DatasetWriter::Create(dir / "ds", {});
    REQUIRE(w.ok());
    for (const char* key : {"ok/file", "../escape", "/abs/path", "a/../../b", "a//b", "./x"}) {
      REQUIRE((*w)->Add(Sample{key, {{"txt", key}}}).ok());
    }
    REQUIRE((*w)->Finish(nullptr).ok());
  }
  std::filesystem::create_directories(dir / "out");
  std::FILE* devnull = std::fopen("/dev/null", "w");
  Status s = Extract(dir / "ds", dir / "out/x", {}, devnull);
  std::fclose(devnull);
  CHECK(s.code() == Code::kCorruption);
  CHECK(s.message().find("5 samples refused") != std::string::npos);
  CHECK(test::ReadFile(dir / "out/x/ok/file.txt") == "ok/file");
  CHECK_FALSE(std::filesystem::exists(dir / "out/escape.txt"));
  CHECK_FALSE(std::filesystem::exists(dir / "b.txt"));
  CHECK_FALSE(std::filesystem::exists("/abs/path.txt"));
}

TEST_CASE("extract does not follow a symlink planted inside DIR", "[pack]") {
  test::TempDir dir;
  {
    auto w = native::DatasetWriter::Create(dir / "ds", {});
    REQUIRE(w.ok());
    REQUIRE((*w)->Add(Sample{"link/f", {{"txt", "x"}}}).ok());
    REQUIRE((*w)->Finish(nullptr).ok());
  }
  std::filesystem::create_directories(dir / "out");
  std::filesystem::create_directories(dir / "elsewhere");
  std::filesystem::create_directory_symlink(dir / "elsewhere", dir / "out/link");
  std::FILE* devnull = std::fopen("/dev/null", "w");
  Status s = Extract(dir / "ds", dir / "out", {}, devnull);
  std::fclose(devnull);
  CHECK_FALSE(s.ok());
  CHECK_FALSE(std::filesystem::exists(dir / "elsewhere/f.txt"));
}
