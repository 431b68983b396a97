// `dsbench s3`: the run (bench/s3/s3_bench.h). The figures and the reports: s3_report.cc.
#include "bench/s3/s3_bench.h"

#include <fmt/format.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <ctime>
#include <map>
#include <memory>
#include <random>

#include "src/s3_client.h"
#include "src/s3_multi.h"
#include "src/stop.h"
#include "src/storage.h"

namespace ds::bench {
namespace {

using Clock = std::chrono::steady_clock;

int64_t RealtimeNs() {
  timespec ts{};
  clock_gettime(CLOCK_REALTIME, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

// One request in flight: what it is for, and its buffers.
struct Req {
  S3Op op = S3Op::kGet;
  uint64_t id = 0;     // the object's number
  uint64_t bytes = 0;  // payload moved when it succeeds
  std::unique_ptr<S3Request> request;
  S3Response response;
  Clock::time_point start;
};

class Bench {
 public:
  Bench(const S3BenchOptions& o, std::shared_ptr<S3Client> client, std::string base, int rank)
      : o_(o), client_(std::move(client)), base_(std::move(base)), rng_(o.seed * 7919 + rank) {
    data_.resize(std::max<uint64_t>(o.obj_size, 1));
    std::mt19937_64 fill(o.seed + rank);
    for (size_t i = 0; i + 8 <= data_.size(); i += 8) {
      const uint64_t v = fill();
      std::memcpy(&data_[i], &v, 8);
    }
  }

  std::string Key(uint64_t id) const {
    return existing_.empty() ? fmt::format("{}obj.{}", base_, id) : existing_[id].first;
  }
  std::string Uri(const std::string& key) const {
    return fmt::format("s3://{}/{}", client_->bucket(), key);
  }

  uint64_t SizeOf(uint64_t id) {
    if (!existing_.empty()) return existing_[id].second;
    if (o_.obj_size_min == 0 || o_.obj_size_min >= o_.obj_size) return o_.obj_size;
    // log-uniform between min and max, fixed per object by its number
    std::mt19937_64 g(o_.seed * 1000003 + id);
    const double lo = std::log(static_cast<double>(o_.obj_size_min));
    const double hi = std::log(static_cast<double>(o_.obj_size));
    const double x = std::uniform_real_distribution<double>(lo, hi)(g);
    return std::clamp<uint64_t>(static_cast<uint64_t>(std::exp(x)), o_.obj_size_min, o_.obj_size);
  }

  // Uploads the prepared objects, `concurrency` at a time. The first failure ends it.
  Status Prepare(uint64_t n) {
    S3Multi multi(client_);
    std::vector<Req> reqs(o_.concurrency);
    std::vector<size_t> free;
    for (size_t i = 0; i < reqs.size(); i++) free.push_back(i);
    std::vector<S3Multi::Done> done;
    uint64_t next = 0;
    while (next < n || multi.running() > 0) {
      while (next < n && !free.empty() && !StopRequested()) {
        const size_t i = free.back();
        free.pop_back();
        reqs[i] = Req{};
        reqs[i].id = next;
        reqs[i].request = PutRequest(next);
        multi.Start(reqs[i].request.get(), &reqs[i].response, i);
        next++;
      }
      if (StopRequested() && multi.running() == 0) break;
      done.clear();
      multi.Wait(1, -1, &done);
      for (const S3Multi::Done& d : done) {
        Req& r = reqs[d.tag];
        if (!d.whole) return Failure(r, d);
        live_.push_back(r.id);
        free.push_back(d.tag);
      }
    }
    next_id_ = n;
    return Status::Ok();
  }

  void Run(S3BenchResult* out) {
    S3Multi multi(client_, 0);  // a benchmark counts failures; it does not hide them in retries
    std::vector<Req> reqs(o_.concurrency);
    std::vector<size_t> free;
    for (size_t i = 0; i < reqs.size(); i++) free.push_back(i);
    std::vector<S3Multi::Done> done;
    const auto t0 = Clock::now();
    const auto end = t0 + std::chrono::duration_cast<Clock::duration>(
                              std::chrono::duration<double>(o_.duration));
    out->start_ns = RealtimeNs();
    uint64_t started = 0;
    for (;;) {
      const auto now = Clock::now();
      const bool more = !StopRequested() && (o_.ops > 0 ? started < o_.ops : now < end);
      while (more && !free.empty()) {
        const size_t i = free.back();
        Req& r = reqs[i];
        r = Req{};
        if (!Choose(&r)) break;
        free.pop_back();
        r.start = Clock::now();
        multi.Start(r.request.get(), &r.response, i);
        started++;
        if (o_.ops > 0 && started >= o_.ops) break;
      }
      if (multi.running() == 0) break;
      done.clear();
      multi.Wait(1, 100, &done);
      const auto at = Clock::now();
      for (const S3Multi::Done& d : done) {
        Req& r = reqs[d.tag];
        Finish(r, d, std::chrono::duration<double>(at - t0).count(), out);
        free.push_back(d.tag);
      }
    }
    out->end_ns = RealtimeNs();
    out->interrupted = StopRequested();
    out->retries = client_->counters().retries;
  }

  // Every object under the base prefix, with its size (ListObjectsV2, every page).
  Status List(std::vector<std::pair<std::string, uint64_t>>* out) {
    std::string token;
    for (;;) {
      S3Request::Query q = {{"list-type", "2"}, {"prefix", base_}};
      if (!token.empty()) q.push_back({"continuation-token", token});
      S3Request list("GET", "", q);
      DS_ASSIGN_OR_RETURN(S3Response r, client_->Perform(list, Uri(base_)));
      if (r.status / 100 != 2) return client_->Fail(r, Uri(base_));
      for (std::string_view c : XmlBlocks(r.body, "Contents")) {
        out->emplace_back(XmlText(c, "Key"),
                          std::strtoull(XmlText(c, "Size").c_str(), nullptr, 10));
      }
      token = XmlText(r.body, "NextContinuationToken");
      if (token.empty() || XmlText(r.body, "IsTruncated") != "true") return Status::Ok();
    }
  }

  // The objects already under the prefix, read in place of prepared ones (warp's
  // --list-existing).
  Status UseExisting() {
    DS_RETURN_IF_ERROR(List(&existing_));
    if (existing_.empty()) {
      return Status(Code::kNotFound,
                    fmt::format("{}: no objects to read: put some there, or run without `existing`",
                                Uri(base_)));
    }
    for (uint64_t i = 0; i < existing_.size(); i++) live_.push_back(i);
    return Status::Ok();
  }

  // Deletes every object under the base prefix (listed, so that a put's and a failed run's go
  // too). Returns what failed, for a warning.
  std::string Cleanup() {
    std::vector<std::pair<std::string, uint64_t>> listed;
    if (Status s = List(&listed); !s.ok()) return s.message();
    std::vector<std::string> keys;
    for (auto& [key, size] : listed) keys.push_back(std::move(key));
    S3Multi multi(client_);
    std::vector<std::unique_ptr<S3Request>> reqs(o_.concurrency);
    std::vector<S3Response> resps(o_.concurrency);
    std::vector<size_t> free;
    for (size_t i = 0; i < reqs.size(); i++) free.push_back(i);
    std::vector<S3Multi::Done> done;
    size_t next = 0, failed = 0;
    std::string first;
    while (next < keys.size() || multi.running() > 0) {
      while (next < keys.size() && !free.empty()) {
        const size_t i = free.back();
        free.pop_back();
        reqs[i] = std::make_unique<S3Request>("DELETE", keys[next++]);
        multi.Start(reqs[i].get(), &resps[i], i);
      }
      done.clear();
      multi.Wait(1, -1, &done);
      for (const S3Multi::Done& d : done) {
        if (!d.whole && (!d.answered || resps[d.tag].status != 404)) {
          if (failed++ == 0) first = FailureOf(reqs[d.tag]->key, resps[d.tag], d).message();
        }
        free.push_back(d.tag);
      }
    }
    if (failed == 0) return "";
    return fmt::format("{} of {} objects under {} not deleted; the first: {}", failed, keys.size(),
                       Uri(base_), first);
  }

 private:
  std::unique_ptr<S3Request> PutRequest(uint64_t id) {
    auto req = std::make_unique<S3Request>("PUT", Key(id));
    req->body = std::string_view(data_.data(), SizeOf(id));
    return req;
  }

  // Picks the next operation into r; false when none can start now (delete: nothing left).
  bool Choose(Req* r) {
    S3Op op = S3Op::kGet;
    if (o_.op == "mixed") {
      const int x = std::uniform_int_distribution<int>(0, 99)(rng_);
      op = x < 45 ? S3Op::kGet : x < 75 ? S3Op::kStat : x < 90 ? S3Op::kPut : S3Op::kDelete;
      if (op == S3Op::kDelete && live_.size() <= o_.concurrency) op = S3Op::kPut;
    } else {
      op = o_.op == "put"      ? S3Op::kPut
           : o_.op == "stat"   ? S3Op::kStat
           : o_.op == "list"   ? S3Op::kList
           : o_.op == "delete" ? S3Op::kDelete
                               : S3Op::kGet;
    }
    r->op = op;
    if (op == S3Op::kPut) {
      r->id = next_id_++;
      r->request = PutRequest(r->id);
      r->bytes = r->request->body.size();
      return true;
    }
    if (op == S3Op::kList) {
      r->request = std::make_unique<S3Request>(
          "GET", "", S3Request::Query{{"list-type", "2"}, {"max-keys", "1000"}, {"prefix", base_}});
      return true;
    }
    if (live_.empty()) return false;
    const size_t pick = std::uniform_int_distribution<size_t>(0, live_.size() - 1)(rng_);
    r->id = live_[pick];
    if (op == S3Op::kDelete) {
      if (busy_[r->id] > 0) return false;  // read in flight: try again when it is done
      live_[pick] = live_.back();
      live_.pop_back();
      r->request = std::make_unique<S3Request>("DELETE", Key(r->id));
      return true;
    }
    busy_[r->id]++;
    if (op == S3Op::kStat) {
      r->request = std::make_unique<S3Request>("HEAD", Key(r->id));
      return true;
    }
    const uint64_t size = SizeOf(r->id);
    uint64_t offset = 0, len = size;
    if (o_.range > 0 && o_.range < size) {
      len = o_.range;
      offset = std::uniform_int_distribution<uint64_t>(0, size / len - 1)(rng_) * len;
    }
    r->request = std::make_unique<S3Request>("GET", Key(r->id));
    if (len != size) {
      r->request->headers.push_back(fmt::format("Range: bytes={}-{}", offset, offset + len - 1));
    }
    r->request->discard = true;
    r->request->sink_size = len;
    r->bytes = len;
    return true;
  }

  void Finish(Req& r, const S3Multi::Done& d, double at, S3BenchResult* out) {
    if (r.op == S3Op::kGet || r.op == S3Op::kStat) {
      if (--busy_[r.id] == 0) busy_.erase(r.id);
    }
    S3OpStats& s = out->op[static_cast<int>(r.op)];
    if (!d.whole) {
      s.errors++;
      if (out->first_error.empty()) out->first_error = Failure(r, d).message();
      if (r.op == S3Op::kDelete) live_.push_back(r.id);  // still there, as far as we know
      return;
    }
    if (r.op == S3Op::kPut && o_.op == "mixed") live_.push_back(r.id);
    s.ops++;
    s.bytes += r.bytes;
    s.ttfb.Add(static_cast<uint64_t>(d.ttfb * 1e9));
    s.ttlb.Add(static_cast<uint64_t>(d.ttlb * 1e9));
    const size_t tick = static_cast<size_t>(at / kS3Tick);
    if (out->tick_ops.size() <= tick) {
      out->tick_ops.resize(tick + 1);
      out->tick_bytes.resize(tick + 1);
    }
    out->tick_ops[tick]++;
    out->tick_bytes[tick] += r.bytes;
  }

  Status Failure(const Req& r, const S3Multi::Done& d) const {
    return FailureOf(r.request->key.empty() ? base_ : r.request->key, r.response, d);
  }

  Status FailureOf(const std::string& key, const S3Response& response,
                   const S3Multi::Done& d) const {
    const std::string what = Uri(key);
    if (d.overflow) return Status(Code::kIOError, what + ": the server sent more than asked");
    if (!d.answered) {
      return Status(Code::kIOError,
                    fmt::format("{}: cannot reach {} ({}) after {} tries: check AWS_ENDPOINT_URL "
                                "and that the server is up",
                                what, client_->config().endpoint, d.transport_error, d.attempts));
    }
    if (response.status / 100 == 2) {
      return Status(Code::kIOError, fmt::format("{}: {} bytes came, short of the object", what,
                                                response.sink_bytes));
    }
    return client_->Fail(response, what);
  }

  const S3BenchOptions& o_;
  std::shared_ptr<S3Client> client_;
  std::string base_;
  std::mt19937_64 rng_;
  std::string data_;
  std::vector<uint64_t> live_;
  std::vector<std::pair<std::string, uint64_t>> existing_;  // key, size
  std::map<uint64_t, int> busy_;
  uint64_t next_id_ = 0;
};

}  // namespace

const char* S3OpName(S3Op op) {
  static const char* const kNames[kS3Ops] = {"get", "put", "stat", "list", "delete"};
  return kNames[static_cast<int>(op)];
}

Status CheckS3Bench(S3BenchOptions* o) {
  static const char* const kOps[] = {"get", "put", "stat", "list", "delete", "mixed"};
  if (std::find_if(std::begin(kOps), std::end(kOps), [&](const char* n) { return o->op == n; }) ==
      std::end(kOps)) {
    return Status(Code::kInvalidArgument,
                  fmt::format("`op` {}: one of get, put, stat, list, delete, mixed", o->op));
  }
  if (o->concurrency < 1 || o->concurrency > 4096) {
    return Status(Code::kInvalidArgument, "`concurrency`: 1 to 4096 requests in flight");
  }
  if (o->obj_size < 1) return Status(Code::kInvalidArgument, "`obj_size`: at least 1 byte");
  if (o->obj_size > (5ull << 30)) {
    return Status(Code::kInvalidArgument, "`obj_size`: at most 5 GiB, S3's largest single PUT");
  }
  if (o->obj_size_min > o->obj_size) {
    return Status(Code::kInvalidArgument, "`obj_size` MIN:MAX: MIN is above MAX");
  }
  if (o->duration <= 0 && o->ops == 0) {
    return Status(Code::kInvalidArgument, "`duration`: more than 0 s (or give `ops`)");
  }
  const double ticks = o->segment / kS3Tick;
  if (o->segment < kS3Tick || std::fabs(ticks - std::round(ticks)) > 1e-6) {
    return Status(Code::kInvalidArgument, "`segment`: a multiple of 0.1 s");
  }
  if (o->objects == 0) {
    o->objects = std::clamp<uint64_t>((1ull << 30) / o->obj_size, 16, 2500);
    // A count of ops needs no more objects than it reads (delete: one each).
    if (o->ops > 0) {
      const uint64_t need = std::max<uint64_t>(o->ops, 16);
      o->objects = o->op == "delete" ? need : std::min(o->objects, need);
    }
  }
  if (o->op == "delete" && o->ops > o->objects) {
    return Status(
        Code::kInvalidArgument,
        fmt::format("`ops` {}: delete removes each of the {} `objects` once", o->ops, o->objects));
  }
  if (o->existing && o->op != "get" && o->op != "stat" && o->op != "list") {
    return Status(Code::kInvalidArgument,
                  fmt::format("`existing` with `op` {}: it reads only (get, stat, list), never "
                              "writes or deletes what is there",
                              o->op));
  }
  auto uri = ParseStorageUri(o->url);
  if (!uri.ok()) return uri.status();
  if (uri->scheme != "s3" || uri->authority.empty()) {
    return Status(Code::kInvalidArgument,
                  fmt::format("{}: dsbench s3 takes s3://BUCKET[/PREFIX]", o->url));
  }
  return Status::Ok();
}

Result<S3BenchResult> RunS3Bench(const S3BenchOptions& o, Job& job) {
  DS_ASSIGN_OR_RETURN(StorageUri uri, ParseStorageUri(o.url));
  DS_ASSIGN_OR_RETURN(S3Config config, LoadS3Config(uri.query));
  auto client = std::make_shared<S3Client>(std::move(config), uri.authority);
  std::string prefix = uri.path;
  while (!prefix.empty() && prefix.front() == '/') prefix.erase(0, 1);
  while (!prefix.empty() && prefix.back() == '/') prefix.pop_back();
  const std::string base = o.existing
                               ? (prefix.empty() ? prefix : prefix + "/")
                               : fmt::format("{}{}dsbench-s3.{}.r{}/", prefix,
                                             prefix.empty() ? "" : "/", ::getpid(), job.rank());
  Bench bench(o, client, base, job.rank());
  S3BenchResult out;
  out.rank = job.rank();
  out.host = job.host();
  out.prefix = bench.Uri(base);

  const uint64_t n = o.op == "put" || o.existing ? 0 : o.objects;
  const auto p0 = Clock::now();
  Status prepared = o.existing ? bench.UseExisting() : bench.Prepare(n);
  out.prepare_seconds = std::chrono::duration<double>(Clock::now() - p0).count();
  out.prepared = n;
  // A plain process (a job of one) keeps its error as it is, without "rank 0 of 1".
  Status agreed = job.size() > 1 ? job.Agree(prepared, "preparing the objects") : prepared;
  if (agreed.ok()) agreed = job.Barrier("the start of the run");
  if (agreed.ok() && !StopRequested()) {
    rusage before{}, after{};
    getrusage(RUSAGE_THREAD, &before);
    bench.Run(&out);
    getrusage(RUSAGE_THREAD, &after);
    auto sec = [](const timeval& a, const timeval& b) {
      return static_cast<double>(b.tv_sec - a.tv_sec) +
             static_cast<double>(b.tv_usec - a.tv_usec) / 1e6;
    };
    out.cpu_user = sec(before.ru_utime, after.ru_utime);
    out.cpu_sys = sec(before.ru_stime, after.ru_stime);
  }
  if (!o.keep && !o.existing) out.cleanup_note = bench.Cleanup();
  if (!agreed.ok()) return agreed;
  if (out.end_ns == 0) out.start_ns = out.end_ns = RealtimeNs();
  uint64_t ok = 0, failed = 0;
  for (const S3OpStats& s : out.op) {
    ok += s.ops;
    failed += s.errors;
  }
  if (ok == 0 && failed > 0) return Status(Code::kIOError, out.first_error);
  return out;
}

}  // namespace ds::bench
