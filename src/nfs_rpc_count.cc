// Counts and times every NFSv3 RPC that libnfs issues in this process: the libnfs half of the RPC
// bill (src/rpc_bill.h, docs/nfs.md).
//
// libnfs 4.0 has no statistics of its own. Its high-level calls (nfs_open2_async,
// nfs_pread_async, nfs_opendir_async, ...) issue their RPCs through the library's exported
// rpc_nfs3_*_async functions, and it calls them through its PLT (checked on Debian 12's
// libnfs.so.13: every call site is `call rpc_nfs3_..._async@plt`). A program that defines those
// symbols therefore receives every RPC first, as a malloc replacement receives every malloc.
// Each wrapper below notes the procedure, wraps the reply callback to time the call, and hands
// the call to libnfs's own function (dlsym RTLD_NEXT).
//
// If a libnfs build binds its calls directly (-Bsymbolic), the wrappers see nothing: the counts
// stay 0 while files are read, and dsbench says the bill is unavailable rather than print zeros
// (NfsRpcCountingWorks).
#include <dlfcn.h>
#include <nfsc/libnfs.h>
// After libnfs.h, which defines what these use (EXTERN).
#include <nfsc/libnfs-raw.h>
//
#include <nfsc/libnfs-raw-nfs.h>

#include <array>
#include <chrono>
#include <mutex>

#include "src/rpc_bill.h"

namespace ds {
namespace {

// RFC 1813's procedures, in its order.
enum Proc {
  kGetattr,
  kSetattr,
  kLookup,
  kAccess,
  kReadlink,
  kRead,
  kWrite,
  kCreate,
  kMkdir,
  kSymlink,
  kMknod,
  kRemove,
  kRmdir,
  kRename,
  kLink,
  kReaddir,
  kReaddirplus,
  kFsstat,
  kFsinfo,
  kPathconf,
  kCommit,
  kProcCount
};
constexpr std::array<const char*, kProcCount> kProcNames = {
    "GETATTR", "SETATTR", "LOOKUP",      "ACCESS", "READLINK", "READ",     "WRITE",
    "CREATE",  "MKDIR",   "SYMLINK",     "MKNOD",  "REMOVE",   "RMDIR",    "RENAME",
    "LINK",    "READDIR", "READDIRPLUS", "FSSTAT", "FSINFO",   "PATHCONF", "COMMIT"};

struct Counter {
  std::mutex mu;
  RpcOpStats stats;
};

std::array<Counter, kProcCount>& Counters() {
  static std::array<Counter, kProcCount> counters;
  return counters;
}

uint64_t NowNs() {
  return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                   std::chrono::steady_clock::now().time_since_epoch())
                                   .count());
}

// One RPC in flight: the caller's callback, kept until the reply.
struct Pending {
  Proc proc;
  uint64_t start_ns;
  rpc_cb cb;
  void* private_data;
};

void OnReply(struct rpc_context* rpc, int status, void* data, void* private_data) {
  auto* p = static_cast<Pending*>(private_data);
  uint64_t ns = NowNs() - p->start_ns;
  {
    Counter& c = Counters()[p->proc];
    std::lock_guard<std::mutex> lock(c.mu);
    if (status == RPC_STATUS_SUCCESS) {
      c.stats.latency.Add(ns);
    } else {
      c.stats.failed++;
    }
  }
  rpc_cb cb = p->cb;
  void* caller = p->private_data;
  delete p;
  cb(rpc, status, data, caller);
}

// Counts proc and issues it through libnfs's own function, with the reply timed.
template <typename Args>
int Issue(Proc proc, const char* symbol, struct rpc_context* rpc, rpc_cb cb, Args* args,
          void* private_data) {
  using Fn = int (*)(struct rpc_context*, rpc_cb, Args*, void*);
  // dlsym is thread-safe; a race here resolves the same address twice.
  static Fn real = reinterpret_cast<Fn>(dlsym(RTLD_NEXT, symbol));
  if (real == nullptr) return -1;
  auto* p = new Pending{proc, NowNs(), cb, private_data};
  {
    Counter& c = Counters()[proc];
    std::lock_guard<std::mutex> lock(c.mu);
    c.stats.count++;
  }
  int rc = real(rpc, OnReply, args, p);
  // libnfs does not call back for a call it could not queue.
  if (rc != 0) delete p;
  return rc;
}

}  // namespace

RpcBill LibnfsRpcSnapshot() {
  RpcBill bill;
  bill.source = "libnfs";
  bill.protocol = "NFSv3";
  for (int i = 0; i < kProcCount; i++) {
    Counter& c = Counters()[i];
    std::lock_guard<std::mutex> lock(c.mu);
    if (c.stats.count != 0) bill.ops[kProcNames[i]] = c.stats;
  }
  return bill;
}

}  // namespace ds

// The wrappers: libnfs's own signatures (libnfs-raw-nfs.h), one line each.
#define DS_COUNT_NFS3(name, proc, Args)                                                         \
  extern "C" int rpc_nfs3_##name##_async(struct rpc_context* rpc, rpc_cb cb, struct Args* args, \
                                         void* private_data) {                                  \
    return ds::Issue(ds::proc, "rpc_nfs3_" #name "_async", rpc, cb, args, private_data);        \
  }
DS_COUNT_NFS3(getattr, kGetattr, GETATTR3args)
DS_COUNT_NFS3(setattr, kSetattr, SETATTR3args)
DS_COUNT_NFS3(lookup, kLookup, LOOKUP3args)
DS_COUNT_NFS3(access, kAccess, ACCESS3args)
DS_COUNT_NFS3(readlink, kReadlink, READLINK3args)
DS_COUNT_NFS3(read, kRead, READ3args)
DS_COUNT_NFS3(write, kWrite, WRITE3args)
DS_COUNT_NFS3(create, kCreate, CREATE3args)
DS_COUNT_NFS3(mkdir, kMkdir, MKDIR3args)
DS_COUNT_NFS3(symlink, kSymlink, SYMLINK3args)
DS_COUNT_NFS3(mknod, kMknod, MKNOD3args)
DS_COUNT_NFS3(remove, kRemove, REMOVE3args)
DS_COUNT_NFS3(rmdir, kRmdir, RMDIR3args)
DS_COUNT_NFS3(rename, kRename, RENAME3args)
DS_COUNT_NFS3(link, kLink, LINK3args)
DS_COUNT_NFS3(readdir, kReaddir, READDIR3args)
DS_COUNT_NFS3(readdirplus, kReaddirplus, READDIRPLUS3args)
DS_COUNT_NFS3(fsstat, kFsstat, FSSTAT3args)
DS_COUNT_NFS3(fsinfo, kFsinfo, FSINFO3args)
DS_COUNT_NFS3(pathconf, kPathconf, PATHCONF3args)
DS_COUNT_NFS3(commit, kCommit, COMMIT3args)
#undef DS_COUNT_NFS3
