#include "bench/io/io_logs.h"

#include <fmt/format.h>

#include <cerrno>

namespace ds::bench {

Result<std::unique_ptr<IoLogs>> IoLogs::Open(const IoLogOptions& o, unsigned clone) {
  std::unique_ptr<IoLogs> l(new IoLogs(o));
  l->window_ms_ = o.avg_msec ? o.avg_msec : 500;
  if (!o.bw.empty()) DS_RETURN_IF_ERROR(l->OpenOne(&l->bw_, o.bw, "bw", clone));
  if (!o.iops.empty()) DS_RETURN_IF_ERROR(l->OpenOne(&l->iops_, o.iops, "iops", clone));
  if (!o.lat.empty()) {
    DS_RETURN_IF_ERROR(l->OpenOne(&l->lat_, o.lat, "lat", clone));
    DS_RETURN_IF_ERROR(l->OpenOne(&l->clat_, o.lat, "clat", clone));
    DS_RETURN_IF_ERROR(l->OpenOne(&l->slat_, o.lat, "slat", clone));
  }
  return l;
}

IoLogs::~IoLogs() { (void)Close(); }

Status IoLogs::OpenOne(File* f, const std::string& prefix, const char* kind, unsigned clone) {
  f->path = fmt::format("{}_{}.{}.log", prefix, kind, clone + 1);
  f->f = std::fopen(f->path.c_str(), "w");
  if (!f->f) return Status::FromErrno(errno, f->path + ": cannot write the log");
  std::setvbuf(f->f, nullptr, _IOFBF, 1 << 16);
  return Status::Ok();
}

void IoLogs::Line(File& f, uint64_t ms, uint64_t value, int ddir, uint64_t bs) {
  if (f.f)
    std::fprintf(f.f, "%llu, %llu, %d, %llu, 0\n", static_cast<unsigned long long>(ms),
                 static_cast<unsigned long long>(value), ddir, static_cast<unsigned long long>(bs));
}

void IoLogs::Complete(uint64_t ms, int ddir, uint64_t bytes, uint64_t lat_ns) {
  Tick(ms);
  bytes_[ddir] += bytes;
  ios_[ddir]++;
  lat_sum_[ddir] += lat_ns;
  if (o_.avg_msec == 0) {  // fio: every IO's latency
    Line(lat_, ms, lat_ns, ddir, bytes);
    Line(clat_, ms, lat_ns, ddir, bytes);
  }
}

void IoLogs::Tick(uint64_t ms, bool last) {
  while (ms >= window_start_ + window_ms_ || (last && (ios_[0] || ios_[1] || ios_[2]))) {
    uint64_t end = last && ms < window_start_ + window_ms_ ? ms : window_start_ + window_ms_;
    double secs = static_cast<double>(end - window_start_) / 1e3;
    for (int d = 0; d < 3; d++) {
      if (ios_[d] == 0) continue;
      if (secs > 0) {
        Line(bw_, end, static_cast<uint64_t>(static_cast<double>(bytes_[d]) / 1024 / secs), d, 0);
        Line(iops_, end, static_cast<uint64_t>(static_cast<double>(ios_[d]) / secs), d, 0);
      }
      if (o_.avg_msec > 0) {
        Line(lat_, end, lat_sum_[d] / ios_[d], d, 0);
        Line(clat_, end, lat_sum_[d] / ios_[d], d, 0);
      }
      bytes_[d] = ios_[d] = lat_sum_[d] = 0;
    }
    window_start_ = end;
    if (last) break;
  }
}

Status IoLogs::Close() {
  Status s;
  for (File* f : {&bw_, &iops_, &lat_, &clat_, &slat_}) {
    if (!f->f) continue;
    bool bad = std::ferror(f->f) != 0;
    if (std::fclose(f->f) != 0 || bad) {
      if (s.ok()) s = Status::FromErrno(errno ? errno : EIO, f->path + ": writing the log");
    }
    f->f = nullptr;
  }
  return s;
}

}  // namespace ds::bench
