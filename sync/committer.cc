#include "sync/committer.h"

#include "sync/copier.h"

namespace ds::sync {

Committer::Committer(std::string dst, Journal* journal, std::shared_ptr<Storage> storage)
    : dst_(std::move(dst)),
      journal_(journal),
      storage_(storage ? std::move(storage) : LocalStorage()),
      sync_all_(storage_->caps().sync_all) {}

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
  // The renames; a lost one is copied again by the next run.
  std::lock_guard<std::mutex> lock(commit_mu_);
  if (sync_all_) {
    (void)storage_->SyncAll(dst_);
  } else {
    for (const auto& dir : renamed_dirs_) (void)storage_->SyncDir(dir);
  }
  renamed_dirs_.clear();
}

void Committer::Commit(std::vector<Item> batch, std::vector<CopyResult>* results) {
  if (batch.empty()) return;
  std::lock_guard<std::mutex> lock(commit_mu_);
  Status st = sync_all_ ? storage_->SyncAll(dst_) : Status::Ok();
  std::vector<JournalEntry> entries;
  for (auto& item : batch) {
    Status s = st;
    if (s.ok()) s = storage_->Rename(item.tmp, item.final_path);
    if (!s.ok()) {
      (void)storage_->Remove(item.tmp);
      (*results)[item.index].status = s;
      continue;
    }
    if (!sync_all_) {
      size_t slash = item.final_path.rfind('/');
      renamed_dirs_.insert(slash == std::string::npos ? "." : item.final_path.substr(0, slash));
    }
    entries.push_back(std::move(item.entry));
  }
  (void)journal_->Append(entries, false);  // a hint only
}

}  // namespace ds::sync
