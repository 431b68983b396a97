#include "formats/native/native_shard.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/uio.h>
#include <unistd.h>

#include <cstring>

#include "src/endian.h"
#include "src/human.h"

namespace ds::native {

// ---- ShardWriter -------------------------------------------------------------------------------

ShardWriter::ShardWriter(Storage& storage, std::string path, FileWriter file, ShardHeader header)
    : storage_(&storage), path_(std::move(path)), file_(std::move(file)), header_(header) {}

ShardWriter::~ShardWriter() {
  if (!finished_) Abandon();
}

Result<std::unique_ptr<ShardWriter>> ShardWriter::Create(Storage& storage, const std::string& path,
                                                         const ShardHeader& header) {
  DS_ASSIGN_OR_RETURN(auto f, storage.OpenWrite(path, WriteMode::kCreateNew));
  FileWriter file(std::move(f));
  file.EnableDirect();  // falls back to buffered + writeback where O_DIRECT is refused
  file.EnableWriteback();
  std::unique_ptr<ShardWriter> w(new ShardWriter(storage, path, std::move(file), header));
  DS_RETURN_IF_ERROR(w->Put(EncodeShardHeader(header)));
  return w;
}

Status ShardWriter::Fail(Status s) {
  if (status_.ok()) status_ = s;
  return s;
}

Status ShardWriter::Put(std::string_view data) {
  Status s = file_.Append(data);
  if (!s.ok()) return Fail(s);
  hasher_.Update(data);
  file_size_ += data.size();
  return Status::Ok();
}

Status ShardWriter::BeginRecord(std::string_view key, std::span<const FieldInfo> fields) {
  DS_RETURN_IF_ERROR(status_);
  DS_RETURN_IF_ERROR(CheckRecordShape(key, fields));
  // Snapshot so CancelRecord can roll back padding, head and payload.
  if (!saved_hash_) saved_hash_ = std::make_unique<Xxh3Hasher>();
  saved_hash_->CopyFrom(hasher_);
  saved_size_ = file_size_;
  saved_payload_ = payload_bytes_;
  rec_start_ = next_offset();
  DS_RETURN_IF_ERROR(Put(std::string(rec_start_ - file_size_, '\0')));
  std::string head = EncodeRecordHead(key, fields);
  DS_RETURN_IF_ERROR(Put(head));
  rec_len_ = RecordLength(key, fields);
  rec_remaining_ = rec_len_ - head.size() - kRecordTrailerSize;
  rec_crc_ = 0;
  in_record_ = true;
  return Status::Ok();
}

Status ShardWriter::AppendData(std::string_view chunk) {
  DS_RETURN_IF_ERROR(status_);
  if (!in_record_ || chunk.size() > rec_remaining_) {
    return Fail(Status(Code::kInvalidArgument, path_ + ": more payload than the record declared"));
  }
  rec_crc_ = Crc32cExtend(rec_crc_, chunk.data(), chunk.size());
  rec_remaining_ -= chunk.size();
  payload_bytes_ += chunk.size();
  return Put(chunk);
}

Status ShardWriter::EndRecord() {
  DS_RETURN_IF_ERROR(status_);
  if (!in_record_ || rec_remaining_ != 0) {
    return Fail(
        Status(Code::kInvalidArgument, path_ + ": record ended before its declared payload"));
  }
  std::string crc;
  PutLE32(&crc, rec_crc_);
  DS_RETURN_IF_ERROR(Put(crc));
  index_.push_back({rec_start_, rec_len_});
  in_record_ = false;
  return Status::Ok();
}

void ShardWriter::CancelRecord() {
  if (!in_record_ || !status_.ok()) return;
  in_record_ = false;
  Status st = file_.TruncateTo(saved_size_);
  if (!st.ok()) {
    (void)Fail(st);
    return;
  }
  file_size_ = saved_size_;
  payload_bytes_ = saved_payload_;
  hasher_.CopyFrom(*saved_hash_);
}

Status ShardWriter::AddRecord(const Sample& sample) {
  std::vector<FieldInfo> infos;
  infos.reserve(sample.fields.size());
  for (const auto& f : sample.fields) infos.push_back({f.name, f.data.size()});
  DS_RETURN_IF_ERROR(BeginRecord(sample.key, infos));
  for (const auto& f : sample.fields) DS_RETURN_IF_ERROR(AppendData(f.data));
  return EndRecord();
}

Status ShardWriter::Finish(ShardSummary* summary) {
  DS_RETURN_IF_ERROR(status_);
  if (in_record_) return Fail(Status(Code::kInvalidArgument, path_ + ": Finish inside a record"));
  Footer footer;
  footer.index_offset = next_offset();
  footer.record_count = index_.size();
  DS_RETURN_IF_ERROR(Put(std::string(footer.index_offset - file_size_, '\0')));
  std::string idx;
  idx.reserve(index_.size() * kIndexEntrySize);
  for (const auto& e : index_) {
    PutLE64(&idx, e.offset);
    PutLE64(&idx, e.length);
  }
  footer.index_crc = Crc32c(idx);
  DS_RETURN_IF_ERROR(Put(idx));
  DS_RETURN_IF_ERROR(Put(EncodeFooter(footer)));
  Status s = file_.Close(/*sync=*/true);
  if (!s.ok()) return Fail(s);
  finished_ = true;
  if (summary) {
    summary->size = file_size_;
    summary->records = index_.size();
    summary->payload_bytes = payload_bytes_;
    summary->xxh3 = hasher_.Digest();
  }
  return Status::Ok();
}

void ShardWriter::Abandon() {
  if (finished_) return;
  finished_ = true;
  (void)file_.Close(/*sync=*/false);
  (void)storage_->Remove(path_);
}

// ---- Reading -----------------------------------------------------------------------------------

namespace {

Status CheckRecordLength(uint64_t length, std::string_view where) {
  if (length < kRecordFixedSize + kRecordTrailerSize || length > (1ull << 62)) {
    return Status(Code::kCorruption, fmt::format("{}: invalid record length {}", where, length));
  }
  return Status::Ok();
}

Status CheckHeadLength(uint32_t meta_len, uint64_t length, std::string_view where) {
  if (kRecordFixedSize + uint64_t{meta_len} + kRecordTrailerSize > length) {
    return Status(Code::kCorruption,
                  fmt::format("{}: meta_len {} runs past the record", where, meta_len));
  }
  return Status::Ok();
}

Status CheckRecordLen(const RecordHead& head, uint64_t length, std::string_view where) {
  if (head.record_len != length) {
    return Status(Code::kCorruption,
                  fmt::format("{} (key {}): record_len {} disagrees with the "
                              "index ({})",
                              where, EscapeBytes(head.key), head.record_len, length));
  }
  return Status::Ok();
}

Status CheckDataCrc(const Sample& s, uint32_t stored, std::string_view where) {
  uint32_t crc = 0;
  for (const auto& f : s.fields) crc = Crc32cExtend(crc, f.data.data(), f.data.size());
  if (crc != stored) {
    return Status(Code::kCorruption,
                  fmt::format("{} (key {}): data checksum mismatch", where, EscapeBytes(s.key)));
  }
  return Status::Ok();
}

}  // namespace

Result<Sample> DecodeRecord(const uint8_t* p, uint64_t length, std::string_view where) {
  DS_RETURN_IF_ERROR(CheckRecordLength(length, where));
  DS_ASSIGN_OR_RETURN(uint32_t meta_len, PeekMetaLen(p, where));
  DS_RETURN_IF_ERROR(CheckHeadLength(meta_len, length, where));
  uint64_t head_len = kRecordFixedSize + uint64_t{meta_len};
  DS_ASSIGN_OR_RETURN(RecordHead head, DecodeRecordHead(p, head_len, where));
  DS_RETURN_IF_ERROR(CheckRecordLen(head, length, where));
  Sample s;
  s.key = std::move(head.key);
  s.fields.reserve(head.fields.size());
  const char* pos = reinterpret_cast<const char*>(p) + head.payload_offset();
  for (auto& f : head.fields) {
    s.fields.push_back({std::move(f.name), std::string(pos, f.size)});
    pos += f.size;
  }
  DS_RETURN_IF_ERROR(CheckDataCrc(s, LoadLE32(p + length - kRecordTrailerSize), where));
  return s;
}

// The largest record a remote read takes whole (ReadRecordAt); larger ones are read in pieces.
constexpr uint64_t kWholeRecordRead = 64 << 20;

Result<Sample> ReadRecordAt(const RandomAccessFile& file, uint64_t offset, uint64_t length,
                            std::string_view where) {
  DS_RETURN_IF_ERROR(CheckRecordLength(length, where));
  // A file with no local fd (nfs://): every read is a round trip to the server, so the record,
  // whose length the index gives, is read whole in one request and decoded in memory (one
  // READ per sample instead of four).
  if (file.fd() < 0 && length <= kWholeRecordRead) {
    std::string whole(static_cast<size_t>(length), '\0');
    DS_RETURN_IF_ERROR(file.ReadAt(offset, whole.data(), whole.size(), where));
    return DecodeRecord(reinterpret_cast<const uint8_t*>(whole.data()), length, where);
  }
  // The head first (one small pread nearly always holds it), then each field straight into its
  // own string with one preadv: payload bytes are copied once, out of the page cache.
  constexpr size_t kHeadGuess = 512;
  uint8_t guess[kHeadGuess];
  size_t first = static_cast<size_t>(std::min<uint64_t>(length, kHeadGuess));
  DS_RETURN_IF_ERROR(file.ReadAt(offset, guess, first, where));
  DS_ASSIGN_OR_RETURN(uint32_t meta_len, PeekMetaLen(guess, where));
  DS_RETURN_IF_ERROR(CheckHeadLength(meta_len, length, where));
  uint64_t head_len = kRecordFixedSize + uint64_t{meta_len};
  std::string big;
  const uint8_t* hp = guess;
  if (head_len > first) {
    big.resize(head_len);
    DS_RETURN_IF_ERROR(file.ReadAt(offset, big.data(), head_len, where));
    hp = reinterpret_cast<const uint8_t*>(big.data());
  }
  DS_ASSIGN_OR_RETURN(RecordHead head, DecodeRecordHead(hp, head_len, where));
  DS_RETURN_IF_ERROR(CheckRecordLen(head, length, where));
  Sample s;
  s.key = std::move(head.key);
  s.fields.reserve(head.fields.size());
  uint8_t trailer[kRecordTrailerSize];
  std::vector<iovec> iov;
  iov.reserve(head.fields.size() + 1);
  for (auto& f : head.fields) {
    s.fields.push_back({std::move(f.name), std::string(f.size, '\0')});
    if (f.size > 0) iov.push_back({s.fields.back().data.data(), f.size});
  }
  iov.push_back({trailer, sizeof trailer});
  DS_RETURN_IF_ERROR(file.ReadAtV(iov.data(), iov.size(), offset + head.payload_offset(), where));
  DS_RETURN_IF_ERROR(CheckDataCrc(s, LoadLE32(trailer), where));
  return s;
}

Result<RecordHead> ReadRecordHeadAt(const RandomAccessFile& file, uint64_t offset, uint64_t length,
                                    std::string_view where) {
  if (length < kRecordFixedSize + kRecordTrailerSize) {
    return Status(Code::kCorruption, fmt::format("{}: invalid record length {}", where, length));
  }
  uint8_t fixed[kRecordFixedSize];
  DS_RETURN_IF_ERROR(file.ReadAt(offset, fixed, sizeof fixed, where));
  DS_ASSIGN_OR_RETURN(uint32_t meta_len, PeekMetaLen(fixed, where));
  if (kRecordFixedSize + meta_len + kRecordTrailerSize > length) {
    return Status(Code::kCorruption,
                  fmt::format("{}: meta_len {} runs past the record", where, meta_len));
  }
  std::string buf(kRecordFixedSize + meta_len, '\0');
  DS_RETURN_IF_ERROR(file.ReadAt(offset, buf.data(), buf.size(), where));
  DS_ASSIGN_OR_RETURN(
      RecordHead head,
      DecodeRecordHead(reinterpret_cast<const uint8_t*>(buf.data()), buf.size(), where));
  if (head.record_len != length) {
    return Status(Code::kCorruption,
                  fmt::format("{} (key {}): record_len {} disagrees with the "
                              "index ({})",
                              where, EscapeBytes(head.key), head.record_len, length));
  }
  return head;
}

Result<ShardReader> ShardReader::Open(const std::string& path, std::string display) {
  return Open(*LocalStorage(), path, std::move(display));
}

Result<ShardReader> ShardReader::Open(Storage& storage, const std::string& path,
                                      std::string display) {
  ShardReader r;
  r.display_ = std::move(display);
  DS_ASSIGN_OR_RETURN(r.file_, storage.OpenRead(path));
  r.size_ = r.file_->size();
  const std::string& d = r.display_;
  if (r.size_ < kShardHeaderSize + kFooterSize) {
    return Status(Code::kCorruption, fmt::format("{}: {} bytes is too short for a shard "
                                                 "(truncated?)",
                                                 d, r.size_));
  }
  uint8_t head[kShardHeaderSize];
  DS_RETURN_IF_ERROR(r.file_->ReadAt(0, head, sizeof head, d));
  DS_ASSIGN_OR_RETURN(r.header_, DecodeShardHeader(head, d));
  uint8_t foot[kFooterSize];
  DS_RETURN_IF_ERROR(r.file_->ReadAt(r.size_ - kFooterSize, foot, sizeof foot, d));
  DS_ASSIGN_OR_RETURN(Footer footer, DecodeFooter(foot, d));
  uint64_t index_bytes = footer.record_count * kIndexEntrySize;
  if (footer.record_count > r.size_ / kIndexEntrySize ||
      footer.index_offset + index_bytes + kFooterSize != r.size_) {
    return Status(Code::kCorruption,
                  fmt::format("{}: footer says {} records at offset {}, which "
                              "does not fit a file of {} bytes",
                              d, footer.record_count, footer.index_offset, r.size_));
  }
  std::string idx(index_bytes, '\0');
  DS_RETURN_IF_ERROR(r.file_->ReadAt(footer.index_offset, idx.data(), idx.size(), d));
  if (Crc32c(idx) != footer.index_crc) {
    return Status(Code::kCorruption,
                  fmt::format("{}: index at offset {}: checksum mismatch", d, footer.index_offset));
  }
  r.index_.resize(footer.record_count);
  uint64_t expect = ds::AlignUp(kShardHeaderSize, r.header_.align);
  for (uint64_t i = 0; i < footer.record_count; i++) {
    IndexEntry& e = r.index_[i];
    e.offset = LoadLE64(idx.data() + i * kIndexEntrySize);
    e.length = LoadLE64(idx.data() + i * kIndexEntrySize + 8);
    if (e.offset != expect || e.length < kRecordFixedSize + kRecordTrailerSize ||
        e.offset + e.length > footer.index_offset) {
      return Status(Code::kCorruption, fmt::format("{}: index entry {} (offset {}, length {}) is "
                                                   "inconsistent",
                                                   d, i, e.offset, e.length));
    }
    expect = ds::AlignUp(e.offset + e.length, r.header_.align);
  }
  if (expect != footer.index_offset) {
    return Status(Code::kCorruption, fmt::format("{}: index ends records at {} but the index "
                                                 "starts at {}",
                                                 d, expect, footer.index_offset));
  }
  return r;
}

static std::string Where(const ShardReader& r, uint64_t i) {
  return fmt::format("{}: record {} at offset {}", r.display(), i, r.index()[i].offset);
}

Result<RecordHead> ShardReader::ReadHead(uint64_t i) const {
  return ReadRecordHeadAt(*file_, index_[i].offset, index_[i].length, Where(*this, i));
}

Result<Sample> ShardReader::Read(uint64_t i) const {
  return ReadRecordAt(*file_, index_[i].offset, index_[i].length, Where(*this, i));
}

}  // namespace ds::native
