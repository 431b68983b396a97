#include "src/proc_stats.h"

#include <dirent.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <map>
#include <set>
#include <sstream>

#include "src/fd.h"

namespace ds {

namespace {

// "Key:   value kB" lines: the value of `key` (without the colon), times 1024 when `kb`.
bool KeyValue(std::string_view text, std::string_view key, uint64_t* out, bool kb = true) {
  size_t pos = 0;
  while (pos < text.size()) {
    size_t eol = text.find('\n', pos);
    if (eol == std::string_view::npos) eol = text.size();
    std::string_view line = text.substr(pos, eol - pos);
    pos = eol + 1;
    if (line.size() > key.size() && line.substr(0, key.size()) == key &&
        (line[key.size()] == ':' || line[key.size()] == ' ')) {
      std::string rest(line.substr(key.size() + 1));
      char* end = nullptr;
      unsigned long long v = std::strtoull(rest.c_str(), &end, 10);
      if (end == rest.c_str()) return false;
      *out = kb ? v * 1024 : v;
      return true;
    }
  }
  return false;
}

std::string ReadText(const std::string& path) {
  auto r = ReadProcText(path);
  return r.ok() ? *r : std::string();
}

}  // namespace

Result<std::string> ReadProcText(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return Status::FromErrno(errno, path);
  OwnedFd h(fd);
  std::string out;
  char buf[16384];
  while (true) {
    DS_ASSIGN_OR_RETURN(size_t n, ReadUpTo(fd, buf, sizeof buf, path));
    out.append(buf, n);
    if (n < sizeof buf) return out;
  }
}

Status ParseProcStat(std::string_view text, ProcSample* out) {
  size_t open = text.find('('), close = text.rfind(')');
  if (open == std::string_view::npos || close == std::string_view::npos || close < open) {
    return Status(Code::kCorruption, "/proc/PID/stat: no (comm) field");
  }
  out->pid = static_cast<pid_t>(std::atol(std::string(text.substr(0, open)).c_str()));
  out->comm = std::string(text.substr(open + 1, close - open - 1));
  // After comm: 3 state, 4 ppid, 5 pgrp, 6 session, 7 tty_nr, 8 tpgid, 9 flags, 10 minflt,
  // 11 cminflt, 12 majflt, 13 cmajflt, 14 utime, 15 stime (clock ticks).
  std::istringstream in(std::string(text.substr(close + 1)));
  std::vector<std::string> f;
  std::string w;
  while (f.size() < 13 && in >> w) f.push_back(w);
  if (f.size() < 13 || f[0].size() != 1) {
    return Status(Code::kCorruption, "/proc/PID/stat: fewer fields than proc(5) lists");
  }
  out->state = f[0][0];
  out->ppid = static_cast<pid_t>(std::atol(f[1].c_str()));
  out->majflt = std::strtoull(f[9].c_str(), nullptr, 10);
  static const double ticks = static_cast<double>(::sysconf(_SC_CLK_TCK));
  out->cpu_seconds = static_cast<double>(std::strtoull(f[11].c_str(), nullptr, 10) +
                                         std::strtoull(f[12].c_str(), nullptr, 10)) /
                     ticks;
  return Status::Ok();
}

void ParseProcStatus(std::string_view text, ProcSample* out) {
  KeyValue(text, "VmRSS", &out->rss);
  KeyValue(text, "VmPeak", &out->vm_peak);
  KeyValue(text, "VmHWM", &out->vm_hwm);
}

void ParseProcIo(std::string_view text, ProcSample* out) {
  bool r = KeyValue(text, "read_bytes", &out->read_bytes, false);
  bool w = KeyValue(text, "write_bytes", &out->write_bytes, false);
  out->io_ok = r && w;
}

uint64_t ParseSmapsRollupPss(std::string_view text) {
  uint64_t v = 0;
  KeyValue(text, "Pss", &v);
  return v;
}

Result<ProcSample> ReadProcSample(pid_t pid, bool with_pss, const std::string& proc) {
  std::string dir = fmt::format("{}/{}", proc, pid);
  auto stat = ReadProcText(dir + "/stat");
  if (!stat.ok()) {
    return Status(Code::kNotFound, fmt::format("process {}: no {}/stat (it has exited)", pid, dir));
  }
  ProcSample s;
  DS_RETURN_IF_ERROR(ParseProcStat(*stat, &s));
  ParseProcStatus(ReadText(dir + "/status"), &s);
  if (with_pss) s.pss = ParseSmapsRollupPss(ReadText(dir + "/smaps_rollup"));
  ParseProcIo(ReadText(dir + "/io"), &s);
  return s;
}

std::vector<pid_t> ProcessTree(pid_t root, const std::string& proc) {
  std::multimap<pid_t, pid_t> children;  // ppid -> pid
  bool found = false;
  if (DIR* d = ::opendir(proc.c_str())) {
    while (dirent* e = ::readdir(d)) {
      char* end = nullptr;
      long pid = std::strtol(e->d_name, &end, 10);
      if (*end || pid <= 0) continue;
      // The ppid is the 2nd field after the last ')'.
      std::string text = ReadText(fmt::format("{}/{}/stat", proc, pid));
      size_t close = text.rfind(')');
      if (close == std::string::npos) continue;
      std::istringstream in(text.substr(close + 1));
      std::string state;
      long ppid = 0;
      if (!(in >> state >> ppid)) continue;
      if (pid == root) found = true;
      children.emplace(static_cast<pid_t>(ppid), static_cast<pid_t>(pid));
    }
    ::closedir(d);
  }
  std::vector<pid_t> out;
  if (!found) return out;
  out.push_back(root);
  for (size_t i = 0; i < out.size(); i++) {  // breadth first; a pid is seen once
    auto [b, e] = children.equal_range(out[i]);
    for (auto it = b; it != e; ++it) out.push_back(it->second);
  }
  return out;
}

std::vector<HeldFile> OpenFiles(pid_t pid, const std::string& proc) {
  std::vector<HeldFile> files;
  std::set<std::string> seen;
  std::string dir = fmt::format("{}/{}/fd", proc, pid);
  if (DIR* d = ::opendir(dir.c_str())) {
    while (dirent* e = ::readdir(d)) {
      if (e->d_name[0] == '.') continue;
      char target[PATH_MAX];
      ssize_t n = ::readlinkat(::dirfd(d), e->d_name, target, sizeof target - 1);
      if (n <= 0 || target[0] != '/') continue;  // pipe:[..], socket:[..], anon_inode:..
      target[n] = 0;
      std::string t = target;
      if (t.rfind("/dev/", 0) == 0 || t.rfind("/proc/", 0) == 0 || t.rfind("/sys/", 0) == 0) {
        continue;
      }
      if (t.size() > 10 && t.compare(t.size() - 10, 10, " (deleted)") == 0) continue;
      // Regular files only: a FIFO or a device is not data (and opening a FIFO would block).
      struct stat st;
      if (::stat(t.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) continue;
      // Read-only descriptors only: a log or an output is not the data the job reads.
      std::string info = ReadText(fmt::format("{}/{}/fdinfo/{}", proc, pid, e->d_name));
      size_t flags = info.find("flags:");
      if (flags == std::string::npos ||
          (std::strtoul(info.c_str() + flags + 6, nullptr, 8) & O_ACCMODE) != O_RDONLY) {
        continue;
      }
      if (!seen.insert(t).second) continue;
      files.push_back({std::move(t), pid, std::atoi(e->d_name)});
    }
    ::closedir(d);
  }
  return files;
}

Result<PageResidency> ResidentPagesOf(const HeldFile& file) {
  int pidfd = static_cast<int>(::syscall(SYS_pidfd_open, file.pid, 0));
  if (pidfd < 0) return Status::FromErrno(errno, "pidfd_open", Code::kUnsupported);
  OwnedFd p(pidfd);
  int fd = static_cast<int>(::syscall(SYS_pidfd_getfd, pidfd, file.fd, 0));
  if (fd < 0) return Status::FromErrno(errno, "pidfd_getfd " + file.path, Code::kUnsupported);
  OwnedFd h(fd);
  struct stat st;
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    return Status(Code::kUnsupported, file.path + ": no longer a regular file");
  }
  return ResidentPages(fd, static_cast<uint64_t>(st.st_size), file.path);
}

Pressure ParsePressure(std::string_view text) {
  Pressure p;
  std::istringstream in{std::string(text)};
  std::string line;
  while (std::getline(in, line)) {
    double avg10 = 0;
    unsigned long long total = 0;
    char kind[8] = {0};
    // "some avg10=0.00 avg60=0.00 avg300=0.00 total=0"
    if (std::sscanf(line.c_str(), "%7s avg10=%lf avg60=%*f avg300=%*f total=%llu", kind, &avg10,
                    &total) != 3) {
      continue;
    }
    p.present = true;
    if (std::strcmp(kind, "some") == 0) {
      p.some_avg10 = avg10;
      p.some_total_us = total;
    } else if (std::strcmp(kind, "full") == 0) {
      p.full_avg10 = avg10;
      p.full_total_us = total;
    }
  }
  return p;
}

void ParseMeminfo(std::string_view text, SystemCounters* out) {
  KeyValue(text, "MemTotal", &out->mem_total);
  KeyValue(text, "MemAvailable", &out->mem_available);
  KeyValue(text, "SwapTotal", &out->swap_total);
  KeyValue(text, "SwapFree", &out->swap_free);
  KeyValue(text, "Dirty", &out->dirty);
  KeyValue(text, "Writeback", &out->writeback);
}

void ParseVmstat(std::string_view text, SystemCounters* out) {
  KeyValue(text, "pswpin", &out->pswpin, false);
  KeyValue(text, "pswpout", &out->pswpout, false);
}

SystemCounters ReadSystemCounters(const std::string& proc) {
  SystemCounters c;
  ParseMeminfo(ReadText(proc + "/meminfo"), &c);
  ParseVmstat(ReadText(proc + "/vmstat"), &c);
  c.cpu = ParsePressure(ReadText(proc + "/pressure/cpu"));
  c.io = ParsePressure(ReadText(proc + "/pressure/io"));
  c.memory = ParsePressure(ReadText(proc + "/pressure/memory"));
  return c;
}

nlohmann::json ProcSample::ToJson() const {
  nlohmann::json j = {{"pid", pid},
                      {"ppid", ppid},
                      {"comm", comm},
                      {"state", std::string(1, state)},
                      {"rss", rss},
                      {"vm_peak", vm_peak},
                      {"vm_hwm", vm_hwm},
                      {"majflt", majflt},
                      {"cpu_seconds", cpu_seconds}};
  if (pss) j["pss"] = pss;  // read only when asked (smaps_rollup)
  if (io_ok) {
    j["read_bytes"] = read_bytes;
    j["write_bytes"] = write_bytes;
  }
  return j;
}

nlohmann::json Pressure::ToJson() const {
  if (!present) return nullptr;
  return {{"some_avg10", some_avg10},
          {"full_avg10", full_avg10},
          {"some_total_us", some_total_us},
          {"full_total_us", full_total_us}};
}

nlohmann::json SystemCounters::ToJson() const {
  return {{"mem_total", mem_total},
          {"mem_available", mem_available},
          {"swap_total", swap_total},
          {"swap_free", swap_free},
          {"dirty", dirty},
          {"writeback", writeback},
          {"pswpin", pswpin},
          {"pswpout", pswpout},
          {"psi", {{"cpu", cpu.ToJson()}, {"io", io.ToJson()}, {"memory", memory.ToJson()}}}};
}

}  // namespace ds
