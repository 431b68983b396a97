#include "src/job.h"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>

#include "src/endian.h"

namespace ds {

Result<std::vector<std::string>> Job::Gather(const std::string& mine, std::string_view what) {
  DS_ASSIGN_OR_RETURN(auto all, AllGather(mine, what));
  if (!root()) all.clear();
  return all;
}

Status Job::Broadcast(std::string* bytes, std::string_view what) {
  DS_ASSIGN_OR_RETURN(auto all, AllGather(root() ? *bytes : std::string(), what));
  if (all.empty()) return Status(Code::kInternal, fmt::format("{}: no rank 0", what));
  *bytes = std::move(all[0]);
  return Status::Ok();
}

Status Job::Barrier(std::string_view what) { return AllGather(std::string(), what).status(); }

Result<uint64_t> Job::Sum(uint64_t mine, std::string_view what) {
  std::string word;
  PutLE64(&word, mine);
  DS_ASSIGN_OR_RETURN(auto all, AllGather(word, what));
  uint64_t sum = 0;
  for (const auto& w : all) {
    if (w.size() != 8) return Status(Code::kInternal, fmt::format("{}: a malformed sum", what));
    sum += LoadLE64(w.data());
  }
  return sum;
}

std::string Job::host() const {
  char buf[256] = {};
  if (::gethostname(buf, sizeof buf - 1) != 0) return "?";
  return buf;
}

// A failed rank's word: code (LE32), errno (LE32), host, '\n', message. A rank that succeeded
// sends nothing.
Status Job::Agree(const Status& mine, std::string_view what) {
  agreed_failure_.reset();
  std::string word;
  if (!mine.ok()) {
    PutLE32(&word, static_cast<uint32_t>(mine.code()));
    PutLE32(&word, static_cast<uint32_t>(mine.err()));
    word += host() + "\n" + mine.message();
  }
  DS_ASSIGN_OR_RETURN(auto all, AllGather(word, what));
  for (size_t r = 0; r < all.size(); r++) {
    const std::string& w = all[r];
    if (w.size() < 8) continue;
    size_t nl = w.find('\n', 8);
    if (nl == std::string::npos) nl = 8;
    JobFailure f;
    f.rank = static_cast<int>(r);
    f.size = static_cast<int>(all.size());
    f.host = w.substr(8, nl - 8);
    f.status = Status(static_cast<Code>(LoadLE32(w.data())), w.substr(std::min(nl + 1, w.size())),
                      static_cast<int>(LoadLE32(w.data() + 4)));
    Status out(f.status.code(), fmt::format("rank {} of {}: {}", r, all.size(), f.status.message()),
               f.status.err());
    agreed_failure_ = std::move(f);
    return out;
  }
  return Status::Ok();
}

}  // namespace ds
