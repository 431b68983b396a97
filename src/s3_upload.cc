// Uploads of the s3:// backend (src/s3_upload.h).
#include "src/s3_upload.h"

#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <deque>
#include <future>
#include <memory>
#include <system_error>
#include <utility>
#include <vector>

#include "src/md5.h"

namespace ds {
namespace {

std::string Base64(const uint8_t* p, size_t n) {
  static const char* kAlphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  for (size_t i = 0; i < n; i += 3) {
    uint32_t v = p[i] << 16;
    if (i + 1 < n) v |= p[i + 1] << 8;
    if (i + 2 < n) v |= p[i + 2];
    out += kAlphabet[(v >> 18) & 63];
    out += kAlphabet[(v >> 12) & 63];
    out += i + 1 < n ? kAlphabet[(v >> 6) & 63] : '=';
    out += i + 2 < n ? kAlphabet[v & 63] : '=';
  }
  return out;
}

std::string ContentMd5(std::string_view body) {
  Md5 md5;
  md5.Update(body);
  auto d = md5.Digest();
  return "Content-MD5: " + Base64(d.data(), d.size());
}

}  // namespace

std::string ContentMd5Header(std::string_view body) { return ContentMd5(body); }

namespace {

// One object's upload: a PUT, or a multipart upload once more than a part is given. Up to
// kS3PartsInFlight parts go up at once, each on a thread of its own with its own 8 MiB buffer
// (memory: that many parts a writer), while the writer fills the next: a part is a round trip
// and a transfer, and one at a time the writer waited for each. The parts' ETags are collected
// in order; the first failure fails the upload, and Abort waits for every part before the
// DELETE that drops them. A failed upload stays failed: every later Add and Finish returns its
// first error (a part lost would otherwise shift the part numbers of those after it).
class S3Upload {
 public:
  S3Upload(S3Client& client, std::string key, std::string uri)
      : client_(client), key_(std::move(key)), uri_(std::move(uri)) {}
  ~S3Upload() { Abort(); }
  Status Add(std::string_view data);
  Status Finish();
  void Abort();

 private:
  Status Complete();
  Status Part(std::string data);
  Status Collect(size_t keep);  // waits until at most `keep` parts are in flight
  Result<std::string> PutPart(int number, const std::string& data);
  S3Client& client_;
  std::string key_, uri_;
  std::string buf_;
  std::string upload_id_;
  std::vector<std::string> etags_;                         // the parts collected, in order
  std::deque<std::future<Result<std::string>>> inflight_;  // the next parts' ETags
  Status failed_;                                          // the upload's first error
};

Status S3Upload::Add(std::string_view data) {
  if (!failed_.ok()) return failed_;
  while (!data.empty()) {
    size_t n = std::min(data.size(), kS3PartSize - buf_.size());
    buf_.append(data.substr(0, n));
    data.remove_prefix(n);
    if (buf_.size() == kS3PartSize) {
      Status st = Part(std::exchange(buf_, std::string()));
      if (!st.ok()) return failed_ = st;
      buf_.reserve(kS3PartSize);
    }
  }
  return Status::Ok();
}

Result<std::string> S3Upload::PutPart(int number, const std::string& data) {
  S3Request put{"PUT", key_, {{"partNumber", std::to_string(number)}, {"uploadId", upload_id_}}};
  put.headers.push_back(ContentMd5(data));
  put.body = data;
  std::string what = fmt::format("{}: part {}", uri_, number);
  DS_ASSIGN_OR_RETURN(S3Response r, client_.Perform(put, what));
  if (r.status / 100 != 2) return client_.Fail(r, what);
  return r.headers["etag"];
}

Status S3Upload::Collect(size_t keep) {
  Status first;
  while (inflight_.size() > keep) {
    auto next = [&]() -> Result<std::string> {
      try {
        return inflight_.front().get();
      } catch (const std::exception& e) {  // std::bad_alloc: failed, not thrown out of ~S3Upload
        return Status(Code::kIOError, fmt::format("{}: a part's upload: {}", uri_, e.what()));
      }
    };
    Result<std::string> etag = next();
    inflight_.pop_front();
    if (etag.ok()) {
      etags_.push_back(std::move(*etag));
    } else if (first.ok()) {
      first = etag.status();
      keep = 0;  // the upload has failed: wait for the rest, keep the first error
    }
  }
  return first;
}

Status S3Upload::Part(std::string data) {
  if (upload_id_.empty()) {
    S3Request init{"POST", key_, {{"uploads", ""}}};
    DS_ASSIGN_OR_RETURN(S3Response r, client_.Perform(init, uri_));
    if (r.status / 100 != 2) return client_.Fail(r, uri_ + ": start a multipart upload");
    upload_id_ = XmlText(r.body, "UploadId");
  }
  DS_RETURN_IF_ERROR(Collect(kS3PartsInFlight - 1));
  int number = static_cast<int>(etags_.size() + inflight_.size()) + 1;
  auto body = std::make_shared<const std::string>(std::move(data));
  try {
    inflight_.push_back(
        std::async(std::launch::async, [this, number, body] { return PutPart(number, *body); }));
  } catch (const std::system_error&) {  // no thread to be had: this part here and now
    std::promise<Result<std::string>> now;
    now.set_value(PutPart(number, *body));
    inflight_.push_back(now.get_future());
  }
  return Status::Ok();
}

Status S3Upload::Finish() {
  if (!failed_.ok()) return failed_;
  Status st = Complete();
  if (!st.ok()) failed_ = st;
  return st;
}

Status S3Upload::Complete() {
  if (upload_id_.empty()) {
    S3Request put{"PUT", key_};
    put.headers.push_back(ContentMd5(buf_));
    put.body = buf_;
    DS_ASSIGN_OR_RETURN(S3Response r, client_.Perform(put, uri_));
    if (r.status / 100 != 2) return client_.Fail(r, uri_);
    buf_.clear();
    return Status::Ok();
  }
  if (!buf_.empty()) DS_RETURN_IF_ERROR(Part(std::exchange(buf_, std::string())));
  DS_RETURN_IF_ERROR(Collect(0));
  std::string xml = "<CompleteMultipartUpload>";
  for (size_t i = 0; i < etags_.size(); ++i) {
    xml += fmt::format("<Part><PartNumber>{}</PartNumber><ETag>{}</ETag></Part>", i + 1, etags_[i]);
  }
  xml += "</CompleteMultipartUpload>";
  S3Request done{"POST", key_, {{"uploadId", upload_id_}}};
  done.headers.push_back("Content-Type: application/xml");
  done.body = xml;
  DS_ASSIGN_OR_RETURN(S3Response r, client_.Perform(done, uri_ + ": complete the upload"));
  // S3 may answer 200 with an error in the body.
  if (r.status / 100 != 2 || !r.ErrorCode().empty()) return client_.Fail(r, uri_);
  upload_id_.clear();
  return Status::Ok();
}

void S3Upload::Abort() {
  (void)Collect(0);
  if (upload_id_.empty()) return;
  S3Request abort{"DELETE", key_, {{"uploadId", upload_id_}}};
  (void)client_.Perform(abort, uri_ + ": abort the upload");
  upload_id_.clear();
}

class S3Writable final : public WritableFile {
 public:
  S3Writable(S3Client& client, std::string key, std::string uri)
      : upload_(client, std::move(key), uri), uri_(std::move(uri)) {}
  const std::string& name() const override { return uri_; }
  uint64_t size() const override { return size_; }
  Status Append(std::string_view data) override {
    size_ += data.size();
    return upload_.Add(data);
  }
  Status Sync() override { return Status::Ok(); }  // durable at Commit: S3 has no partial object
  Status Commit() override { return upload_.Finish(); }

 private:
  S3Upload upload_;
  std::string uri_;
  uint64_t size_ = 0;
};

// A file written at offsets: a local spool (an unnamed file under TMPDIR) uploaded whole by
// Sync and Close, since an S3 object is written once.
class S3SpoolWrite final : public RandomWriteFile {
 public:
  S3SpoolWrite(S3Client& client, OwnedFd spool, std::string key, std::string uri)
      : client_(client), spool_(std::move(spool)), key_(std::move(key)), uri_(std::move(uri)) {}
  ~S3SpoolWrite() override { (void)Close(); }
  const std::string& name() const override { return uri_; }
  Status WriteAt(uint64_t offset, const void* data, size_t n) override {
    dirty_ = true;
    return WriteFullAt(spool_.get(), data, n, offset, uri_ + ": the local spool");
  }
  Result<size_t> ReadSome(uint64_t offset, void* buf, size_t n) override {
    ssize_t got = ::pread(spool_.get(), buf, n, static_cast<off_t>(offset));
    if (got < 0) return Status::FromErrno(errno, uri_ + ": spool");
    return static_cast<size_t>(got);
  }
  Result<uint64_t> Size() override {
    struct stat st;
    if (::fstat(spool_.get(), &st) != 0) return Status::FromErrno(errno, uri_ + ": spool");
    return static_cast<uint64_t>(st.st_size);
  }
  Status Truncate(uint64_t size) override {
    dirty_ = true;
    if (::ftruncate(spool_.get(), static_cast<off_t>(size)) != 0) {
      return Status::FromErrno(errno, uri_ + ": spool");
    }
    return Status::Ok();
  }
  Status Sync() override {
    if (!dirty_) return Status::Ok();
    DS_ASSIGN_OR_RETURN(uint64_t size, Size());
    S3Upload upload(client_, key_, uri_);
    std::string piece;
    for (uint64_t off = 0; off < size; off += piece.size()) {
      piece.resize(std::min<uint64_t>(kS3PartSize, size - off));
      DS_ASSIGN_OR_RETURN(size_t n, ReadSome(off, piece.data(), piece.size()));
      piece.resize(n);
      if (n == 0) break;
      DS_RETURN_IF_ERROR(upload.Add(piece));
    }
    DS_RETURN_IF_ERROR(upload.Finish());
    dirty_ = false;
    return Status::Ok();
  }
  Status Close() override {
    if (!spool_.valid()) return Status::Ok();
    Status s = Sync();
    spool_.reset();
    return s;
  }

 private:
  S3Client& client_;
  OwnedFd spool_;
  std::string key_, uri_;
  bool dirty_ = false;
};

}  // namespace

std::unique_ptr<WritableFile> NewS3Writable(S3Client& client, std::string key, std::string uri) {
  return std::make_unique<S3Writable>(client, std::move(key), std::move(uri));
}

std::unique_ptr<RandomWriteFile> NewS3SpoolWrite(S3Client& client, OwnedFd spool, std::string key,
                                                 std::string uri) {
  return std::make_unique<S3SpoolWrite>(client, std::move(spool), std::move(key), std::move(uri));
}

}  // namespace ds
