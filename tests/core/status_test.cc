#include "src/status.h"

#include <fcntl.h>

#include <catch2/catch.hpp>

#include "src/fd.h"
#include "src/file_writer.h"
#include "test_util.h"

using namespace ds;

TEST_CASE("Status maps errno and exit codes", "[core]") {
  CHECK(Status::FromErrno(ENOSPC, "x").code() == Code::kNoSpace);
  CHECK(Status::FromErrno(ENOENT, "x").code() == Code::kNotFound);
  CHECK(Status::FromErrno(EACCES, "f", Code::kBadInput).code() == Code::kBadInput);
  CHECK(Status::FromErrno(EACCES, "some/file").message() == "some/file: Permission denied");
  CHECK(ExitCode(Status()) == 0);
  CHECK(ExitCode(Status(Code::kCorruption, "")) == 1);
  CHECK(ExitCode(Status(Code::kBadInput, "")) == 1);
  CHECK(ExitCode(Status(Code::kInvalidArgument, "")) == 2);
  CHECK(ExitCode(Status(Code::kNoSpace, "")) == 2);
  CHECK(Status(Code::kIOError, "b").Prefixed("a").message() == "a: b");
}

TEST_CASE("Result holds a value or a status", "[core]") {
  Result<int> ok = 5;
  Result<int> bad = Status(Code::kNotFound, "nope");
  CHECK(ok.ok());
  CHECK(*ok == 5);
  CHECK_FALSE(bad.ok());
  CHECK(bad.status().message() == "nope");
}

TEST_CASE("ReadFullAt reports truncation as corruption with the offset", "[core]") {
  test::TempDir dir;
  test::WriteFile(dir / "f", "0123456789");
  auto fd = OpenFile(dir / "f", O_RDONLY);
  REQUIRE(fd.ok());
  char buf[8];
  CHECK(ReadFullAt(fd->get(), buf, 4, 6, "f").ok());
  Status s = ReadFullAt(fd->get(), buf, 8, 6, "f");
  CHECK(s.code() == Code::kCorruption);
  CHECK(s.message().find("truncated") != std::string::npos);
  CHECK(s.message().find("offset 6") != std::string::npos);
}

TEST_CASE("FileWriter buffers, truncates back and writes atomically", "[core]") {
  test::TempDir dir;
  for (bool direct : {false, true}) {
    std::string path = dir / (direct ? "direct" : "buffered");
    auto fd = OpenFile(path, O_RDWR | O_CREAT | O_EXCL);
    REQUIRE(fd.ok());
    FileWriter w(std::move(fd).value(), path, 4096);
    if (direct) w.EnableDirect();  // may stay buffered on tmpfs; the contract is the same
    std::string expect;
    auto append = [&](const std::string& s) {
      REQUIRE(w.Append(s).ok());
      expect += s;
    };
    append("hello ");
    append(std::string(10000, 'x'));   // spills past the 4 KiB buffer twice
    REQUIRE(w.TruncateTo(5000).ok());  // cut inside bytes already written
    expect.resize(5000);
    append(std::string(3000, 'y'));
    REQUIRE(w.TruncateTo(7000).ok());  // cut inside the buffer
    expect.resize(7000);
    REQUIRE(w.AppendZeros(123).ok());
    expect += std::string(123, '\0');
    append("tail");
    CHECK(w.size() == expect.size());
    REQUIRE(w.Close(true).ok());
    CHECK(test::ReadFile(path) == expect);
  }

  REQUIRE(WriteFileAtomic(dir / "a", "content").ok());
  CHECK(test::ReadFile(dir / "a") == "content");
  CHECK(access((dir / "a.tmp").c_str(), F_OK) != 0);
}
