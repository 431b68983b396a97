// The "s3" IO engine: ranged GETs on a curl multi handle (src/s3_engine.h).
#include "src/s3_engine.h"

#include <curl/curl.h>
#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <deque>
#include <map>
#include <thread>
#include <vector>

namespace ds {
namespace {

class S3Engine final : public IoEngine {
 public:
  S3Engine(std::shared_ptr<S3Client> client, unsigned depth, S3EnginePaths paths)
      : client_(std::move(client)),
        depth_(depth),
        paths_(std::move(paths)),
        multi_(curl_multi_init()) {
    slots_.resize(depth_);
    for (unsigned i = 0; i < depth_; i++) free_.push_back(depth_ - 1 - i);
  }

  ~S3Engine() override {
    for (Slot& slot : slots_) {
      if (slot.easy) {
        curl_multi_remove_handle(multi_, slot.easy);
        curl_easy_cleanup(slot.easy);
      }
      if (slot.headers) curl_slist_free_all(slot.headers);
    }
    for (CURL* easy : idle_) curl_easy_cleanup(easy);
    curl_multi_cleanup(multi_);
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
    Start(i);
    started_++;
    return Status::Ok();
  }

  Result<unsigned> Submit() override {
    unsigned n = started_;
    started_ = 0;
    int running = 0;
    curl_multi_perform(multi_, &running);  // the requests go out now
    return n;
  }

  Result<size_t> Reap(size_t min, std::span<IoRequest*> out) override {
    started_ = 0;
    min = std::min<size_t>(min, inflight_);
    for (;;) {
      int running = 0;
      curl_multi_perform(multi_, &running);
      Drain();
      if (done_.size() >= min) break;
      curl_multi_poll(multi_, nullptr, 0, 100, nullptr);
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
    CURL* easy = nullptr;
    curl_slist* headers = nullptr;
    std::unique_ptr<S3Request> request;
    S3Response response;
    S3Client::Transfer transfer;
    std::string what;
    char errbuf[CURL_ERROR_SIZE] = {0};
    int attempt = 0;
  };

  void Start(unsigned i) {
    Slot& slot = slots_[i];
    if (!slot.easy) {
      if (idle_.empty()) {
        slot.easy = curl_easy_init();
      } else {
        slot.easy = idle_.back();
        idle_.pop_back();
      }
    }
    curl_easy_reset(slot.easy);
    slot.response = S3Response{};
    slot.transfer = S3Client::Transfer{slot.request.get(), &slot.response};
    if (slot.headers) curl_slist_free_all(slot.headers);
    slot.headers = client_->Prepare(slot.easy, &slot.transfer);
    slot.errbuf[0] = '\0';
    curl_easy_setopt(slot.easy, CURLOPT_ERRORBUFFER, slot.errbuf);
    curl_easy_setopt(slot.easy, CURLOPT_PRIVATE,
                     reinterpret_cast<void*>(static_cast<uintptr_t>(i)));
    curl_multi_add_handle(multi_, slot.easy);
  }

  // Takes in what curl finished: completes it, or sends it again.
  void Drain() {
    int left = 0;
    while (CURLMsg* msg = curl_multi_info_read(multi_, &left)) {
      if (msg->msg != CURLMSG_DONE) continue;
      void* p = nullptr;
      curl_easy_getinfo(msg->easy_handle, CURLINFO_PRIVATE, &p);
      const unsigned i = static_cast<unsigned>(reinterpret_cast<uintptr_t>(p));
      Slot& slot = slots_[i];
      const CURLcode rc = msg->data.result;
      curl_multi_remove_handle(multi_, slot.easy);
      const bool answered = rc == CURLE_OK;
      const bool whole = answered && slot.response.status / 100 == 2 &&
                         slot.response.sink_bytes == slot.request->sink_size;
      client_->Count(*slot.request, slot.response, slot.attempt > 0);
      if (whole) {
        Complete(i, static_cast<ssize_t>(slot.request->sink_size));
        continue;
      }
      const bool again =
          !answered || slot.response.status / 100 == 2 || S3Client::Retryable(slot.response);
      if (again && slot.attempt < client_->config().retries) {
        std::this_thread::sleep_for(std::chrono::milliseconds(50L << std::min(slot.attempt, 6)));
        slot.attempt++;
        Start(i);
        continue;
      }
      Status error;
      if (!answered) {
        error = Status(
            Code::kIOError,
            fmt::format("{}: cannot reach {} ({}) after {} tries: check "
                        "AWS_ENDPOINT_URL and that the server is up",
                        slot.what, client_->config().endpoint,
                        slot.errbuf[0] ? slot.errbuf : curl_easy_strerror(rc), slot.attempt + 1));
      } else if (slot.response.status / 100 == 2) {
        error = Status(Code::kIOError, fmt::format("{}: {} bytes came of {} asked, {} times",
                                                   slot.what, slot.response.sink_bytes,
                                                   slot.request->sink_size, slot.attempt + 1));
      } else {
        error = client_->Fail(slot.response, slot.what);
      }
      const ssize_t result = slot.response.status == 412 ? -ESTALE : -EIO;
      errors_[slot.r] = Status(error.code(), error.message(), -result);
      Complete(i, result);
    }
  }

  void Complete(unsigned i, ssize_t result) {
    Slot& slot = slots_[i];
    slot.r->result = result;
    done_.push_back(slot.r);
    slot.r = nullptr;
    if (slot.easy) {
      idle_.push_back(slot.easy);
      slot.easy = nullptr;
    }
    if (slot.headers) {
      curl_slist_free_all(slot.headers);
      slot.headers = nullptr;
    }
    slot.request.reset();
    free_.push_back(i);
  }

  std::shared_ptr<S3Client> client_;
  unsigned depth_;
  S3EnginePaths paths_;
  CURLM* multi_;
  std::vector<Slot> slots_;
  std::vector<unsigned> free_;
  std::vector<CURL*> idle_;
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
