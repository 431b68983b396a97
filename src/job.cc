#include "src/job.h"

#include <fmt/format.h>

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

Status Job::Agree(const Status& mine, std::string_view what) {
  std::string word;
  if (!mine.ok()) {
    PutLE32(&word, static_cast<uint32_t>(mine.code()));
    PutLE32(&word, static_cast<uint32_t>(mine.err()));
    word += mine.message();
  }
  DS_ASSIGN_OR_RETURN(auto all, AllGather(word, what));
  for (size_t r = 0; r < all.size(); r++) {
    const std::string& w = all[r];
    if (w.size() < 8) continue;
    return Status(static_cast<Code>(LoadLE32(w.data())),
                  fmt::format("rank {} of {}: {}", r, all.size(), w.substr(8)),
                  static_cast<int>(LoadLE32(w.data() + 4)));
  }
  return Status::Ok();
}

}  // namespace ds
