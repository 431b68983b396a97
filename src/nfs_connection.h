// One NFSv3 connection through libnfs: a context, its mount of one export, and the thread that
// runs its event loop (docs/nfs.md). The nfs:// backend (src/storage_nfs.cc) keeps a few of
// these, as the kernel client's nconnect does.
//
// libnfs 4.0's contexts are not thread-safe, so every libnfs call on a context runs on the
// connection's own thread: Call() hands it a function that issues one *_async call, the thread
// starts it and services the socket, and the reply's callback completes the caller's wait. Any
// number of threads may Call() at once; their RPCs are in flight together on the one TCP
// connection (libnfs matches replies by XID), as fio's libnfs engine keeps its iodepth.
//
// Timeouts: every RPC fails with ETIMEDOUT once `timeout_ms` passes without a reply (libnfs's
// own timer, serviced every 100 ms). A Call also has a backstop of timeout + 2 s, so that no
// caller waits forever whatever the library does. libnfs reconnects a dropped TCP connection by
// itself and re-sends what was in flight (autoreconnect), so a server restart within the
// timeout costs a delay, not an error.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "src/status.h"

struct nfs_context;

namespace ds {

struct NfsTarget {
  std::string server;       // host or address
  std::string export_path;  // what MOUNT is asked for, e.g. "/export"
  std::string url_args;     // libnfs's URL arguments (version, nfsport, mountport, uid, ...)
  int timeout_ms = 10000;
};

class NfsConnection {
 public:
  // The callback type of every libnfs async call (libnfs.h's nfs_cb).
  using Callback = void (*)(int err, struct nfs_context* nfs, void* data, void* private_data);
  // Issues one libnfs async call on nfs with cb and private_data; returns what that call returns.
  using Start = std::function<int(struct nfs_context* nfs, Callback cb, void* private_data)>;
  // Runs on the connection's thread with the reply: err >= 0 is success (for a read, the bytes),
  // data the call's result, valid only during the call.
  using OnReply = std::function<void(int err, struct nfs_context* nfs, void* data)>;

  // Who turns the event loop. kOwnThread: the connection's thread, for any number of callers.
  // kCaller: no thread; the one thread that mounted it turns the loop inside Call and Service,
  // and issues its own async calls on StartContext() (fio's libnfs engine model: an IO engine of
  // one worker thread, with no hand-off between threads per RPC). A caller-driven connection is
  // used by that thread alone.
  enum class Driver { kOwnThread, kCaller };

  // Connects and mounts target.export_path. A server that cannot be reached is kIOError; a
  // refused MOUNT is kNotFound with the server's reason (err() is the errno). The caller names
  // the URL.
  static Result<std::unique_ptr<NfsConnection>> Mount(const NfsTarget& target,
                                                      Driver driver = Driver::kOwnThread);
  ~NfsConnection();
  NfsConnection(const NfsConnection&) = delete;
  NfsConnection& operator=(const NfsConnection&) = delete;

  // Runs start on the connection's thread and waits for its reply. Returns the reply's err
  // (>= 0 on success; a negative errno otherwise, with libnfs's text in *error).
  int Call(const Start& start, const OnReply& on_reply, std::string* error);

  // kCaller only: the context, for the caller to issue one async call on it now with its own
  // callback (counted as a call); the callback runs later inside Service (or Call), or when the
  // connection is destroyed (with an error). nullptr, with why in *error, once the connection
  // failed for good.
  nfs_context* StartContext(std::string* error);
  // kCaller only: waits up to wait_ms for the server and handles what arrived (the callbacks of
  // replies and of RPCs that timed out run here). kIOError once the connection failed for good.
  Status Service(int wait_ms);

  // Calls made by every connection of the process so far (src/rpc_bill.cc: a phase that made
  // calls but whose RPCs were not counted has no bill).
  static uint64_t calls_made();

  uint64_t read_max() const { return read_max_; }
  uint64_t write_max() const { return write_max_; }

 private:
  struct Op;
  struct Loop;
  explicit NfsConnection(std::unique_ptr<Loop> loop);
  std::unique_ptr<Loop> loop_;
  uint64_t read_max_ = 0;
  uint64_t write_max_ = 0;
};

// The Status of a failed call: "what: No such file or directory", with libnfs's text where it
// says more than errno does; an NFS status inside libnfs's -EFAULT text is taken as the errno;
// a stale handle and a lost connection are named with what to do.
Status NfsStatus(int rc, const std::string& what, const std::string& error);

}  // namespace ds
