// The RPC bill: what a remote file system's protocol did on the wire during a phase, per
// operation type (LOOKUP, GETATTR, ACCESS, READ, ...): how many, how many failed, and their
// latency (docs/nfs.md, "Reading the RPC bill"). dsbench puts it beside every result read from
// NFS, per sample and per GiB, so that layouts can be compared by what they cost the server.
//
// Two sources, one shape:
//   - dspack's own NFS client (nfs://, libnfs): every NFSv3 RPC the process issues is counted
//     and timed from its call to its reply (src/nfs_rpc_count.cc). The counters are the
//     process's, not one storage's.
//   - the kernel's NFS client (a path on an NFS mount): the per-op counters of
//     /proc/self/mountstats, read before and after, as nfsiostat reads them. The kernel keeps
//     sums, not histograms: a kernel bill has mean latencies only.
// RpcBillProbe picks the one that applies to a storage and a path, so that callers name neither.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <nlohmann/json_fwd.hpp>
#include <optional>
#include <string>
#include <string_view>

#include "src/histogram.h"
#include "src/storage.h"

namespace ds {

struct RpcOpStats {
  uint64_t count = 0;        // RPCs issued (the kernel: ops completed)
  uint64_t failed = 0;       // with no reply: timed out, cancelled (the kernel: major timeouts)
  LatencyHistogram latency;  // call to reply, ns (libnfs only)
  // The kernel's cumulative times in ms over `count` ops (mountstats; 0 for libnfs).
  double rtt_ms_sum = 0, execute_ms_sum = 0;
  uint64_t bytes_sent = 0, bytes_received = 0;  // kernel only
  uint64_t retransmits = 0;  // kernel only: transmissions beyond the first, summed over ops

  void Merge(const RpcOpStats& other);
  // Mean call-to-reply latency in ms: the histogram's where it has one, else the kernel's
  // execute time (queue + RTT), as nfsiostat's "avg exe".
  double mean_ms() const;
};

struct RpcBill {
  std::string source;                     // "libnfs" or "kernel"
  std::string protocol;                   // "NFSv3", "NFSv4", ...
  std::map<std::string, RpcOpStats> ops;  // by procedure name, upper case as in RFC 1813
  uint64_t total() const;
  void Merge(const RpcBill& other);
};

// "2.00 LOOKUP + 1.00 GETATTR + 1.00 ACCESS + 1.00 READ per sample", the largest first (counts
// of RPCs when samples is 0); "no RPCs" when empty. `unit` names what samples counts ("file":
// "... per file").
std::string FormatRpcBill(const RpcBill& bill, uint64_t samples, std::string_view unit = "sample");
// {"source", "protocol", "total", "per_sample", "per_gib", "ops": {NAME: {"count", "failed",
// "per_sample", "per_gib", "mean_ms", "lat_ns": {"p50", "p90", "p99", "p99.9", "max"} | null}}}.
// per_sample / per_gib are null when samples / bytes are 0; with another `unit` the per_sample
// keys are "per_" + unit.
nlohmann::json RpcBillJson(const RpcBill& bill, uint64_t samples, uint64_t bytes,
                           std::string_view unit = "sample");

// ---- dspack's own NFS client: the process's counters (src/nfs_rpc_count.cc)

// What the process's NFS RPCs have cost since it started. Thread-safe.
RpcBill LibnfsRpcSnapshot();
// The difference after - before (counts and sums; the latency histogram is the later one's
// buckets minus the earlier's, which is exact for counts and percentiles).
RpcBill RpcBillDelta(const RpcBill& after, const RpcBill& before);

// ---- the kernel's NFS client

// The NFS mounts of a mountstats text (/proc/self/mountstats), by mount point: each with its
// per-op counters as an RpcBill (source "kernel"; ops with a zero count left out, so a mount
// with nothing counted has an empty bill). Mounts of other file systems are left out; lines it
// does not know are skipped.
std::map<std::string, RpcBill> ParseMountstats(const std::string& text);

// ---- the probe a benchmark phase uses

// Measures the RPC bill of a phase that reads `path` through `storage`: libnfs's counters for
// an nfs:// storage, the kernel mount's for a local path on an NFS mount, nothing otherwise.
class RpcBillProbe {
 public:
  // An inactive probe (Stop() gives nullopt) when neither applies.
  static RpcBillProbe For(const Storage& storage, const std::string& path);
  bool active() const { return kind_ != Kind::kNone; }
  void Start();
  // The bill since Start(); nullopt for an inactive probe or when the counters cannot be read.
  std::optional<RpcBill> Stop() const;

 private:
  enum class Kind { kNone, kLibnfs, kKernel };
  Kind kind_ = Kind::kNone;
  std::string mount_point_;  // kKernel
  RpcBill before_;
  uint64_t calls_before_ = 0;  // kLibnfs: NfsConnection::calls_made() at Start
};

}  // namespace ds
