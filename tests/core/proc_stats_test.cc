#include "src/proc_stats.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <catch2/catch.hpp>

#include "src/epoch_marker.h"
#include "src/fd.h"
#include "test_util.h"

using namespace ds;
using ds::test::TempDir;

TEST_CASE("proc stat: comm with spaces and parentheses, the fields after it", "[core]") {
  // proc(5): pid (comm) state ppid pgrp session tty tpgid flags minflt cminflt majflt cmajflt
  // utime stime ...
  std::string text =
      "4242 (my (odd) name) D 17 4242 4242 0 -1 4194560 1200 0 37 0 250 150 0 0 20 0 3 0 "
      "12345 1000000 2500 18446744073709551615\n";
  ProcSample s;
  REQUIRE(ParseProcStat(text, &s).ok());
  CHECK(s.pid == 4242);
  CHECK(s.comm == "my (odd) name");
  CHECK(s.state == 'D');
  CHECK(s.ppid == 17);
  CHECK(s.majflt == 37);
  CHECK(s.cpu_seconds == Approx(400.0 / static_cast<double>(::sysconf(_SC_CLK_TCK))));
  CHECK(ParseProcStat("4242 no parens R 1", &s).code() == Code::kCorruption);
  CHECK(ParseProcStat("4242 (x) R 1 2", &s).code() == Code::kCorruption);
}

TEST_CASE("proc status, io, smaps_rollup, pressure, meminfo, vmstat", "[core]") {
  ProcSample s;
  ParseProcStatus(
      "Name:\tpython3\nVmPeak:\t  200000 kB\nVmHWM:\t  150000 kB\nVmRSS:\t  "
      "120000 kB\n",
      &s);
  CHECK(s.vm_peak == 200000ull * 1024);
  CHECK(s.vm_hwm == 150000ull * 1024);
  CHECK(s.rss == 120000ull * 1024);
  ParseProcIo(
      "rchar: 10\nwchar: 20\nsyscr: 1\nsyscw: 2\nread_bytes: 4096\nwrite_bytes: 8192\n"
      "cancelled_write_bytes: 0\n",
      &s);
  CHECK(s.io_ok);
  CHECK(s.read_bytes == 4096);
  CHECK(s.write_bytes == 8192);
  ProcSample none;
  ParseProcIo("", &none);  // another user's process: unreadable
  CHECK_FALSE(none.io_ok);
  CHECK(ParseSmapsRollupPss("Rss:  1000 kB\nPss:  600 kB\nPss_Anon: 500 kB\n") == 600 * 1024);

  Pressure p = ParsePressure(
      "some avg10=12.50 avg60=3.00 avg300=1.00 total=123456\n"
      "full avg10=2.25 avg60=0.00 avg300=0.00 total=789\n");
  CHECK(p.present);
  CHECK(p.some_avg10 == Approx(12.5));
  CHECK(p.full_avg10 == Approx(2.25));
  CHECK(p.some_total_us == 123456);
  CHECK(p.full_total_us == 789);
  CHECK_FALSE(ParsePressure("").present);  // a kernel without PSI

  SystemCounters c;
  ParseMeminfo(
      "MemTotal:  1000 kB\nMemFree: 10 kB\nMemAvailable: 500 kB\nSwapTotal: 0 kB\n"
      "SwapFree: 0 kB\nDirty: 3 kB\nWriteback: 1 kB\n",
      &c);
  CHECK(c.mem_total == 1000 * 1024);
  CHECK(c.mem_available == 500 * 1024);
  CHECK(c.dirty == 3 * 1024);
  CHECK(c.writeback == 1024);
  ParseVmstat("nr_free_pages 1\npswpin 7\npswpout 9\n", &c);
  CHECK(c.pswpin == 7);
  CHECK(c.pswpout == 9);
}

TEST_CASE("this process: its sample, its tree, its read-only files", "[core]") {
  TempDir dir;
  std::string data = dir.path() + "/data.bin", out = dir.path() + "/out.log";
  REQUIRE(WriteFileAtomic(data, std::string(8192, 'x')).ok());
  int rfd = ::open(data.c_str(), O_RDONLY | O_CLOEXEC);
  int wfd = ::open(out.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
  REQUIRE(rfd >= 0);
  REQUIRE(wfd >= 0);
  auto self = ReadProcSample(::getpid());
  REQUIRE(self.ok());
  CHECK(self->pid == ::getpid());
  CHECK(self->rss > 0);
  CHECK(self->state == 'R');
  std::string fifo = dir.path() + "/fifo";  // open read-only, as Open MPI's debugger fifo is
  REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
  int ffd = ::open(fifo.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  REQUIRE(ffd >= 0);
  auto open = OpenFiles(::getpid());
  std::vector<std::string> files;
  for (const HeldFile& f : open) files.push_back(f.path);
  CHECK(std::count(files.begin(), files.end(), data) == 1);  // read-only: data
  CHECK(std::count(files.begin(), files.end(), out) == 0);   // written: a log, not data
  CHECK(std::count(files.begin(), files.end(), fifo) == 0);  // not a regular file
  for (const HeldFile& f : open) {
    if (f.path != data) continue;
    CHECK(f.fd == rfd);
    // Through this process's own descriptor (pidfd_getfd): 8 KiB just written, cached.
    auto r = ResidentPagesOf(f);
    REQUIRE(r.ok());
    CHECK(r->pages == 2);
    CHECK(r->resident == 2);
  }
  ::close(rfd);
  ::close(wfd);
  ::close(ffd);

  pid_t child = ::fork();
  REQUIRE(child >= 0);
  if (child == 0) {
    ::pause();
    ::_exit(0);
  }
  auto tree = ProcessTree(::getpid());
  REQUIRE(!tree.empty());
  CHECK(tree.front() == ::getpid());
  CHECK(std::count(tree.begin(), tree.end(), child) == 1);
  ::kill(child, SIGKILL);
  ::waitpid(child, nullptr, 0);
  CHECK(ReadProcSample(child).status().code() == Code::kNotFound);
  CHECK(ProcessTree(child).empty());
}

TEST_CASE("epoch markers: one JSON line per event, none without the variable", "[core]") {
  TempDir dir;
  std::string path = dir.path() + "/epochs";
  REQUIRE(WriteFileAtomic(path, "").ok());
  ::unsetenv(kWatchEpochsEnv);
  MarkEpochStart(0);  // no variable: nothing
  ::setenv(kWatchEpochsEnv, path.c_str(), 1);
  MarkEpochStart(3);
  EpochMark end;
  end.start = false;
  end.epoch = 3;
  end.samples = 100;
  end.data_wait_s = 1.5;
  MarkEpoch(end);
  ::unsetenv(kWatchEpochsEnv);
  auto text = ReadWholeFile(path);
  REQUIRE(text.ok());
  auto nl = text->find('\n');
  REQUIRE(nl != std::string::npos);
  auto a = nlohmann::json::parse(text->substr(0, nl));
  auto b = nlohmann::json::parse(text->substr(nl + 1));
  CHECK(a["event"] == "start");
  CHECK(a["epoch"] == 3);
  CHECK(a["pid"] == ::getpid());
  CHECK(b["event"] == "end");
  CHECK(b["samples"] == 100);
  CHECK(b["data_wait_s"] == 1.5);
  CHECK_FALSE(b.contains("bytes"));
}
