// What `dsbench replay` reads, and how a real loader reads it (docs/dsbench.md#replay):
//   a directory tree   open + fstat + read + close of every file of a sample, as torchvision's
//                      ImageFolder does (one open per file, every epoch);
//   any layout         through formats/ (LayoutReader::Get: shards and LMDB stay open, one
//                      positioned read per sample), as a WebDataset, tf.data, MXNet or
//                      python-lmdb loader does;
//   a zip file         central directory once, then per member the local header + data +
//                      inflate + CRC check, as Python's zipfile does (formats/sources/zip.h; the
//                      archive is opened once per worker, as by a zipfile-based Dataset).
// It also knows the files that hold the dataset, to evict them from the page cache (fadvise
// DONTNEED, as fio's invalidate=1) and to measure how much of them is resident (mincore), so a
// "cold" epoch is proved, not assumed.
//
// Every byte and every open goes through the storage interface (src/storage.h) under a counting
// decorator: ops() is the bill of what was read since ResetOps() (opens, stats, reads, bytes), the
// RPC bill on a remote backend. liblmdb maps data.mdb itself: an LMDB bill counts only its opens.
//
// Read(i) is thread-safe.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "formats/layout.h"
#include "src/rpc_bill.h"
#include "src/status.h"
#include "src/storage_decorators.h"

namespace ds::bench {

struct SampleRead {
  uint64_t bytes = 0;
  uint64_t opens = 0;  // files opened for this sample
};

class ReplaySource {
 public:
  // A dataset in any layout dspack reads, a zip file, or else a directory tree of files.
  static Result<std::unique_ptr<ReplaySource>> Open(const std::string& path);
  ~ReplaySource();

  const std::string& kind() const { return kind_; }  // "tree", "zip" or the layout's name
  // The storage operations since the last ResetOps (or Open).
  StorageOps ops() const { return counting_->ops(); }
  void ResetOps() { counting_->Reset(); }
  uint64_t size() const { return samples_; }
  // Reads sample i whole (bytes are discarded: a loader would decode them).
  Result<SampleRead> Read(uint64_t i) const;
  // Reads samples `indices` at once, `inflight` reads outstanding (LayoutReader::ReadBatch): the
  // samples' bytes and opens summed. An engine's reads are counted into ops() here (they do not
  // pass through the storage's files). The first error ends the batch.
  Result<SampleRead> ReadBatch(std::span<const uint64_t> indices, unsigned inflight) const;
  // The files holding the dataset (tree files, the zip, or shards / data.mdb), absolute or
  // relative to the dataset path, with their total size.
  const std::vector<std::string>& files() const { return files_; }
  uint64_t total_bytes() const { return total_bytes_; }

  // fdatasync + posix_fadvise(DONTNEED) on every file: the kernel drops their cached pages
  // (dirty ones, e.g. of a dataset just written, are written back first, or they would stay).
  // Call it with the source closed: pages a reader maps (LMDB) cannot be dropped while mapped.
  // Files are visited from 16 threads: through a slow file system each open is a round trip.
  // `progress`: a bar on stderr ("evicting", files done) when it is a terminal.
  static Status Evict(const std::vector<std::string>& files, bool progress = false);
  // Close drops what the source holds open (shards, data.mdb's map, the zip); Reopen opens it
  // again, as a DataLoader without persistent workers does each epoch. A tree holds nothing
  // open and keeps its file list: ImageFolder scans once, when the Dataset is made.
  // REQUIRES: Read is not called between Close and Reopen.
  void Close();
  Status Reopen();
  // The shards and the samples each holds (none for a tree or a zip).
  Result<std::vector<ShardRange>> ShardRanges() const;
  // Fraction of the dataset's pages in the page cache (mincore on a mapping of each file).
  Result<double> Residency() const;
  // Whether the dataset's backend has a page cache on this machine (src/storage.h caps): a
  // remote one (nfs://) has none, so every read goes to the server and residency is 0.
  bool page_cache() const { return counting_->caps().page_cache; }
  // What measures the RPC bill of reading this dataset (src/rpc_bill.h): an inactive probe
  // unless it is read over NFS (nfs://, or a path on a kernel NFS mount).
  RpcBillProbe RpcProbe() const { return RpcBillProbe::For(*counting_, path_); }

 private:
  std::string path_;  // inside counting_
  std::shared_ptr<CountingStorage> counting_;
  std::string kind_;
  uint64_t samples_ = 0;
  std::unique_ptr<LayoutReader> reader_;  // OpenAnyReader: a layout, a zip or a tree
  std::vector<std::string> files_;
  uint64_t total_bytes_ = 0;
};

}  // namespace ds::bench
