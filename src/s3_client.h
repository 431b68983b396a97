// The HTTP side of the s3:// backend (src/storage_s3.cc, docs/s3.md): the AWS configuration chain
// and signed S3 requests through libcurl (SigV4 by CURLOPT_AWS_SIGV4), with retries.
//
// Contracts:
//   - LoadS3Config reads what the AWS CLI reads, first found wins: the endpoint from
//     AWS_ENDPOINT_URL_S3, AWS_ENDPOINT_URL, then `endpoint_url` in the profile of the config file
//     (AWS_CONFIG_FILE, ~/.aws/config), else AWS's regional endpoint; the region from AWS_REGION,
//     AWS_DEFAULT_REGION, then `region` in the profile, else us-east-1; the keys from
//     AWS_ACCESS_KEY_ID + AWS_SECRET_ACCESS_KEY (+ AWS_SESSION_TOKEN), then the profile
//     (AWS_PROFILE, else "default") of the credentials file (AWS_SHARED_CREDENTIALS_FILE,
//     ~/.aws/credentials). No keys at all is kInvalidArgument saying where they are looked for.
//   - Addressing: path-style (ENDPOINT/BUCKET/KEY) for an endpoint of one's own (radosgw, MinIO),
//     virtual-host (BUCKET.ENDPOINT/KEY) for AWS; the URL's `addressing=path|virtual` overrides.
//   - Every request carries x-amz-content-sha256: UNSIGNED-PAYLOAD (a PUT's body is checked by
//     its Content-MD5 instead), query parameters sorted by name and AWS-encoded, as radosgw
//     requires of a SigV4 signature.
//   - Perform retries a connection error, a body cut short, a 5xx and SlowDown, up to `retries`
//     times with exponential backoff from 50 ms; a 4xx is answered at once. The secret key never
//     appears in a message.
//   - Thread-safe: each request borrows a curl handle from a pool, whose connections stay open
//     (keep-alive) for the next request.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "src/status.h"

struct curl_slist;

namespace ds {

struct S3Config {
  std::string endpoint;  // scheme://host[:port], no trailing slash
  std::string region;
  std::string access_key;
  std::string secret_key;
  std::string session_token;
  bool path_style = true;
  int retries = 4;
  long connect_timeout_ms = 10000;
  long stall_timeout_s = 30;       // a transfer slower than 1 byte/s this long is cut and retried
  size_t readahead_max = 8 << 20;  // a file read in order: the largest window (0: none)
  std::string key_source;          // "environment" or "profile NAME in FILE": for messages
};

// The configuration for `bucket`, from the environment and files above and the URL's query
// (addressing=path|virtual, retries=N, timeout=SECONDS, readahead=MIB).
Result<S3Config> LoadS3Config(std::string_view query);

// AWS's URI encoding: unreserved characters (A-Z a-z 0-9 - _ . ~) kept, the rest %XX; '/' kept
// where keep_slash (an object key in a path).
std::string AwsEncode(std::string_view s, bool keep_slash);

struct S3Request {
  using Query = std::vector<std::pair<std::string, std::string>>;
  S3Request(std::string m, std::string k, Query q = {})
      : method(std::move(m)), key(std::move(k)), query(std::move(q)) {}
  std::string method;                // GET, HEAD, PUT, POST, DELETE
  std::string key;                   // the object's key; empty: the bucket itself
  Query query;                       // raw; sorted and encoded by Perform
  std::vector<std::string> headers;  // "Name: value"
  std::string_view body;             // PUT and POST
  // GET into a buffer of the caller's (a ranged read): exactly sink_size bytes are expected;
  // otherwise into S3Response::body.
  char* sink = nullptr;
  size_t sink_size = 0;
  // With no sink: a GET whose sink_size bytes are counted (S3Response::sink_bytes) and dropped,
  // checked as a sink's are (a benchmark's read, in bounded memory).
  bool discard = false;
  bool sized() const { return sink != nullptr || discard; }
};

struct S3Response {
  long status = 0;
  std::string body;
  std::map<std::string, std::string> headers;  // names lower-case
  size_t sink_bytes = 0;
  // "NoSuchKey", "SlowDown", ...: the <Code> of an error body ("" if none).
  std::string ErrorCode() const;
};

class S3Client {
 public:
  S3Client(S3Config config, std::string bucket);
  ~S3Client();
  S3Client(const S3Client&) = delete;
  S3Client& operator=(const S3Client&) = delete;

  const S3Config& config() const { return config_; }
  const std::string& bucket() const { return bucket_; }

  // One request, retried as the contract says. An HTTP status is returned, not an error: the
  // caller reads it (Fail gives the message). A transport error after the retries is kIOError
  // naming `what`, the endpoint and curl's reason.
  Result<S3Response> Perform(const S3Request& request, std::string_view what);

  // The one-line error for a response that is not 2xx: names `what`, S3's code and message,
  // and the fix (keys, bucket, endpoint). 404 is kNotFound, 403 and 400 kInvalidArgument, 412
  // kCorruption (the object changed), the rest kIOError.
  Status Fail(const S3Response& response, std::string_view what) const;

  // For an engine that drives many requests on its own curl multi handle (src/s3_engine.h):
  // sets the easy handle `curl` up for t's request (URL, signature, headers, callbacks into t)
  // and returns the header list to free with curl_slist_free_all once it is done.
  struct Transfer {
    const S3Request* request = nullptr;
    S3Response* response = nullptr;
    size_t body_pos = 0;
    bool overflow = false;
  };
  struct curl_slist* Prepare(void* curl, Transfer* t) const;
  // Whether an answered request is worth another try (5xx, SlowDown, RequestTimeout).
  static bool Retryable(const S3Response& r);
  // Counts a request done outside Perform.
  void Count(const S3Request& request, const S3Response& response, bool retry);

  // Requests and bytes so far (the request bill of docs/s3.md).
  struct Counters {
    uint64_t requests = 0;
    uint64_t retries = 0;
    uint64_t bytes_in = 0;
    uint64_t bytes_out = 0;
  };
  Counters counters() const;

 private:
  struct Handle;
  std::string Url(const S3Request& request) const;
  std::unique_ptr<Handle> Borrow();
  void Return(std::unique_ptr<Handle> handle);

  S3Config config_;
  std::string bucket_;
  std::string sigv4_;  // "aws:amz:REGION:s3"
  std::string userpwd_;
  mutable std::mutex mu_;
  std::vector<std::unique_ptr<Handle>> idle_;
  Counters counters_;
};

// The text of the first <tag>...</tag> in xml, entities decoded ("" if none).
std::string XmlText(std::string_view xml, std::string_view tag);
// Each <tag>...</tag> block's inner text, raw.
std::vector<std::string_view> XmlBlocks(std::string_view xml, std::string_view tag);

}  // namespace ds
