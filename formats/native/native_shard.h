// Writing and reading one native shard file (docs/formats/native.md).
//
// ShardWriter, modelled on leveldb's TableBuilder: BeginRecord / AppendData... / EndRecord (or
// AddRecord for an in-memory sample), a sticky status(), then Finish() or Abandon(). It creates
// its file with O_EXCL under the name it is given (callers give a temporary name and rename after
// Finish, which fsyncs). It hashes every byte it writes (XXH3-64) for the manifest.
// A record in progress can be dropped with CancelRecord() (e.g. its input file changed while
// being read): the file is truncated back and the hash state restored.
//
// ShardReader opens a finished shard through a Storage (src/storage.h) with positioned reads (never
// mmap, so a truncated file yields an error, never SIGBUS). Open() checks header, footer and index
// checksums. Read(i) returns a whole sample after checking both record checksums. Methods are const
// and thread-safe after Open().
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "formats/native/native_format.h"
#include "formats/sample.h"
#include "src/checksum.h"
#include "src/endian.h"
#include "src/fd.h"
#include "src/file_writer.h"
#include "src/status.h"
#include "src/storage.h"

namespace ds::native {

struct ShardSummary {
  uint64_t size = 0;
  uint64_t records = 0;
  uint64_t payload_bytes = 0;
  uint64_t xxh3 = 0;
};

class ShardWriter {
 public:
  // A new file at path in storage (kAlreadyExists if there is one). REQUIRES: align is a power
  // of two in [1, kMaxAlign]; storage outlives the writer.
  static Result<std::unique_ptr<ShardWriter>> Create(Storage& storage, const std::string& path,
                                                     const ShardHeader& header);
  ~ShardWriter();

  // Offset the next record would start at, i.e. the shard's data size so far.
  uint64_t next_offset() const { return AlignUp(file_size_, header_.align); }
  uint64_t records() const { return index_.size(); }
  const std::vector<IndexEntry>& index() const { return index_; }
  const Status& status() const { return status_; }

  // REQUIRES: no record in progress; fields pass CheckRecordShape.
  Status BeginRecord(std::string_view key, std::span<const FieldInfo> fields);
  // REQUIRES: a record in progress; total appended must equal the declared payload.
  Status AppendData(std::string_view chunk);
  Status EndRecord();
  void CancelRecord();
  Status AddRecord(const Sample& sample);

  // Writes index and footer, fsyncs and closes. REQUIRES: no record in progress.
  Status Finish(ShardSummary* summary);
  // Closes and unlinks the file. Safe to call at any time; no-op after Finish.
  void Abandon();

 private:
  ShardWriter(Storage& storage, std::string path, FileWriter file, ShardHeader header);
  Status Put(std::string_view data);
  Status Fail(Status s);

  Storage* storage_;
  std::string path_;
  FileWriter file_;
  ShardHeader header_;
  Xxh3Hasher hasher_;
  std::vector<IndexEntry> index_;
  uint64_t file_size_ = 0;
  uint64_t payload_bytes_ = 0;
  Status status_;
  bool finished_ = false;
  // Record in progress.
  bool in_record_ = false;
  uint64_t rec_start_ = 0;
  uint64_t rec_len_ = 0;
  uint64_t rec_remaining_ = 0;
  uint32_t rec_crc_ = 0;
  std::unique_ptr<Xxh3Hasher> saved_hash_;
  uint64_t saved_size_ = 0;
  uint64_t saved_payload_ = 0;
};

class ShardReader {
 public:
  // `display` names the shard in messages (e.g. "shard-000003.dsr"). path is inside storage.
  static Result<ShardReader> Open(Storage& storage, const std::string& path, std::string display);
  // A local path.
  static Result<ShardReader> Open(const std::string& path, std::string display);

  const ShardHeader& header() const { return header_; }
  uint64_t size() const { return size_; }
  uint64_t record_count() const { return index_.size(); }
  const std::vector<IndexEntry>& index() const { return index_; }
  const RandomAccessFile& file() const { return *file_; }
  const std::string& display() const { return display_; }

  // Reads record i's head only (key, field names and sizes); checks the header crc.
  Result<RecordHead> ReadHead(uint64_t i) const;
  // Reads and checks record i whole.
  Result<Sample> Read(uint64_t i) const;

 private:
  std::unique_ptr<RandomAccessFile> file_;
  std::string display_;
  uint64_t size_ = 0;
  ShardHeader header_;
  std::vector<IndexEntry> index_;
};

// Reads the record at [offset, offset+length) of file, checks it and decodes it.
// `where` is the message prefix ("shard-000001.dsr: record 7 at offset 4096"). A file without a
// local fd (a remote backend) is read with one ReadAt of the whole record, up to 64 MiB.
Result<Sample> ReadRecordAt(const RandomAccessFile& file, uint64_t offset, uint64_t length,
                            std::string_view where);
// Decodes and checks the record held whole in p[0, length) (a batched read's buffer).
Result<Sample> DecodeRecord(const uint8_t* p, uint64_t length, std::string_view where);
// Reads only the head of the record at offset (length is its record_len).
Result<RecordHead> ReadRecordHeadAt(const RandomAccessFile& file, uint64_t offset, uint64_t length,
                                    std::string_view where);

}  // namespace ds::native
