// Committer: group commit of finished tmp files (docs/dssync.md, "How a file is copied").
//
// Copy threads Add() a sealed tmp file (mode and mtime set). Once a batch holds kBatchFiles files
// or kBatchBytes bytes, the thread that filled it makes the batch durable and renames each tmp
// file to its final name through the storage interface, then appends the files' 'F' entries to
// the journal. Durable: where the destination's storage has caps().sync_all, one SyncAll on DST
// for the batch (local: syncfs(2), instead of one fsync per file); elsewhere the copier synced
// each file before Add(). Flush() commits what is left, then makes the renames durable too
// (SyncAll, or SyncDir of every directory a file was renamed in). A file is never under its
// final name before its bytes are durable; a failed batch marks its files' results with the
// error and removes their tmp files.
//
// Thread-safety: Add and Flush may be called from any thread.
#pragma once

#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "src/storage.h"
#include "sync/journal.h"

namespace ds::sync {

struct CopyResult;

class Committer {
 public:
  static constexpr size_t kBatchFiles = 512;
  static constexpr uint64_t kBatchBytes = 1ull << 30;

  // storage: where DST is (null: the local backend).
  Committer(std::string dst, Journal* journal, std::shared_ptr<Storage> storage = nullptr);
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
  std::shared_ptr<Storage> storage_;
  bool sync_all_ = false;
  std::mutex mu_;         // guards pending_ and pending_bytes_
  std::mutex commit_mu_;  // one batch commits at a time; guards renamed_dirs_
  std::vector<Item> pending_;
  uint64_t pending_bytes_ = 0;
  std::set<std::string> renamed_dirs_;  // to SyncDir at Flush where !sync_all_
};

}  // namespace ds::sync
