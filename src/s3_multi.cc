// Many S3 requests in flight on one curl multi handle (src/s3_multi.h).
#include "src/s3_multi.h"

#include <curl/curl.h>

#include <algorithm>
#include <chrono>

namespace ds {

using Clock = std::chrono::steady_clock;

struct S3Multi::Slot {
  const S3Request* request = nullptr;
  S3Response* response = nullptr;
  uint64_t tag = 0;
  CURL* easy = nullptr;
  curl_slist* headers = nullptr;
  S3Client::Transfer transfer;
  char errbuf[CURL_ERROR_SIZE] = {0};
  int attempts = 0;
  bool waiting = false;  // a retry not yet sent
  Clock::time_point due;
};

S3Multi::S3Multi(std::shared_ptr<S3Client> client, int retries)
    : client_(std::move(client)),
      retries_(retries < 0 ? client_->config().retries : retries),
      multi_(curl_multi_init()) {}

S3Multi::~S3Multi() {
  CURLM* multi = static_cast<CURLM*>(multi_);
  for (auto& slot : slots_) {
    if (slot->easy) {
      curl_multi_remove_handle(multi, slot->easy);
      curl_easy_cleanup(slot->easy);
    }
    if (slot->headers) curl_slist_free_all(slot->headers);
  }
  for (void* easy : idle_) curl_easy_cleanup(static_cast<CURL*>(easy));
  curl_multi_cleanup(multi);
}

void S3Multi::Start(const S3Request* request, S3Response* response, uint64_t tag) {
  size_t i;
  if (free_.empty()) {
    i = slots_.size();
    slots_.push_back(std::make_unique<Slot>());
  } else {
    i = free_.back();
    free_.pop_back();
  }
  Slot& slot = *slots_[i];
  slot.request = request;
  slot.response = response;
  slot.tag = tag;
  slot.attempts = 0;
  slot.waiting = false;
  running_++;
  Send(i);
}

void S3Multi::Send(size_t i) {
  Slot& slot = *slots_[i];
  if (!slot.easy) {
    if (idle_.empty()) {
      slot.easy = curl_easy_init();
    } else {
      slot.easy = static_cast<CURL*>(idle_.back());
      idle_.pop_back();
    }
  }
  curl_easy_reset(slot.easy);
  *slot.response = S3Response{};
  slot.transfer = S3Client::Transfer{slot.request, slot.response};
  if (slot.headers) curl_slist_free_all(slot.headers);
  slot.headers = client_->Prepare(slot.easy, &slot.transfer);
  slot.errbuf[0] = '\0';
  curl_easy_setopt(slot.easy, CURLOPT_ERRORBUFFER, slot.errbuf);
  curl_easy_setopt(slot.easy, CURLOPT_PRIVATE, reinterpret_cast<void*>(i));
  slot.attempts++;
  slot.waiting = false;
  curl_multi_add_handle(static_cast<CURLM*>(multi_), slot.easy);
}

void S3Multi::SendDue() {
  const auto now = Clock::now();
  for (size_t i = 0; i < slots_.size(); i++) {
    if (slots_[i]->waiting && slots_[i]->due <= now) Send(i);
  }
}

void S3Multi::Drain(std::vector<Done>* out) {
  CURLM* multi = static_cast<CURLM*>(multi_);
  int left = 0;
  while (CURLMsg* msg = curl_multi_info_read(multi, &left)) {
    if (msg->msg != CURLMSG_DONE) continue;
    void* p = nullptr;
    curl_easy_getinfo(msg->easy_handle, CURLINFO_PRIVATE, &p);
    const size_t i = reinterpret_cast<size_t>(p);
    Slot& slot = *slots_[i];
    const CURLcode rc = msg->data.result;
    curl_multi_remove_handle(multi, slot.easy);
    const S3Request& request = *slot.request;
    const S3Response& response = *slot.response;
    const bool answered = rc == CURLE_OK;
    const bool ok2xx = answered && response.status / 100 == 2;
    const bool whole = ok2xx && (!request.sized() || response.sink_bytes == request.sink_size);
    client_->Count(request, response, slot.attempts > 1);
    const bool again = !slot.transfer.overflow &&
                       (!answered || (ok2xx && !whole) || S3Client::Retryable(response));
    if (again && slot.attempts <= retries_) {
      slot.waiting = true;
      slot.due = Clock::now() + std::chrono::milliseconds(50L << std::min(slot.attempts - 1, 6));
      continue;
    }
    Done d;
    d.tag = slot.tag;
    d.answered = answered;
    d.whole = whole;
    d.overflow = slot.transfer.overflow;
    if (!answered) d.transport_error = slot.errbuf[0] ? slot.errbuf : curl_easy_strerror(rc);
    d.attempts = slot.attempts;
    curl_off_t ttfb = 0, ttlb = 0;
    curl_easy_getinfo(slot.easy, CURLINFO_STARTTRANSFER_TIME_T, &ttfb);
    curl_easy_getinfo(slot.easy, CURLINFO_TOTAL_TIME_T, &ttlb);
    d.ttfb = static_cast<double>(ttfb) / 1e6;
    d.ttlb = static_cast<double>(ttlb) / 1e6;
    out->push_back(std::move(d));
    idle_.push_back(slot.easy);
    slot.easy = nullptr;
    curl_slist_free_all(slot.headers);
    slot.headers = nullptr;
    slot.request = nullptr;
    slot.response = nullptr;
    free_.push_back(i);
    running_--;
  }
}

void S3Multi::Wait(size_t min, int timeout_ms, std::vector<Done>* out) {
  CURLM* multi = static_cast<CURLM*>(multi_);
  const auto deadline = Clock::now() + std::chrono::milliseconds(timeout_ms);
  size_t got = 0;
  for (;;) {
    SendDue();
    int still = 0;
    curl_multi_perform(multi, &still);
    const size_t before = out->size();
    Drain(out);
    got += out->size() - before;
    if (got >= std::min(min, got + running_)) break;
    const auto now = Clock::now();
    if (timeout_ms >= 0 && now >= deadline) break;
    // Sleep in curl until a transfer moves, the next retry is due or the deadline passes.
    auto wake = now + std::chrono::milliseconds(100);
    if (timeout_ms >= 0) wake = std::min(wake, deadline);
    for (auto& slot : slots_) {
      if (slot->waiting) wake = std::min(wake, slot->due);
    }
    const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(wake - now).count();
    curl_multi_poll(multi, nullptr, 0, static_cast<int>(std::max<int64_t>(ms, 0)), nullptr);
  }
}

}  // namespace ds
