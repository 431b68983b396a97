// Many S3 requests in flight on one thread (src/s3_client.h's requests on a curl multi handle),
// each retried as S3Client::Perform retries, each timed. Under the s3 IO engine
// (src/s3_engine.h) and `dsbench s3` (bench/s3/s3_bench.h).
//
// Contracts:
//   - Start sends a request at once; the request and its response stay the caller's and must
//     outlive its Done. Its connection comes from the multi handle's pool and stays open
//     (keep-alive) for the next request.
//   - A request that fails to connect, is cut short (a sink that got fewer bytes than asked) or
//     is answered 5xx/SlowDown/RequestTimeout is sent again after 50 ms x 2^attempt (capped at
//     3.2 s), up to `retries` times; the wait does not block the others in flight. A 4xx is
//     done at once: the caller reads the status (S3Client::Fail gives the message).
//   - Wait returns requests as they finish; Done::ttfb and Done::ttlb time the last attempt, from
//     the request's start to the first and the last byte of the answer (curl's STARTTRANSFER and
//     TOTAL times), as warp and elbencho time them. For an upload, curl stops the first clock when
//     the body starts to go out, not at the answer.
//   - Every request is counted in the client's counters (S3Client::Count).
//   - One S3Multi is one thread's.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "src/s3_client.h"

namespace ds {

class S3Multi {
 public:
  // retries < 0: the client's configured count.
  explicit S3Multi(std::shared_ptr<S3Client> client, int retries = -1);
  ~S3Multi();
  S3Multi(const S3Multi&) = delete;
  S3Multi& operator=(const S3Multi&) = delete;

  struct Done {
    uint64_t tag = 0;
    bool answered = false;        // an HTTP answer came; else transport_error says why not
    bool whole = false;           // 2xx, and a sink got exactly sink_size bytes
    bool overflow = false;        // the server sent more than the sink's size
    std::string transport_error;  // curl's reason, when !answered
    int attempts = 0;
    double ttfb = 0, ttlb = 0;  // seconds, of the last attempt
  };

  void Start(const S3Request* request, S3Response* response, uint64_t tag);
  // Runs the transfers until at least `min` requests are done (at most as many as are running)
  // or `timeout_ms` has passed (< 0: no limit); appends what finished to out.
  void Wait(size_t min, int timeout_ms, std::vector<Done>* out);
  // Requests started and not yet returned by Wait (retries waiting included).
  size_t running() const { return running_; }
  S3Client& client() { return *client_; }

 private:
  struct Slot;
  void Send(size_t slot);
  void Drain(std::vector<Done>* out);
  void SendDue();

  std::shared_ptr<S3Client> client_;
  int retries_;
  void* multi_;
  std::vector<std::unique_ptr<Slot>> slots_;
  std::vector<size_t> free_;
  std::vector<void*> idle_;  // easy handles between requests
  size_t running_ = 0;
};

}  // namespace ds
