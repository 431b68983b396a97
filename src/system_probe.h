// System probe: the context that explains a storage result (docs: dsbench issue), printed at the
// start of every benchmark run and stored in its JSON. Reads statfs, /proc/self/mountinfo,
// /sys/block/<dev>/queue, /proc/meminfo and the CPU count; never fails as a whole: a field it
// cannot read stays empty and `notes` says why.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace ds {

struct SystemProbe {
  std::string host;    // uname's nodename
  std::string kernel;  // uname's release ("6.1.0-27-amd64")
  std::string date;    // when probed, UTC, ISO 8601 ("2026-12-02T12:30:00Z")
  std::string path;
  std::string fs_type;  // from statfs magic: ext4, xfs, btrfs, tmpfs, nfs, lustre, gpfs, fuse...
  // path is a URL (nfs://, s3://): fs_type is its scheme; no mount or block device is probed.
  bool remote = false;
  std::string mount_point;    // from mountinfo: the longest mount point containing path
  std::string mount_source;   // device or server:/export
  std::string mount_fstype;   // mountinfo's type (e.g. "fuse.dsbench-slowfs", "nfs4")
  std::string mount_options;  // per-mount + super options (rsize=, wsize=, actimeo=, ...)
  std::string block_device;   // e.g. "vda" (empty for network and virtual file systems)
  std::string scheduler;      // /sys/block/<dev>/queue/scheduler, the active one
  int64_t read_ahead_kb = -1;
  uint64_t mem_total = 0, mem_available = 0, swap_total = 0, swap_free = 0, dirty = 0,
           writeback = 0;  // bytes, from /proc/meminfo
  unsigned cores = 0;
  std::vector<std::string> notes;

  nlohmann::json ToJson() const;
  std::string ToText() const;  // a few human lines
};

SystemProbe ProbeSystem(const std::string& path);

// Name of a statfs f_type magic ("ext4", "nfs", ...) or "0x<hex>".
std::string FsTypeName(uint64_t magic);

// One line of /proc/self/mountinfo, parsed (escapes like \040 decoded).
struct MountInfo {
  std::string mount_point, fstype, source, options;
  unsigned major = 0, minor = 0;
};
std::vector<MountInfo> ParseMountInfo(const std::string& text);

}  // namespace ds
