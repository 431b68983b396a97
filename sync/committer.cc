#include "sync/committer.h"

#include <fcntl.h>
#include <unistd.h>

#include "sync/copier.h"

namespace ds::sync {

Committer::Committer(std::string dst, Journal* journal) : dst_(std::move(dst)), journal_(journal) {
  auto fd = OpenFile(dst_, O_RDONLY | O_DIRECTORY);
  if (fd.ok()) dst_fd_ = std::move(*fd);
}

void Committer::Add(size_t index, std::string tmp, std::string final_path, JournalEntry entry,
                    uint64_t bytes, std::vector<CopyResult>* results) {
  std::vector<Item> batch;
  {
    std::lock_guard<std::mutex> lock(mu_);
    pending_.push_back({index, std::move(tmp), std::move(final_path), std::move(entry)});
    pending_bytes_ += bytes;
    if (pending_.size() < kBatchFiles && pending_bytes_ < kBatchBytes) return;
    batch.swap(pending_);
    pending_bytes_ = 0;
  }
  Commit(std::move(batch), results);
}

void Committer::Flush(std::vector<CopyResult>* results) {
  std::vector<Item> batch;
  {
    std::lock_guard<std::mutex> lock(mu_);
    batch.swap(pending_);
    pending_bytes_ = 0;
  }
  Commit(std::move(batch), results);
  if (dst_fd_.valid()) (void)::syncfs(dst_fd_.get());  // the renames; a lost one is recopied
}

void Committer::Commit(std::vector<Item> batch, std::vector<CopyResult>* results) {
  if (batch.empty()) return;
  std::lock_guard<std::mutex> lock(commit_mu_);
  Status st;
  if (!dst_fd_.valid() || ::syncfs(dst_fd_.get()) != 0) {
    st = Status::FromErrno(errno, dst_ + ": syncfs");
  }
  std::vector<JournalEntry> entries;
  for (auto& item : batch) {
    Status s = st;
    if (s.ok() && ::rename(item.tmp.c_str(), item.final_path.c_str()) != 0) {
      s = Status::FromErrno(errno, item.final_path + ": rename");
    }
    if (!s.ok()) {
      ::unlink(item.tmp.c_str());
      (*results)[item.index].status = s;
      continue;
    }
    entries.push_back(std::move(item.entry));
  }
  (void)journal_->Append(entries, false);  // a hint only
}

}  // namespace ds::sync
