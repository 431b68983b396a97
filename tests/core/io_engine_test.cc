#include "src/io_engine.h"

#include <fcntl.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstring>
#include <vector>

#include "src/fd.h"
#include "src/random.h"
#include "test_util.h"

using namespace ds;

namespace {
std::string EngineContent(size_t n) {
  std::string s(n, '\0');
  Rng(21).Fill(s.data(), n);
  return s;
}

// The io_uring engine's cases are tagged [io_uring], apart from [core]: ctest runs them as
// unit_io_uring, which reports a skip (not a pass) where the kernel refuses io_uring
// (main_test.cc). Where they run, io_uring must work.

void ReadsRandomBlocks(const char* name) {
  INFO(name);
  test::TempDir dir;
  const size_t kSize = 1 << 20, kBs = 4096;
  std::string data = EngineContent(kSize);
  test::WriteFile(dir / "f", data);
  auto engine = MakeEngine(name, {16, false});
  REQUIRE(engine.ok());
  auto fd = OpenFile(dir / "f", O_RDONLY);
  REQUIRE(fd.ok());
  auto handed = EngineFile::Open(**engine, fd->get());
  REQUIRE(handed.ok());
  std::vector<IoRequest> reqs(16);
  std::vector<std::vector<char>> bufs(16, std::vector<char>(kBs));
  Rng rng(5);
  size_t checked = 0;
  for (int round = 0; round < 20; round++) {
    for (size_t i = 0; i < reqs.size(); i++) {
      reqs[i] = IoRequest{IoRequest::Op::kRead,         fd->get(), bufs[i].data(), kBs,
                          rng.Below(kSize / kBs) * kBs, 0,         &reqs[i]};
      REQUIRE((*engine)->Queue(&reqs[i]).ok());
    }
    CHECK_FALSE((*engine)->Queue(&reqs[0]).ok());  // full at depth 16
    REQUIRE((*engine)->Submit().ok());
    size_t got = 0;
    IoRequest* out[16];
    while (got < reqs.size()) {
      auto n = (*engine)->Reap(1, std::span<IoRequest*>(out, 16));
      REQUIRE(n.ok());
      for (size_t k = 0; k < *n; k++) {
        IoRequest* r = out[k];
        CHECK(r->user == r);
        REQUIRE(r->result == static_cast<ssize_t>(kBs));
        CHECK(std::memcmp(r->buf, data.data() + r->offset, kBs) == 0);
        checked++;
      }
      got += *n;
    }
    CHECK((*engine)->inflight() == 0);
  }
  CHECK(checked == 320);
}

void ReadsShortAtEof(const char* name) {
  INFO(name);
  test::TempDir dir;
  std::string data = EngineContent(10000);
  test::WriteFile(dir / "f", data);
  auto engine = MakeEngine(name, {4, false});
  REQUIRE(engine.ok());
  auto fd = OpenFile(dir / "f", O_RDONLY);
  REQUIRE(fd.ok());
  auto handed = EngineFile::Open(**engine, fd->get());
  REQUIRE(handed.ok());
  std::vector<char> buf(20000);
  auto n = EngineReadFull(**engine, fd->get(), buf.data(), buf.size(), 2000);
  REQUIRE(n.ok());
  CHECK(*n == 8000);
  CHECK(std::memcmp(buf.data(), data.data() + 2000, 8000) == 0);
  auto past = EngineReadFull(**engine, fd->get(), buf.data(), 100, 50000);
  REQUIRE(past.ok());
  CHECK(*past == 0);
  auto bad = EngineReadFull(**engine, 987654, buf.data(), 10, 0);  // not an fd (mmap: not given)
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.status().message().find("Bad file descriptor") != std::string::npos);
}

void WritesWithODirect(const char* name) {
  INFO(name);
  test::TempDir dir;
  auto engine = MakeEngine(name, {8, false});
  REQUIRE(engine.ok());
  std::string path = dir / (std::string(name) + ".out");
  auto fd = OpenFile(path, O_RDWR | O_CREAT | O_TRUNC);
  REQUIRE(fd.ok());
  bool direct = fcntl(fd->get(), F_SETFL, fcntl(fd->get(), F_GETFL) | O_DIRECT) == 0;
  AlignedBuffer buf(64 << 10);
  Rng(9).Fill(buf.data(), buf.size());
  IoRequest w{IoRequest::Op::kWrite, fd->get(), buf.data(), buf.size(), 8192, 0, nullptr};
  REQUIRE((*engine)->Queue(&w).ok());
  REQUIRE((*engine)->Submit().ok());
  IoRequest* out[1];
  REQUIRE(*(*engine)->Reap(1, out) == 1);
  REQUIRE(w.result == static_cast<ssize_t>(buf.size()));
  std::string back = test::ReadFile(path);
  REQUIRE(back.size() == 8192 + buf.size());
  CHECK(std::memcmp(back.data() + 8192, buf.data(), buf.size()) == 0);
  INFO("O_DIRECT " << (direct ? "on" : "refused by this file system"));
}
}  // namespace

TEST_CASE(
    "psync, libaio and mmap read random blocks at queue depth and return the caller's "
    "requests",
    "[core]") {
  ReadsRandomBlocks("psync");
  ReadsRandomBlocks("libaio");
  ReadsRandomBlocks("mmap");
}
TEST_CASE("io_uring reads random blocks at queue depth and returns the caller's requests",
          "[io_uring]") {
  ReadsRandomBlocks("io_uring");
}

TEST_CASE("short reads at EOF are requeued until EOF, errors are -errno", "[core]") {
  ReadsShortAtEof("psync");
  ReadsShortAtEof("libaio");
  ReadsShortAtEof("mmap");
  CHECK(MakeEngine("windowsaio", {}).status().code() == Code::kInvalidArgument);
}
TEST_CASE("io_uring: short reads at EOF are requeued until EOF, errors are -errno", "[io_uring]") {
  ReadsShortAtEof("io_uring");
}

TEST_CASE("psync writes, and O_DIRECT works with aligned buffers", "[core]") {
  WritesWithODirect("psync");
  WritesWithODirect("libaio");  // native AIO is asynchronous with O_DIRECT
}
TEST_CASE("io_uring writes, and O_DIRECT works with aligned buffers", "[io_uring]") {
  WritesWithODirect("io_uring");
}

namespace {
// One request through the engine, completed.
ssize_t Do(IoEngine& e, IoRequest::Op op, int fd, char* buf, size_t len, uint64_t off) {
  IoRequest r{op, fd, buf, len, off, 0, nullptr};
  REQUIRE(e.Queue(&r).ok());
  REQUIRE(e.Submit().ok());
  IoRequest* out[1];
  REQUIRE(*e.Reap(1, out) == 1);
  return r.result;
}
}  // namespace

TEST_CASE("mmap: a write after a read goes through a writable mapping", "[core]") {
  // The protection was once chosen by the first request: a read mapped the file PROT_READ and
  // the next write died of SIGSEGV (dsbench io --ioengine mmap --rw randrw).
  test::TempDir dir;
  std::string data = EngineContent(16384);
  test::WriteFile(dir / "f", data);
  auto engine = MakeEngine("mmap", {4, false});
  REQUIRE(engine.ok());
  auto fd = OpenFile(dir / "f", O_RDWR);
  REQUIRE(fd.ok());
  auto handed = EngineFile::Open(**engine, fd->get());
  REQUIRE(handed.ok());
  std::vector<char> buf(4096);
  REQUIRE(Do(**engine, IoRequest::Op::kRead, fd->get(), buf.data(), 4096, 0) == 4096);
  CHECK(std::memcmp(buf.data(), data.data(), 4096) == 0);
  std::string block(4096, 'w');
  REQUIRE(Do(**engine, IoRequest::Op::kWrite, fd->get(), block.data(), 4096, 8192) == 4096);
  CHECK(test::ReadFile(dir / "f").substr(8192, 4096) == block);

  auto ro = OpenFile(dir / "f", O_RDONLY);  // read-only: a write is EBADF, as pwrite's
  REQUIRE(ro.ok());
  auto handed_ro = EngineFile::Open(**engine, ro->get());
  REQUIRE(handed_ro.ok());
  CHECK(Do(**engine, IoRequest::Op::kWrite, ro->get(), block.data(), 4096, 0) == -EBADF);
  CHECK(Do(**engine, IoRequest::Op::kRead, ro->get(), buf.data(), 4096, 8192) == 4096);
  CHECK(std::string(buf.data(), 4096) == block);
}

TEST_CASE("mmap: a reused fd number gets its own file's mapping, and IO makes no syscall",
          "[core]") {
  test::TempDir dir;
  test::WriteFile(dir / "a", std::string(8192, 'a'));  // the same size: no remap by size
  test::WriteFile(dir / "b", std::string(8192, 'b'));
  auto engine = MakeEngine("mmap", {4, false});
  REQUIRE(engine.ok());
  IoEngine& e = **engine;
  std::vector<char> buf(8192);
  int first;
  {
    auto a = OpenFile(dir / "a", O_RDONLY);
    REQUIRE(a.ok());
    first = a->get();
    REQUIRE(e.OpenFile(first).ok());
    REQUIRE(Do(e, IoRequest::Op::kRead, first, buf.data(), 8192, 0) == 8192);
    CHECK(buf[0] == 'a');
  }  // closed without CloseFile: the engine still maps "a" under that number
  auto b = OpenFile(dir / "b", O_RDONLY);
  REQUIRE(b.ok());
  REQUIRE(b->get() == first);  // the kernel hands out the lowest free number again
  REQUIRE(e.OpenFile(b->get()).ok());
  REQUIRE(Do(e, IoRequest::Op::kRead, b->get(), buf.data(), 8192, 0) == 8192);
  CHECK(buf[0] == 'b');
  CHECK(buf[8191] == 'b');
  // No syscall per IO (kEngineMemcpy): with the fd closed, the mapping still serves reads (an
  // fstat per request once failed here with EBADF).
  int fdnum = b->get();
  b->reset();
  CHECK(Do(e, IoRequest::Op::kRead, fdnum, buf.data(), 100, 4000) == 100);
  CHECK(buf[0] == 'b');
  e.CloseFile(fdnum);
  CHECK(Do(e, IoRequest::Op::kRead, fdnum, buf.data(), 100, 0) == -EBADF);
}

TEST_CASE("engines other than io_uring refuse registered files and buffers", "[core]") {
  test::TempDir dir;
  test::WriteFile(dir / "f", EngineContent(4096));
  auto fd = OpenFile(dir / "f", O_RDONLY);
  REQUIRE(fd.ok());
  int f = fd->get();
  AlignedBuffer buf(4096);
  std::span<char> span(buf.data(), buf.size());
  for (const char* name : {"psync", "libaio", "mmap"}) {
    INFO(name);
    auto engine = MakeEngine(name, {8, false});
    REQUIRE(engine.ok());
    CHECK((*engine)->RegisterFiles(std::span<const int>(&f, 1)).code() == Code::kInvalidArgument);
    CHECK((*engine)->RegisterBuffers(std::span<const std::span<char>>(&span, 1)).code() ==
          Code::kInvalidArgument);
  }
}

TEST_CASE("io_uring reads through a registered file and fixed buffers", "[io_uring]") {
  test::TempDir dir;
  const size_t kSize = 256 << 10, kBs = 4096, kDepth = 8;
  std::string data = EngineContent(kSize);
  test::WriteFile(dir / "f", data);
  auto fd = OpenFile(dir / "f", O_RDONLY);
  REQUIRE(fd.ok());
  int f = fd->get();
  auto engine = MakeEngine("io_uring", {kDepth, false});
  REQUIRE(engine.ok());
  std::vector<AlignedBuffer> bufs;
  std::vector<std::span<char>> spans;
  for (size_t i = 0; i < kDepth; i++) {
    bufs.emplace_back(kBs);
    spans.emplace_back(bufs.back().data(), kBs);
  }
  REQUIRE((*engine)->RegisterFiles(std::span<const int>(&f, 1)).ok());
  Status reg = (*engine)->RegisterBuffers(spans);
  if (!reg.ok()) WARN("fixed buffers refused here (locked-memory limit?): " << reg.message());
  std::vector<IoRequest> reqs(kDepth);
  for (size_t i = 0; i < kDepth; i++) {
    reqs[i] =
        IoRequest{IoRequest::Op::kRead, f, bufs[i].data(), kBs,
                  (i * 7 % 64) * kBs,   0, nullptr,        reg.ok() ? static_cast<int>(i) : -1};
    REQUIRE((*engine)->Queue(&reqs[i]).ok());
  }
  REQUIRE((*engine)->Submit().ok());
  IoRequest* out[kDepth];
  size_t got = 0;
  while (got < kDepth) {
    auto n = (*engine)->Reap(1, std::span<IoRequest*>(out, kDepth));
    REQUIRE(n.ok());
    for (size_t k = 0; k < *n; k++) {
      REQUIRE(out[k]->result == static_cast<ssize_t>(kBs));
      CHECK(std::memcmp(out[k]->buf, data.data() + out[k]->offset, kBs) == 0);
    }
    got += *n;
  }
}

TEST_CASE("io_uring: a depth the kernel refuses is a bad depth, not a missing io_uring",
          "[io_uring]") {
  // Over IORING_MAX_ENTRIES (32768): io_uring_setup says EINVAL, while a ring of one entry works.
  auto engine = MakeEngine("io_uring", {65536, false});
  REQUIRE_FALSE(engine.ok());
  CHECK(engine.status().code() == Code::kInvalidArgument);
  CHECK_THAT(engine.status().message(),
             Catch::Contains("io_uring refuses a queue depth of 65536") &&
                 Catch::Contains("lower `iodepth`"));
}
