#include "src/system_probe.h"

#include <fmt/format.h>
#include <sys/statfs.h>
#include <sys/sysmacros.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <climits>
#include <cstdlib>
#include <ctime>
#include <fstream>
#include <sstream>
#include <thread>

#include "src/human.h"
#include "src/proc_stats.h"

namespace ds {

std::string FsTypeName(uint64_t m) {
  switch (m) {
    case 0xEF53:
      return "ext4";  // ext2/3/4 share the magic
    case 0x58465342:
      return "xfs";
    case 0x9123683E:
      return "btrfs";
    case 0x01021994:
      return "tmpfs";
    case 0x6969:
      return "nfs";
    case 0x0BD00BD0:
      return "lustre";
    case 0x47504653:
      return "gpfs";
    case 0x65735546:
      return "fuse";
    case 0x794C7630:
      return "overlayfs";
    case 0x2FC12FC1:
      return "zfs";
    case 0xFF534D42:
      return "cifs";
    case 0x73717368:
      return "squashfs";
    case 0x9FA0:
      return "proc";
    case 0x62656572:
      return "sysfs";
    default:
      return fmt::format("0x{:x}", m);
  }
}

// mountinfo escapes space, tab, newline and backslash as \ooo (octal).
static std::string Unescape(const std::string& s) {
  std::string out;
  for (size_t i = 0; i < s.size(); i++) {
    if (s[i] == '\\' && i + 3 < s.size()) {
      bool octal = true;
      int v = 0;
      for (size_t k = 1; k <= 3; k++) {
        octal = octal && s[i + k] >= '0' && s[i + k] <= '7';
        v = v * 8 + (s[i + k] - '0');
      }
      if (octal) {
        out += static_cast<char>(v);
        i += 3;
        continue;
      }
    }
    out += s[i];
  }
  return out;
}

std::vector<MountInfo> ParseMountInfo(const std::string& text) {
  std::vector<MountInfo> out;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    // id parent major:minor root mount_point mount_options [optional...] - fstype source super
    std::istringstream ls(line);
    std::vector<std::string> f;
    std::string w;
    while (ls >> w) f.push_back(w);
    size_t dash = 0;
    while (dash < f.size() && f[dash] != "-") dash++;
    if (f.size() < 6 || dash + 3 > f.size()) continue;
    MountInfo m;
    unsigned maj = 0, min = 0;
    if (std::sscanf(f[2].c_str(), "%u:%u", &maj, &min) == 2) {
      m.major = maj;
      m.minor = min;
    }
    m.mount_point = Unescape(f[4]);
    m.options = f[5] + "," + f[dash + 3];
    m.fstype = f[dash + 1];
    m.source = Unescape(f[dash + 2]);
    out.push_back(std::move(m));
  }
  return out;
}

static std::string ReadSmall(const std::string& path) {
  std::ifstream f(path);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

// The path's file system, mount and block device; the memory figures.
static void ProbeLocalPath(const std::string& path, SystemProbe* out);
static void ProbeMemory(SystemProbe* out);

SystemProbe ProbeSystem(const std::string& path) {
  SystemProbe p;
  p.path = path;
  if (struct utsname u; ::uname(&u) == 0) {
    p.host = u.nodename;
    p.kernel = u.release;
  }
  std::time_t now = std::time(nullptr);
  std::tm tm{};
  char when[32];
  if (::gmtime_r(&now, &tm) && std::strftime(when, sizeof when, "%Y-%m-%dT%H:%M:%SZ", &tm)) {
    p.date = when;
  }
  p.cores = std::thread::hardware_concurrency();
  if (size_t colon = path.find("://"); colon != std::string::npos && colon > 0) {
    p.fs_type = path.substr(0, colon);  // nfs://, s3://: reached by the tools, no local mount
    p.remote = true;
  } else {
    ProbeLocalPath(path, &p);
  }
  ProbeMemory(&p);
  return p;
}

void ProbeLocalPath(const std::string& path, SystemProbe* out) {
  SystemProbe& p = *out;
  struct statfs sf;
  if (::statfs(path.c_str(), &sf) == 0) {
    p.fs_type = FsTypeName(static_cast<uint64_t>(sf.f_type));
  } else {
    p.notes.push_back(fmt::format("statfs {}: {}", path, std::strerror(errno)));
  }
  char real[PATH_MAX];
  std::string abs = ::realpath(path.c_str(), real) ? real : path;
  const MountInfo* best = nullptr;
  auto mounts = ParseMountInfo(ReadSmall("/proc/self/mountinfo"));
  for (const auto& m : mounts) {
    bool inside =
        abs == m.mount_point || m.mount_point == "/" || abs.rfind(m.mount_point + "/", 0) == 0;
    if (inside && (!best || m.mount_point.size() >= best->mount_point.size())) best = &m;
  }
  if (best) {
    p.mount_point = best->mount_point;
    p.mount_fstype = best->fstype;
    p.mount_source = best->source;
    p.mount_options = best->options;
    // The block device: /sys/dev/block/MAJ:MIN -> .../block/vda[/vda1]; queue/ lives on the disk.
    std::string link = fmt::format("/sys/dev/block/{}:{}", best->major, best->minor);
    char target[PATH_MAX];
    ssize_t n = ::readlink(link.c_str(), target, sizeof target - 1);
    if (n > 0) {
      target[n] = 0;
      std::string t = target;
      std::string dev = t.substr(t.rfind('/') + 1);
      std::string queue = "/sys/class/block/" + dev + "/queue";
      if (::access(queue.c_str(), F_OK) != 0) {  // a partition: its parent disk has the queue
        std::string parent = t.substr(0, t.rfind('/'));
        dev = parent.substr(parent.rfind('/') + 1);
        queue = "/sys/class/block/" + dev + "/queue";
      }
      p.block_device = dev;
      std::string sched = ReadSmall(queue + "/scheduler");
      auto lb = sched.find('['), rb = sched.find(']');
      p.scheduler = lb != std::string::npos && rb > lb ? sched.substr(lb + 1, rb - lb - 1)
                                                       : sched.substr(0, sched.find('\n'));
      std::string ra = ReadSmall(queue + "/read_ahead_kb");
      if (!ra.empty()) p.read_ahead_kb = std::atoll(ra.c_str());
    }
  } else {
    p.notes.push_back("no mount found for " + abs);
  }
}

void ProbeMemory(SystemProbe* out) {
  SystemCounters c;
  ParseMeminfo(ReadSmall("/proc/meminfo"), &c);
  out->mem_total = c.mem_total;
  out->mem_available = c.mem_available;
  out->swap_total = c.swap_total;
  out->swap_free = c.swap_free;
  out->dirty = c.dirty;
  out->writeback = c.writeback;
}

nlohmann::json SystemProbe::ToJson() const {
  return {{"host", host},
          {"kernel", kernel},
          {"date", date},
          {"path", path},
          {"fs_type", fs_type},
          {"remote", remote},
          {"mount",
           {{"point", mount_point},
            {"fstype", mount_fstype},
            {"source", mount_source},
            {"options", mount_options}}},
          {"block_device",
           {{"name", block_device}, {"scheduler", scheduler}, {"read_ahead_kb", read_ahead_kb}}},
          {"memory",
           {{"total", mem_total},
            {"available", mem_available},
            {"swap_total", swap_total},
            {"swap_free", swap_free},
            {"dirty", dirty},
            {"writeback", writeback}}},
          {"cores", cores},
          {"notes", notes}};
}

std::string SystemProbe::ToText() const {
  std::string s = fmt::format("host {}, kernel {}, {}\n", host, kernel, date);
  if (remote) {
    s += fmt::format("path {}: {}, reached without a local mount\n", path, fs_type);
  } else {
    s += fmt::format("path {}: {} ({}) on {} mounted at {}\n", path, fs_type, mount_fstype,
                     mount_source, mount_point);
    s += fmt::format("  mount options: {}\n", mount_options);
  }
  if (!block_device.empty()) {
    s += fmt::format("  block device {}: scheduler {}, read_ahead_kb {}\n", block_device, scheduler,
                     read_ahead_kb);
  }
  s += fmt::format(
      "  memory: {} available of {}, swap {} free of {}, dirty {}, writeback {}; "
      "{} cores\n",
      FormatBytes(mem_available), FormatBytes(mem_total), FormatBytes(swap_free),
      FormatBytes(swap_total), FormatBytes(dirty), FormatBytes(writeback), cores);
  for (const auto& n : notes) s += "  note: " + n + "\n";
  return s;
}

}  // namespace ds
