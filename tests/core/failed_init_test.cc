// A destructor must not undo what a failed init never did. The io_uring engine's destructor
// used to call io_uring_queue_exit on the zeroed ring of a failed setup, which closes fd 0
// (whatever file is descriptor 0 at the time). Here setup is made to fail for real, in a child
// process, with the seccomp filter that Docker's default profile applies (io_uring_setup ->
// EPERM), and descriptor 0 must still be the same open file afterwards.
#include <fcntl.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstddef>

#include "src/fd.h"
#include "src/io_engine.h"
#include "test_util.h"

using namespace ds;

namespace {

// Installs a filter that fails io_uring_setup with EPERM. Returns false if the kernel refuses.
bool BlockIoUringSetup() {
  sock_filter prog[] = {
      BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(seccomp_data, nr)),
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_io_uring_setup, 0, 1),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EPERM),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
  };
  sock_fprog fprog{static_cast<unsigned short>(sizeof prog / sizeof prog[0]), prog};
  return ::prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == 0 &&
         ::prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &fprog, 0, 0) == 0;
}

// The child's exit codes.
enum : int { kOk = 0, kSetupSucceeded = 10, kNoSeccomp = 11, kFd0Closed = 12, kFd0Changed = 13 };

int Child(const std::string& file) {
  int fd = ::open(file.c_str(), O_RDONLY);
  if (fd < 0 || ::dup2(fd, 0) != 0) return 20;
  ::close(fd);
  struct stat before;
  if (::fstat(0, &before) != 0) return 21;
  if (!BlockIoUringSetup()) return kNoSeccomp;
  {
    auto engine = MakeEngine("io_uring", {8, false});
    if (engine.ok()) return kSetupSucceeded;
    if (engine.status().code() != Code::kUnsupported) return 22;
  }  // a failed engine is destroyed here (the bug closed fd 0 in that destructor)
  struct stat after;
  if (::fstat(0, &after) != 0) return kFd0Closed;
  if (after.st_ino != before.st_ino || after.st_dev != before.st_dev) return kFd0Changed;
  return kOk;
}

}  // namespace

TEST_CASE("a failed io_uring setup leaves descriptor 0 open (seccomp EPERM)", "[core]") {
  test::TempDir dir;
  test::WriteFile(dir / "stdin", "the file on descriptor 0\n");
  pid_t pid = ::fork();
  REQUIRE(pid >= 0);
  if (pid == 0) ::_exit(Child(dir / "stdin"));
  int status = 0;
  REQUIRE(::waitpid(pid, &status, 0) == pid);
  REQUIRE(WIFEXITED(status));
  int code = WEXITSTATUS(status);
  INFO("child exit code " << code);
  REQUIRE(code != kNoSeccomp);  // this kernel takes seccomp filters (tests/e2e/no_io_uring.py)
  REQUIRE(code != kSetupSucceeded);
  CHECK(code != kFd0Closed);
  CHECK(code == kOk);
}

TEST_CASE("AlignedBuffer is aligned, move-only and empty after a move", "[core]") {
  AlignedBuffer a(10000);
  REQUIRE(a.data() != nullptr);
  CHECK(reinterpret_cast<uintptr_t>(a.data()) % kDirectAlign == 0);
  CHECK(a.size() == 10000);
  char* p = a.data();
  AlignedBuffer b(std::move(a));
  CHECK(b.data() == p);
  CHECK(a.data() == nullptr);  // NOLINT(bugprone-use-after-move): the contract under test
  CHECK(a.size() == 0);
  AlignedBuffer c;
  c = std::move(b);
  CHECK(c.data() == p);
}

TEST_CASE("WriteFullAt writes every byte at its offset and names the file on error", "[core]") {
  test::TempDir dir;
  std::string path = dir / "f";
  test::WriteFile(path, "0123456789");
  int fd = ::open(path.c_str(), O_WRONLY);
  REQUIRE(fd >= 0);
  REQUIRE(WriteFullAt(fd, "abc", 3, 4, path).ok());
  ::close(fd);
  CHECK(test::ReadFile(path) == "0123abc789");
  int ro = ::open(path.c_str(), O_RDONLY);
  Status s = WriteFullAt(ro, "x", 1, 2, "shard-7");
  ::close(ro);
  CHECK_FALSE(s.ok());
  CHECK(s.message().find("shard-7: write at offset 2") != std::string::npos);
}
