// Per-process and system counters from /proc, as `dsbench watch` samples them (docs/watch.md):
// what psrecord, iostat and `free` read, parsed from text so that each parser has a fixture test.
//
//   /proc/PID/stat          state, ppid, majflt, utime + stime (proc(5); the comm field may hold
//                           spaces and parentheses: the fields after it are found from the last
//                           ')')
//   /proc/PID/status        VmRSS, VmPeak, VmHWM (kB)
//   /proc/PID/smaps_rollup  Pss (kB): a forked DataLoader worker's shared pages counted once
//                           across the job, not once per worker. Costly: the kernel walks the
//                           process's page tables (5 ms for a process that imported torch, against
//                           0.04 ms for stat or status), so it is read only when asked
//   /proc/PID/io            read_bytes, write_bytes (what reached the storage layer); readable
//                           only by the process's owner or root: `io_ok` says whether it was read
//   /proc/pressure/{cpu,io,memory}  PSI (kernel Documentation/accounting/psi.rst): "some" and
//                           "full" avg10 (%) and total (us); absent on kernels without PSI
//   /proc/vmstat            pswpin, pswpout (pages swapped in/out since boot)
//
// Every reader returns kNotFound when the process has exited (its /proc directory is gone), so
// that a sampler can tell "exited" from "cannot read". Thread-safety: values and free functions.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "src/page_cache.h"
#include "src/status.h"

namespace ds {

struct ProcSample {
  pid_t pid = 0, ppid = 0;
  std::string comm;  // the executable's name, as /proc/PID/stat has it
  char state = '?';  // R, S, D (uninterruptible: waiting on IO), Z, T, ...
  uint64_t majflt = 0;
  double cpu_seconds = 0;                              // utime + stime
  uint64_t rss = 0, vm_peak = 0, vm_hwm = 0, pss = 0;  // bytes (pss 0 when unreadable)
  bool io_ok = false;
  uint64_t read_bytes = 0, write_bytes = 0;  // /proc/PID/io, when io_ok

  nlohmann::json ToJson() const;
};

// The whole text of a /proc or /sys file (their size reads as 0 or 4096: read to EOF).
// kNotFound when the file does not exist (a process that has exited).
Result<std::string> ReadProcText(const std::string& path);

// Parsers of the files' text (what a fixture test feeds them).
Status ParseProcStat(std::string_view text, ProcSample* out);  // kCorruption if malformed
void ParseProcStatus(std::string_view text, ProcSample* out);  // missing keys stay 0
void ParseProcIo(std::string_view text, ProcSample* out);      // sets io_ok when both found
uint64_t ParseSmapsRollupPss(std::string_view text);           // bytes; 0 when absent

// All of the above for one process (smaps_rollup only `with_pss`; pss stays 0 without).
// kNotFound: no such process (or it has exited).
Result<ProcSample> ReadProcSample(pid_t pid, bool with_pss = false,
                                  const std::string& proc = "/proc");

// `root` and every process below it (by ppid), root first; empty if root does not exist.
std::vector<pid_t> ProcessTree(pid_t root, const std::string& proc = "/proc");

// The regular files a process has open for reading only (readlink of /proc/PID/fd/*, the access
// mode of /proc/PID/fdinfo/*): absolute paths, deduped, none under /dev, /proc or /sys; empty
// when they cannot be read (another user's process without root). Its logs and outputs are not
// listed: they are open for writing. A FIFO or a device is not listed either.
struct HeldFile {
  std::string path;
  pid_t pid = 0;  // a process that holds it, and its descriptor there
  int fd = -1;
};
std::vector<HeldFile> OpenFiles(pid_t pid, const std::string& proc = "/proc");

// The page-cache residency of a file another process holds open, through a duplicate of that
// process's own descriptor (pidfd_getfd, Linux 5.6; root or ptrace rights), never a new open:
// on FUSE, an open without keep_cache drops the file's cached pages, and a probe must not change
// what it measures. kUnsupported where the duplicate is refused.
Result<PageResidency> ResidentPagesOf(const HeldFile& file);

struct Pressure {  // one resource's line pair of /proc/pressure/<resource>
  bool present = false;
  double some_avg10 = 0, full_avg10 = 0;  // % of the last 10 s some / all tasks were stalled
  uint64_t some_total_us = 0, full_total_us = 0;
  nlohmann::json ToJson() const;
};
Pressure ParsePressure(std::string_view text);

struct SystemCounters {
  uint64_t mem_total = 0, mem_available = 0, swap_total = 0, swap_free = 0, dirty = 0,
           writeback = 0;            // bytes, /proc/meminfo
  uint64_t pswpin = 0, pswpout = 0;  // pages, /proc/vmstat
  Pressure cpu, io, memory;
  nlohmann::json ToJson() const;
};
void ParseMeminfo(std::string_view text, SystemCounters* out);
void ParseVmstat(std::string_view text, SystemCounters* out);
SystemCounters ReadSystemCounters(const std::string& proc = "/proc");

}  // namespace ds
