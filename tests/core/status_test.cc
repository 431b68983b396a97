#include "src/status.h"

#include <fcntl.h>

#include <catch2/catch.hpp>

#include "src/fd.h"
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
  auto fd = OpenFile(dir / "w", O_WRONLY | O_CREAT | O_EXCL);
  REQUIRE(fd.ok());
  FileWriter w(std::move(fd).value(), dir / "w", 16);
  REQUIRE(w.Append("hello ").ok());
  REQUIRE(w.Append(std::string(40, 'x')).ok());
  REQUIRE(w.TruncateTo(6).ok());
  REQUIRE(w.Append("world").ok());
  REQUIRE(w.Close(true).ok());
  CHECK(test::ReadFile(dir / "w") == "hello world");

  REQUIRE(WriteFileAtomic(dir / "a", "content").ok());
  CHECK(test::ReadFile(dir / "a") == "content");
  CHECK(access((dir / "a.tmp").c_str(), F_OK) != 0);
}
