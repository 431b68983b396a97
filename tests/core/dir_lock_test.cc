// LockDirectory (src/dir_lock.h): one writer per directory, no reader while it writes; the
// holder's PID in the refusal; the lock ends with its fd; a directory replaced under the lock is
// refused.
#include "src/dir_lock.h"

#include <sys/stat.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <string>
#include <thread>

#include "test_util.h"

using ds::Code;
using ds::test::TempDir;

TEST_CASE("LockDirectory: a second writer is refused naming the holder's PID", "[core]") {
  TempDir t;
  std::string warning;
  auto first = ds::LockDirectory(t.path(), &warning);
  REQUIRE(first.ok());
  CHECK(warning.empty());
  // flock belongs to the open file description: a second open in this process is refused too.
  auto second = ds::LockDirectory(t.path(), &warning);
  REQUIRE_FALSE(second.ok());
  CHECK(second.status().code() == Code::kAlreadyExists);
  CHECK_THAT(second.status().message(),
             Catch::Contains(t.path() + ": is being written by PID " + std::to_string(::getpid())));
  *first = ds::OwnedFd();  // released with its fd
  CHECK(ds::LockDirectory(t.path(), &warning).ok());
}

TEST_CASE("LockDirectoryShared: no reader opens a directory a writer holds", "[core]") {
  TempDir t;
  std::string warning;
  auto writer = ds::LockDirectory(t.path(), &warning);
  REQUIRE(writer.ok());
  auto reader = ds::LockDirectoryShared(t.path());
  REQUIRE_FALSE(reader.ok());
  CHECK(reader.status().code() == Code::kAlreadyExists);
  CHECK_THAT(reader.status().message(),
             Catch::Contains(t.path() + ": is being written by PID " + std::to_string(::getpid())));
  *writer = ds::OwnedFd();
  // Readers share; a writer waits for a reader's short hold, then takes the lock.
  auto r1 = ds::LockDirectoryShared(t.path());
  auto r2 = ds::LockDirectoryShared(t.path());
  REQUIRE(r1.ok());
  REQUIRE(r2.ok());
  std::thread release([&] {
    ::usleep(50'000);
    *r1 = ds::OwnedFd();
    *r2 = ds::OwnedFd();
  });
  CHECK(ds::LockDirectory(t.path(), &warning).ok());
  release.join();
}

TEST_CASE("LockDirectory: a missing directory is an error naming it", "[core]") {
  TempDir t;
  auto lock = ds::LockDirectory(t / "nope", nullptr);
  REQUIRE_FALSE(lock.ok());
  CHECK_THAT(lock.status().message(), Catch::Contains(t / "nope"));
}

TEST_CASE("FlockHolder reads /proc/locks by device and inode", "[core]") {
  const std::string text =
      "1: POSIX  ADVISORY  WRITE 11 08:01:42 0 EOF\n"
      "2: FLOCK  ADVISORY  WRITE 1234 00:2d:42 0 EOF\n"
      "2: -> FLOCK  ADVISORY  WRITE 99 00:2d:42 0 EOF\n"
      "3: FLOCK  ADVISORY  WRITE 77 fd:00:42 0 EOF\n"
      "garbage\n";
  CHECK(ds::FlockHolder(text, 0x00, 0x2d, 42) == 1234);
  CHECK(ds::FlockHolder(text, 0xfd, 0x00, 42) == 77);
  CHECK(ds::FlockHolder(text, 0x08, 0x01, 42) == 0);  // a POSIX lock is not ours
  CHECK(ds::FlockHolder(text, 0x00, 0x2d, 43) == 0);
  CHECK(ds::FlockHolder("", 0, 0, 1) == 0);
}
