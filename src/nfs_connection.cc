// NfsConnection (src/nfs_connection.h): a libnfs context driven by its own thread.
#include "src/nfs_connection.h"

#include <fmt/format.h>
#include <nfsc/libnfs.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <charconv>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <mutex>
#include <thread>
#include <unordered_map>

#include "src/fd.h"

namespace ds {

namespace {
// How often the loop wakes without traffic, so that libnfs's RPC timeouts are checked
// (libnfs.h: "calling nfs_service() with revents == 0 once every 100ms").
constexpr int kServiceTickMs = 100;
// The backstop beyond the RPC timeout after which a caller stops waiting.
constexpr int kBackstopMs = 2000;
}  // namespace

struct NfsConnection::Op {
  Start start;
  OnReply on_reply;
  std::mutex mu;
  std::condition_variable cv;
  bool done = false;       // under mu
  bool abandoned = false;  // under mu: the caller stopped waiting; the reply is dropped
  int result = 0;
  std::string error;
};

struct NfsConnection::Loop {
  nfs_context* nfs = nullptr;  // the loop thread's alone once it runs
  int timeout_ms = 0;
  pid_t pid = ::getpid();      // the process whose thread runs the loop
  bool caller_driven = false;  // Driver::kCaller: no thread; the owner's calls turn the loop
  OwnedFd wake;
  std::mutex mu;  // queue and stopping
  std::deque<std::shared_ptr<Op>> queue;
  std::deque<std::shared_ptr<Op>> started;  // the loop's: what one turn starts
  bool stopping = false;
  std::thread thread;
  // Loop thread only: every Op libnfs may still call back, kept alive until it does or the
  // context is destroyed. `broken` is set once nfs_service fails for good.
  std::unordered_map<Op*, std::shared_ptr<Op>> inflight;
  std::string broken;
  // Loop thread only: set once MOUNT replied. libnfs 4.0 frees a mount whose connect fails at
  // once and still calls its callback later (a double free): a context whose mount did not
  // start is never serviced again.
  bool mounted = false;

  static thread_local Loop* current;

  ~Loop() {
    if (thread.joinable()) {
      {
        std::lock_guard lock(mu);
        stopping = true;
      }
      Wake();
      thread.join();
    }
    if (nfs) Teardown();  // caller-driven, or the thread never started
  }

  void Wake() {
    uint64_t one = 1;
    [[maybe_unused]] ssize_t n = ::write(wake.get(), &one, sizeof(one));
  }

  static void Finish(Op& op, int err, nfs_context* nfs, void* data) {
    std::lock_guard lock(op.mu);
    if (op.done) return;
    if (!op.abandoned) {
      if (err >= 0) {
        op.on_reply(err, nfs, data);
      } else {
        // libnfs passes its error text as data, except for -EFAULT and -ENOMEM from a read or a
        // write (nfs_v3.c nfs3_pread_mcb, nfs3_pwrite_mcb), where data is the reply and the
        // text is the context's error.
        const bool data_is_text = err != -EFAULT && err != -ENOMEM;
        const char* text = data && data_is_text ? static_cast<const char*>(data) : nullptr;
        if (!text || !*text) text = nfs ? nfs_get_error(nfs) : nullptr;
        op.error = text && *text ? text : std::strerror(-err);
      }
    }
    op.result = err;
    op.done = true;
    op.cv.notify_all();
  }

  static void Fail(Op& op, int err, const std::string& why) {
    std::lock_guard lock(op.mu);
    if (op.done) return;
    op.result = err;
    op.error = why;
    op.done = true;
    op.cv.notify_all();
  }

  static void OnCallback(int err, nfs_context* nfs, void* data, void* private_data) {
    Loop* loop = current;
    if (!loop) return;
    auto it = loop->inflight.find(static_cast<Op*>(private_data));
    if (it == loop->inflight.end()) return;
    std::shared_ptr<Op> op = std::move(it->second);
    loop->inflight.erase(it);
    Finish(*op, err, nfs, data);
  }

  // One turn of the loop: waits up to wait_ms for the socket or a wake, starts what was queued
  // and services the socket. False once the connection is closing.
  bool Step(int wait_ms) {
    Loop* outer = current;
    current = this;
    bool go_on = StepHere(wait_ms);
    current = outer;
    return go_on;
  }

  bool StepHere(int wait_ms) {
    // A caller-driven loop is never woken: it polls the socket alone.
    pollfd fds[2] = {{caller_driven ? -1 : wake.get(), POLLIN, 0}, {-1, 0, 0}};
    nfds_t n = 1;
    if (broken.empty()) {
      fds[1] = {nfs_get_fd(nfs), static_cast<short>(nfs_which_events(nfs)), 0};
      n = 2;
    }
    if (::poll(fds, n, wait_ms) < 0 && errno != EINTR) return false;
    if (fds[0].revents & POLLIN) {
      uint64_t count;
      [[maybe_unused]] ssize_t r = ::read(wake.get(), &count, sizeof(count));
    }
    bool stop;
    {
      std::lock_guard lock(mu);
      if (!queue.empty()) started.swap(queue);  // `started` is empty here: no allocation
      stop = stopping;
    }
    if (stop) {
      for (auto& op : started) Fail(*op, -ECANCELED, "the connection is closing");
      return false;
    }
    for (auto& op : started) {
      if (!broken.empty()) {
        Fail(*op, -EIO, broken);
        continue;
      }
      inflight[op.get()] = op;
      int rc = op->start(nfs, &OnCallback, op.get());
      if (rc < 0) {
        inflight.erase(op.get());
        const char* text = nfs_get_error(nfs);
        std::string why = text && *text ? text : std::strerror(-rc);
        if (!mounted) broken = why;
        // libnfs's calls return -1, not an errno, when they cannot even be queued.
        Fail(*op, rc == -1 ? -EIO : rc, why);
      }
    }
    started.clear();
    if (broken.empty() && nfs_service(nfs, n == 2 ? fds[1].revents : 0) < 0) {
      const char* text = nfs_get_error(nfs);
      broken = fmt::format("the connection to the server failed: {}",
                           text && *text ? text : "nfs_service failed");
      for (auto& [ptr, op] : inflight) Fail(*op, -EIO, broken);
    }
    return true;
  }

  // Destroys the context; what is still in flight is called back (`current` points here) or
  // failed.
  void Teardown() {
    Loop* outer = current;
    current = this;
    nfs_destroy_context(nfs);
    nfs = nullptr;
    for (auto& [ptr, op] : inflight) Fail(*op, -ECANCELED, "the connection closed");
    inflight.clear();
    current = outer;
  }

  void Run() {
    while (Step(kServiceTickMs)) {
    }
    Teardown();
  }

  int Call(const Start& start, const OnReply& on_reply, std::string* error) {
    if (::getpid() != pid) {  // a forked child: the loop thread stayed in the parent
      if (error) {
        *error = fmt::format(
            "this NFS connection belongs to process {}; a forked process opens "
            "the URL again",
            pid);
      }
      return -EIO;
    }
    auto op = std::make_shared<Op>();
    op->start = start;
    op->on_reply = on_reply;
    {
      std::lock_guard lock(mu);
      queue.push_back(op);
    }
    auto limit = std::chrono::milliseconds(timeout_ms + kBackstopMs);
    if (caller_driven) {  // this thread is the loop: turn it until the reply
      const auto deadline = std::chrono::steady_clock::now() + limit;
      while (!op->done && std::chrono::steady_clock::now() < deadline && Step(kServiceTickMs)) {
      }
    } else {
      Wake();
    }
    std::unique_lock lock(op->mu);
    if (!op->cv.wait_for(lock, limit, [&] { return op->done; })) {
      op->abandoned = true;
      if (error) *error = fmt::format("no reply from the server within {} s", limit.count() / 1000);
      return -ETIMEDOUT;
    }
    if (op->result < 0 && error) *error = op->error;
    return op->result;
  }
};

thread_local NfsConnection::Loop* NfsConnection::Loop::current = nullptr;

Status NfsStatus(int rc, const std::string& what, const std::string& error) {
  int err = rc < 0 ? -rc : EIO;
  // libnfs reports an NFS error of a read or write as -EFAULT, with the NFS status in its text
  // ("NFS: Read failed with NFS3ERR_STALE(-116)"): the errno is the one in the text.
  if (err == EFAULT) {
    if (size_t at = error.find("NFS3ERR_"); at != std::string::npos) {
      if (size_t open = error.find("(-", at); open != std::string::npos) {
        int parsed = 0;
        const char* first = error.data() + open + 2;
        auto [end, ec] = std::from_chars(first, error.data() + error.size(), parsed);
        if (ec == std::errc() && end != first && parsed > 0) err = parsed;
      }
    }
  }
  Status base = Status::FromErrno(err, what);
  std::string message = base.message();
  if (err == ESTALE) {
    message = what +
              ": stale NFS file handle: the file was replaced or removed on the server "
              "while open, or the server withdrew its export; open it again";
  } else if (err == EINTR) {
    // libnfs cancels a call with -EINTR, not for a signal, when no reply came within its
    // timeout or its connection was lost and could not be re-established.
    return Status(Code::kIOError,
                  fmt::format("{}: no reply from the server within the timeout, or the "
                              "connection to it was lost{}; check that the server is up and "
                              "reachable",
                              what, error.empty() ? "" : " (" + error + ")"),
                  EIO);
  } else if (err == ETIMEDOUT || err == EIO || err == ECANCELED || err == EFAULT) {
    if (!error.empty()) message = fmt::format("{}: {}", what, error);
  }
  return Status(base.code(), message, err);
}

NfsConnection::NfsConnection(std::unique_ptr<Loop> loop) : loop_(std::move(loop)) {}
NfsConnection::~NfsConnection() = default;

namespace {
std::atomic<uint64_t> g_calls{0};
}  // namespace

uint64_t NfsConnection::calls_made() { return g_calls.load(std::memory_order_relaxed); }

int NfsConnection::Call(const Start& start, const OnReply& on_reply, std::string* error) {
  g_calls.fetch_add(1, std::memory_order_relaxed);
  return loop_->Call(start, on_reply, error);
}

Result<std::unique_ptr<NfsConnection>> NfsConnection::Mount(const NfsTarget& target,
                                                            Driver driver) {
  auto loop = std::make_unique<Loop>();
  loop->caller_driven = driver == Driver::kCaller;
  loop->timeout_ms = target.timeout_ms;
  int efd = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (efd < 0) return Status::FromErrno(errno, "eventfd for an NFS connection");
  loop->wake = OwnedFd(efd);
  loop->nfs = nfs_init_context();
  if (!loop->nfs) return Status(Code::kIOError, "cannot make an NFS context");
  if (!target.url_args.empty()) {
    // libnfs applies a URL's arguments to the context as it parses it.
    std::string url = fmt::format("nfs://{}/?{}", target.server, target.url_args);
    nfs_url* parsed = nfs_parse_url_incomplete(loop->nfs, url.c_str());
    if (!parsed) {
      return Status(Code::kInvalidArgument, fmt::format("{}: see docs/nfs.md for the URL's options",
                                                        nfs_get_error(loop->nfs)));
    }
    nfs_destroy_url(parsed);
  }
  nfs_set_timeout(loop->nfs, target.timeout_ms);
  // Listings must see what another writer just did (convert writes, verify lists).
  nfs_set_dircache(loop->nfs, 0);
  if (!loop->caller_driven) loop->thread = std::thread([l = loop.get()] { l->Run(); });

  std::unique_ptr<NfsConnection> conn(new NfsConnection(std::move(loop)));
  std::string error;
  int rc = conn->Call(
      [&](nfs_context* nfs, Callback cb, void* p) {
        return nfs_mount_async(nfs, target.server.c_str(), target.export_path.c_str(), cb, p);
      },
      [&](int, nfs_context* nfs, void*) {
        conn->loop_->mounted = true;
        conn->read_max_ = nfs_get_readmax(nfs);
        conn->write_max_ = nfs_get_writemax(nfs);
      },
      &error);
  if (rc < 0) {
    bool refused = error.find("MNT3ERR") != std::string::npos || rc == -EACCES || rc == -ENOENT ||
                   rc == -EPERM || rc == -ENOTDIR;
    if (refused) {
      return Status(Code::kNotFound,
                    fmt::format("the server refused to mount {}: {}", target.export_path, error),
                    -rc);
    }
    return Status(Code::kIOError,
                  fmt::format("cannot reach the NFS server {}: {}", target.server, error), -rc);
  }
  return conn;
}

nfs_context* NfsConnection::StartContext(std::string* error) {
  Loop& l = *loop_;
  if (!l.caller_driven || !l.broken.empty()) {
    if (error) *error = l.caller_driven ? l.broken : "not a caller-driven connection";
    return nullptr;
  }
  g_calls.fetch_add(1, std::memory_order_relaxed);
  return l.nfs;
}

Status NfsConnection::Service(int wait_ms) {
  Loop& l = *loop_;
  if (!l.caller_driven) return Status(Code::kInvalidArgument, "Service: not caller-driven");
  l.Step(wait_ms);
  if (!l.broken.empty()) return Status(Code::kIOError, l.broken, EIO);
  return Status::Ok();
}

}  // namespace ds
