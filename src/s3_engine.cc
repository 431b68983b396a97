// The "s3" IO engine: ranged GETs on a curl multi handle (src/s3_engine.h).
#include "src/s3_engine.h"

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <deque>
#include <map>
#include <vector>

#include "src/s3_multi.h"

namespace ds {
namespace {

class S3Engine final : public IoEngine {
 public:
  S3Engine(std::shared_ptr<S3Client> client, unsigned depth, S3EnginePaths paths)
      : client_(std::move(client)), depth_(depth), paths_(std::move(paths)), multi_(client_) {
    slots_.resize(depth_);
    for (unsigned i = 0; i < depth_; i++) free_.push_back(depth_ - 1 - i);
  }

  std::string_view name() const override { return "s3"; }
  unsigned flags() const override { return kEngineRemote; }
  unsigned depth() const override { return depth_; }
  unsigned inflight() const override { return inflight_; }

  Status OpenFile(int) override {
    return Status(Code::kInvalidArgument,
                  "the s3 engine opens its objects by path (OpenPath), not by a local fd");
  }

  Result<int> OpenPath(const std::string& path, bool write) override {
    std::string uri = paths_.uri(path);
    if (write) {
      return Status(Code::kUnsupported,
                    fmt::format("{}: the s3 engine reads; objects are written whole", uri));
    }
    S3Request head("HEAD", paths_.key(path));
    DS_ASSIGN_OR_RETURN(S3Response r, client_->Perform(head, uri));
    if (r.status / 100 != 2) return client_->Fail(r, uri);
    File f{head.key, uri, std::strtoull(r.headers["content-length"].c_str(), nullptr, 10),
           r.headers["etag"]};
    const int handle = next_handle_++;
    files_[handle] = std::move(f);
    return handle;
  }

  void CloseFile(int fd) override { files_.erase(fd); }

  Status Queue(IoRequest* r) override {
    if (inflight_ >= depth_) {
      return Status(Code::kInvalidArgument, fmt::format("s3 engine: {} in flight", depth_));
    }
    errors_.erase(r);
    const unsigned i = free_.back();
    free_.pop_back();
    Slot& slot = slots_[i];
    slot = Slot{};
    slot.r = r;
    inflight_++;
    NoteQueued(inflight_);
    auto it = files_.find(r->fd);
    if (it == files_.end() || r->op != IoRequest::Op::kRead) {
      Complete(i, it == files_.end() ? -EBADF : -EOPNOTSUPP);
      return Status::Ok();
    }
    const File& f = it->second;
    const uint64_t len = r->offset >= f.size ? 0 : std::min<uint64_t>(r->len, f.size - r->offset);
    if (len == 0) {
      Complete(i, 0);
      return Status::Ok();
    }
    slot.request = std::make_unique<S3Request>("GET", f.key);
    slot.request->headers.push_back(
        fmt::format("Range: bytes={}-{}", r->offset, r->offset + len - 1));
    if (!f.etag.empty()) slot.request->headers.push_back("If-Match: " + f.etag);
    slot.request->sink = static_cast<char*>(r->buf);
    slot.request->sink_size = len;
    slot.what = fmt::format("{}: bytes {}-{}", f.uri, r->offset, r->offset + len - 1);
    multi_.Start(slot.request.get(), &slot.response, i);
    started_++;
    return Status::Ok();
  }

  Result<unsigned> Submit() override {
    unsigned n = started_;
    started_ = 0;
    multi_.Wait(0, 0, &finished_);  // the requests go out now
    Take();
    return n;
  }

  Result<size_t> Reap(size_t min, std::span<IoRequest*> out) override {
    started_ = 0;
    min = std::min<size_t>(min, inflight_);
    if (done_.size() < min) multi_.Wait(min - done_.size(), -1, &finished_);
    Take();
    size_t n = std::min(out.size(), done_.size());
    for (size_t i = 0; i < n; i++) {
      out[i] = done_.front();
      done_.pop_front();
    }
    inflight_ -= static_cast<unsigned>(n);
    NoteReaped(n);
    return n;
  }

  Status RequestError(const IoRequest& r, std::string_view what) const override {
    auto it = errors_.find(&r);
    if (it == errors_.end()) return ErrnoStatus(r.result, what);
    return Status(it->second.code(), fmt::format("{}: {}", what, it->second.message()),
                  it->second.err());
  }

 private:
  struct File {
    std::string key, uri;
    uint64_t size = 0;
    std::string etag;
  };
  struct Slot {
    IoRequest* r = nullptr;
    std::unique_ptr<S3Request> request;
    S3Response response;
    std::string what;
  };

  // Completes what the multi handle finished, with the one-line reason of a failure.
  void Take() {
    for (const S3Multi::Done& d : finished_) {
      const unsigned i = static_cast<unsigned>(d.tag);
      Slot& slot = slots_[i];
      if (d.whole) {
        Complete(i, static_cast<ssize_t>(slot.request->sink_size));
        continue;
      }
      Status error;
      if (d.overflow) {
        error =
            Status(Code::kIOError, fmt::format("{}: the server sent more than the {} bytes asked",
                                               slot.what, slot.request->sink_size));
      } else if (!d.answered) {
        error = Status(Code::kIOError, fmt::format("{}: cannot reach {} ({}) after {} tries: check "
                                                   "AWS_ENDPOINT_URL and that the server is up",
                                                   slot.what, client_->config().endpoint,
                                                   d.transport_error, d.attempts));
      } else if (slot.response.status / 100 == 2) {
        error = Status(Code::kIOError,
                       fmt::format("{}: {} bytes came of {} asked, {} times", slot.what,
                                   slot.response.sink_bytes, slot.request->sink_size, d.attempts));
      } else {
        error = client_->Fail(slot.response, slot.what);
      }
      const ssize_t result = slot.response.status == 412 ? -ESTALE : -EIO;
      errors_[slot.r] = Status(error.code(), error.message(), -result);
      Complete(i, result);
    }
    finished_.clear();
  }

  void Complete(unsigned i, ssize_t result) {
    Slot& slot = slots_[i];
    slot.r->result = result;
    done_.push_back(slot.r);
    slot.r = nullptr;
    slot.request.reset();
    free_.push_back(i);
  }

  std::shared_ptr<S3Client> client_;
  unsigned depth_;
  S3EnginePaths paths_;
  S3Multi multi_;
  std::vector<Slot> slots_;
  std::vector<unsigned> free_;
  std::vector<S3Multi::Done> finished_;
  std::deque<IoRequest*> done_;
  std::map<int, File> files_;
  std::map<const IoRequest*, Status> errors_;
  int next_handle_ = 1;
  unsigned inflight_ = 0;
  unsigned started_ = 0;
};

}  // namespace

Result<std::unique_ptr<IoEngine>> MakeS3Engine(std::shared_ptr<S3Client> client,
                                               const EngineOptions& options, S3EnginePaths paths) {
  const unsigned depth = std::max(1u, options.depth);
  return std::unique_ptr<IoEngine>(new S3Engine(std::move(client), depth, std::move(paths)));
}

}  // namespace ds
