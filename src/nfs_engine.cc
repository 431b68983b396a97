// The "nfs" IO engine (src/nfs_engine.h).
#include "src/nfs_engine.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <nfsc/libnfs.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <deque>
#include <unordered_map>
#include <vector>

namespace ds {
namespace {

// How long Reap waits in one turn of the loop: libnfs checks its RPC timeouts when serviced
// (libnfs.h: every 100 ms).
constexpr int kServiceTickMs = 100;
// Beyond the RPC timeout, how long a request may go without a reply before it is failed here
// (the connection's own backstop, src/nfs_connection.cc).
constexpr int kBackstopMs = 2000;

class NfsEngine final : public IoEngine {
 public:
  NfsEngine(std::unique_ptr<NfsConnection> conn, unsigned depth, int timeout_ms,
            NfsEnginePaths paths)
      : conn_(std::move(conn)), depth_(depth), timeout_ms_(timeout_ms), paths_(std::move(paths)) {
    slots_.resize(depth_);
    for (unsigned i = 0; i < depth_; i++) free_.push_back(depth_ - 1 - i);
  }

  ~NfsEngine() override {
    // The handles OpenPath gave and nobody closed (a caller that keeps an engine with its open
    // files until its thread ends: LayoutReader::ReadBatch) go with it, or libnfs's handles
    // leak. NFSv3 has no CLOSE: with nothing in flight, a handle only read is freed locally.
    if (inflight_ == 0) {
      while (!files_.empty()) CloseFile(files_.begin()->first);
    }
    // Destroying the connection calls back what is in flight: the slots are still here, and
    // cleared first, so that no request of the caller is touched any more.
    for (Slot& slot : slots_) slot = {this, nullptr, 0, false};
    conn_.reset();
  }

  std::string_view name() const override { return "nfs"; }
  unsigned flags() const override { return kEngineRemote; }
  unsigned depth() const override { return depth_; }
  unsigned inflight() const override { return inflight_; }

  Status OpenFile(int) override {
    return Status(Code::kInvalidArgument,
                  "the nfs engine opens its files by path (OpenPath), not by a local fd");
  }

  Result<int> OpenPath(const std::string& path, bool write) override {
    DS_ASSIGN_OR_RETURN(std::string rel, paths_.rel(path));
    nfsfh* fh = nullptr;
    std::string error;
    const int flags = write ? O_RDWR : O_RDONLY;
    int rc =
        conn_->Call([&](nfs_context* nfs, NfsConnection::Callback cb,
                        void* p) { return nfs_open2_async(nfs, rel.c_str(), flags, 0, cb, p); },
                    [&](int, nfs_context*, void* data) { fh = static_cast<nfsfh*>(data); }, &error);
    if (rc < 0) return NfsStatus(rc, paths_.uri(path), error);
    const int handle = next_handle_++;
    files_[handle] = fh;
    return handle;
  }

  void CloseFile(int fd) override {
    auto it = files_.find(fd);
    if (it == files_.end()) return;
    nfsfh* fh = it->second;
    files_.erase(it);
    // READs and WRITEs still in flight on the handle (a run that failed midway) complete, or
    // fail as overdue, before libnfs frees it.
    auto busy = [&] {
      for (const Slot& slot : slots_) {
        if (slot.r && slot.r->fd == fd) return true;
      }
      return false;
    };
    while (busy() && conn_->Service(kServiceTickMs).ok()) FailOverdue();
    std::string error;
    conn_->Call([&](nfs_context* nfs, NfsConnection::Callback cb,
                    void* p) { return nfs_close_async(nfs, fh, cb, p); },
                [](int, nfs_context*, void*) {}, &error);
  }

  Status Queue(IoRequest* r) override {
    if (inflight_ >= depth_) {
      return Status(Code::kInvalidArgument, fmt::format("nfs engine: {} in flight", depth_));
    }
    if (free_.empty()) {  // every free slot is held by a request failed as overdue
      return Status(Code::kIOError,
                    "nfs engine: the server answers none of the requests in "
                    "flight; check that it is up and reachable",
                    EIO);
    }
    auto it = files_.find(r->fd);
    const unsigned slot = free_.back();
    free_.pop_back();
    slots_[slot] = {this, r, Now(), false};
    inflight_++;
    NoteQueued(inflight_);
    if (it == files_.end()) {
      Complete(slot, -EBADF);
      return Status::Ok();
    }
    nfsfh* fh = it->second;
    nfs_context* nfs = conn_->StartContext(nullptr);
    int rc = -EIO;
    if (nfs) {
      rc = r->op == IoRequest::Op::kRead
               ? nfs_pread_async(nfs, fh, r->offset, r->len, &OnReply, &slots_[slot])
               : nfs_pwrite_async(nfs, fh, r->offset, r->len, r->buf, &OnReply, &slots_[slot]);
      if (rc == -1) rc = -EIO;  // libnfs: not even queued
    }
    if (rc < 0) Complete(slot, rc);
    started_++;
    return Status::Ok();
  }

  // The RPCs went out in Queue (libnfs sends them when the loop turns next, in Reap).
  Result<unsigned> Submit() override {
    unsigned n = started_;
    started_ = 0;
    return n;
  }

  Result<size_t> Reap(size_t min, std::span<IoRequest*> out) override {
    started_ = 0;
    min = std::min<size_t>(min, inflight_);
    while (done_.size() < min) {
      if (Status s = conn_->Service(kServiceTickMs); !s.ok()) {
        FailInFlight(-EIO);
        break;
      }
      if (done_.size() < min) FailOverdue();
    }
    size_t n = std::min(out.size(), done_.size());
    for (size_t i = 0; i < n; i++) {
      out[i] = done_.front();
      done_.pop_front();
    }
    inflight_ -= static_cast<unsigned>(n);
    NoteReaped(n);
    return n;
  }

 private:
  struct Slot {
    NfsEngine* engine = nullptr;
    IoRequest* r = nullptr;  // nullptr: free, or completed
    int64_t started_ms = 0;
    bool abandoned = false;  // failed here while libnfs may still call it back
  };

  static int64_t Now() {
    return std::chrono::duration_cast<std::chrono::milliseconds>(
               std::chrono::steady_clock::now().time_since_epoch())
        .count();
  }

  Status RequestError(const IoRequest& r, std::string_view what) const override {
    return NfsStatus(static_cast<int>(r.result), std::string(what), last_error_);
  }

  static void OnReply(int err, nfs_context* nfs, void* data, void* private_data) {
    auto* slot = static_cast<Slot*>(private_data);
    NfsEngine* e = slot->engine;
    if (err < 0 && slot->r) {
      // libnfs's text: data, except for a READ's or WRITE's NFS error (-EFAULT), where data is
      // the reply and the text is the context's (src/nfs_connection.cc, Finish).
      const char* text =
          err != -EFAULT && err != -ENOMEM && data ? static_cast<const char*>(data) : nullptr;
      if ((!text || !*text) && nfs) text = nfs_get_error(nfs);
      e->last_error_ = text ? text : "";
    }
    if (!slot->r) {  // failed here as overdue: the late reply frees its slot
      if (slot->abandoned) {
        slot->abandoned = false;
        e->free_.push_back(static_cast<unsigned>(slot - e->slots_.data()));
      }
      return;
    }
    if (err > 0 && slot->r->op == IoRequest::Op::kRead) {
      std::memcpy(slot->r->buf, data, std::min<size_t>(static_cast<size_t>(err), slot->r->len));
    }
    e->Complete(static_cast<unsigned>(slot - e->slots_.data()), err);
  }

  void Complete(unsigned slot, ssize_t result) {
    IoRequest* r = slots_[slot].r;
    slots_[slot].r = nullptr;
    r->result = result > 0 ? std::min<ssize_t>(result, static_cast<ssize_t>(r->len)) : result;
    done_.push_back(r);
    // The slot is free for the next request only when libnfs can no longer call it back: an
    // overdue request's slot stays taken (see FailOverdue).
    if (!slots_[slot].abandoned) free_.push_back(slot);
  }

  void FailInFlight(ssize_t err) {
    for (unsigned i = 0; i < depth_; i++) {
      if (slots_[i].r) {
        slots_[i].abandoned = true;  // libnfs calls it back when the connection is destroyed
        Complete(i, err);
      }
    }
  }

  // A request with no reply long past the RPC timeout fails here, whatever libnfs does.
  void FailOverdue() {
    const int64_t limit = Now() - timeout_ms_ - kBackstopMs;
    for (unsigned i = 0; i < depth_; i++) {
      if (slots_[i].r && slots_[i].started_ms < limit) {
        slots_[i].abandoned = true;
        Complete(i, -ETIMEDOUT);
      }
    }
  }

  std::unique_ptr<NfsConnection> conn_;
  const unsigned depth_;
  const int timeout_ms_;
  NfsEnginePaths paths_;
  std::unordered_map<int, nfsfh*> files_;
  int next_handle_ = 1 << 20;  // far from a process's fds, so that a mix-up fails (-EBADF)
  std::vector<Slot> slots_;
  std::vector<unsigned> free_;
  std::deque<IoRequest*> done_;
  unsigned inflight_ = 0;
  unsigned started_ = 0;
  std::string last_error_;  // libnfs's text of the last request that failed
};

}  // namespace

Result<std::unique_ptr<IoEngine>> MakeNfsEngine(const NfsTarget& target,
                                                const EngineOptions& options,
                                                NfsEnginePaths paths) {
  DS_ASSIGN_OR_RETURN(auto conn, NfsConnection::Mount(target, NfsConnection::Driver::kCaller));
  return std::unique_ptr<IoEngine>(
      new NfsEngine(std::move(conn), options.depth, target.timeout_ms, std::move(paths)));
}

}  // namespace ds
