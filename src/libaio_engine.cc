// The libaio engine (fio's "libaio"): Linux native AIO through libaio (io_setup, io_submit,
// io_getevents). The only file that includes libaio.h. As with fio, it is asynchronous only for
// O_DIRECT; buffered IO completes inside io_submit.
#include <libaio.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <vector>

#include "src/io_engine.h"

namespace ds::internal {
namespace {

class LibaioEngine : public IoEngine {
 public:
  explicit LibaioEngine(unsigned depth) : depth_(depth), iocbs_(depth), events_(depth) {
    for (auto& c : iocbs_) free_.push_back(&c);
  }
  // Only a context io_setup created is destroyed (a failed setup leaves ctx_ 0).
  ~LibaioEngine() override {
    if (ctx_ready_) io_destroy(ctx_);
  }

  Status Init() {
    int rc = io_setup(static_cast<int>(depth_), &ctx_);
    if (rc < 0) {
      if (rc == -EAGAIN) {
        return Status(Code::kInvalidArgument,
                      "libaio refuses a queue depth of " + std::to_string(depth_) +
                          " (over fs.aio-max-nr); lower `iodepth`",
                      -rc);
      }
      return Status(Code::kUnsupported, std::string("libaio unavailable: ") + std::strerror(-rc),
                    -rc);
    }
    ctx_ready_ = true;
    return Status::Ok();
  }

  std::string_view name() const override { return "libaio"; }
  unsigned flags() const override { return 0; }
  unsigned depth() const override { return depth_; }
  unsigned inflight() const override { return inflight_; }

  Status Queue(IoRequest* r) override {
    if (inflight_ >= depth_ || free_.empty()) {
      return Status(Code::kInvalidArgument, "libaio: queue full");
    }
    iocb* cb = free_.back();
    free_.pop_back();
    if (r->op == IoRequest::Op::kRead) {
      io_prep_pread(cb, r->fd, r->buf, r->len, static_cast<long long>(r->offset));
    } else {
      io_prep_pwrite(cb, r->fd, r->buf, r->len, static_cast<long long>(r->offset));
    }
    cb->data = r;
    pending_.push_back(cb);
    inflight_++;
    NoteQueued(inflight_);
    return Status::Ok();
  }

  Result<unsigned> Submit() override {
    unsigned total = 0;
    while (!pending_.empty()) {
      int rc = io_submit(ctx_, static_cast<long>(pending_.size()), pending_.data());
      if (rc == -EINTR || rc == -EAGAIN) continue;
      if (rc < 0) return Status::FromErrno(-rc, "io_submit");
      pending_.erase(pending_.begin(), pending_.begin() + rc);
      total += static_cast<unsigned>(rc);
    }
    return total;
  }

  Result<size_t> Reap(size_t min, std::span<IoRequest*> out) override {
    DS_RETURN_IF_ERROR(Submit().status());
    size_t n = 0;
    while (n < out.size()) {
      long want = static_cast<long>(std::min(out.size() - n, events_.size()));
      long need = n >= min ? 0 : static_cast<long>(min - n);
      int got = io_getevents(ctx_, need, want, events_.data(), nullptr);
      if (got == -EINTR) continue;
      if (got < 0) return Status::FromErrno(-got, "io_getevents");
      for (int k = 0; k < got; k++) {
        auto* cb = events_[k].obj;
        auto* r = static_cast<IoRequest*>(cb->data);
        // res is the byte count or -errno (as a long in an unsigned field).
        r->result = static_cast<ssize_t>(static_cast<long>(events_[k].res));
        out[n++] = r;
        free_.push_back(cb);
      }
      inflight_ -= static_cast<unsigned>(got);
      NoteReaped(static_cast<size_t>(got));
      if (got == 0 || n >= min) break;
    }
    return n;
  }

 private:
  unsigned depth_;
  unsigned inflight_ = 0;
  io_context_t ctx_ = nullptr;
  bool ctx_ready_ = false;
  std::vector<iocb> iocbs_;
  std::vector<iocb*> free_, pending_;
  std::vector<io_event> events_;
};

}  // namespace

Result<std::unique_ptr<IoEngine>> MakeLibaioEngine(const EngineOptions& o) {
  auto e = std::make_unique<LibaioEngine>(o.depth);
  DS_RETURN_IF_ERROR(e->Init());
  return std::unique_ptr<IoEngine>(std::move(e));
}

}  // namespace ds::internal
