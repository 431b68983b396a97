#include "pack/partition.h"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <mutex>
#include <thread>

#include "formats/sources/source.h"
#include "src/endian.h"

namespace ds {

Status AgreeOnStatus(PackJob& job, const Status& mine, std::string_view what) {
  std::string word;
  if (!mine.ok()) {
    PutLE32(&word, static_cast<uint32_t>(mine.code()));
    PutLE32(&word, static_cast<uint32_t>(mine.err()));
    word += mine.message();
  }
  DS_ASSIGN_OR_RETURN(auto all, job.AllGather(word, what));
  for (size_t r = 0; r < all.size(); r++) {
    const std::string& w = all[r];
    if (w.size() < 8) continue;
    return Status(static_cast<Code>(LoadLE32(w.data())),
                  fmt::format("rank {} of {}: {}", r, all.size(), w.substr(8)),
                  static_cast<int>(LoadLE32(w.data() + 4)));
  }
  return Status::Ok();
}

Result<std::string> FromRoot(PackJob& job, const std::string& mine, std::string_view what) {
  DS_ASSIGN_OR_RETURN(auto all, job.AllGather(job.rank() == 0 ? mine : std::string(), what));
  return all.empty() ? std::string() : std::move(all[0]);
}

std::vector<uint64_t> AssignShardRanges(const std::vector<uint64_t>& shard_bytes, int n) {
  unsigned __int128 total = 0;  // 128-bit: the sums below cannot overflow
  for (uint64_t b : shard_bytes) total += b;
  std::vector<uint64_t> first(n + 1, shard_bytes.size());
  first[0] = 0;
  // first[r]: the first shard with r/n of the total bytes before it.
  unsigned __int128 before = 0;
  size_t k = 0;
  for (int r = 1; r < n; r++) {
    unsigned __int128 goal = total * static_cast<unsigned>(r);
    while (k < shard_bytes.size() && before * n < goal) before += shard_bytes[k++];
    first[r] = k;
  }
  return first;
}

Result<std::vector<uint64_t>> SizeFiles(PackJob& job, const SampleSource& source, int threads) {
  uint64_t count = source.tree().file_count();
  uint64_t n = static_cast<uint64_t>(job.size()), r = static_cast<uint64_t>(job.rank());
  uint64_t begin = count * r / n, end = count * (r + 1) / n;
  std::vector<uint64_t> mine(end - begin);
  std::atomic<uint64_t> next{begin};
  std::mutex mu;
  Status failed;
  auto work = [&] {
    for (uint64_t f; (f = next.fetch_add(1)) < end;) {
      auto size = source.FileSize(f);
      if (!size.ok()) {
        std::lock_guard lock(mu);
        if (failed.ok()) failed = size.status();
        next = end;
        return;
      }
      mine[f - begin] = *size;
    }
  };
  std::vector<std::thread> pool;
  int t = static_cast<int>(std::clamp<uint64_t>(end - begin, 1, std::max(1, threads)));
  for (int i = 1; i < t; i++) pool.emplace_back(work);
  work();
  for (auto& th : pool) th.join();
  DS_RETURN_IF_ERROR(AgreeOnStatus(job, failed, "the sizes of SRC's files"));
  std::string bytes;
  bytes.reserve(mine.size() * 8);
  for (uint64_t v : mine) PutLE64(&bytes, v);
  DS_ASSIGN_OR_RETURN(auto all, job.AllGather(bytes, "the sizes of SRC's files"));
  std::vector<uint64_t> sizes;
  sizes.reserve(count);
  for (const auto& part : all) {
    for (size_t at = 0; at + 8 <= part.size(); at += 8) sizes.push_back(LoadLE64(part.data() + at));
  }
  if (sizes.size() != count) {
    return Status(Code::kInternal,
                  fmt::format("sizes of {} files gathered for {} listed", sizes.size(), count));
  }
  return sizes;
}

}  // namespace ds
