// Committer: group commit of finished tmp files (docs/dssync.md, "How a file is copied").
//
// Copy threads Add() a sealed tmp file (mode and mtime set, not yet durable). Once a batch holds
// kBatchFiles files or kBatchBytes bytes, the thread that filled it makes the batch durable with
// one syncfs(2) on DST (instead of one fsync per file), renames each tmp file to its final name,
// and appends the files' 'F' entries to the journal. Flush() commits what is left, then syncs
// again so the renames are durable too. A file is never under its final name before its bytes are
// durable; a failed batch marks its files' results with the error and removes their tmp files.
//
// Thread-safety: Add and Flush may be called from any thread.
#pragma once

#include <mutex>
#include <string>
#include <vector>

#include "src/fd.h"
#include "sync/journal.h"

namespace ds::sync {

struct CopyResult;

class Committer {
 public:
  static constexpr size_t kBatchFiles = 512;
  static constexpr uint64_t kBatchBytes = 1ull << 30;

  Committer(std::string dst, Journal* journal);
  // `results[index].status` receives a commit error.
  void Add(size_t index, std::string tmp, std::string final_path, JournalEntry entry,
           uint64_t bytes, std::vector<CopyResult>* results);
  void Flush(std::vector<CopyResult>* results);

 private:
  struct Item {
    size_t index;
    std::string tmp, final_path;
    JournalEntry entry;
  };
  void Commit(std::vector<Item> batch, std::vector<CopyResult>* results);

  std::string dst_;
  Journal* journal_;
  OwnedFd dst_fd_;
  std::mutex mu_;         // guards pending_ and pending_bytes_
  std::mutex commit_mu_;  // one batch commits at a time
  std::vector<Item> pending_;
  uint64_t pending_bytes_ = 0;
};

}  // namespace ds::sync
