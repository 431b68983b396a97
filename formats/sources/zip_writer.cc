// The zip writer (docs/formats/zip.md, "What WriteZip writes"). The reader is in zip.cc.
#include <fmt/format.h>
#include <zlib.h>

#include <algorithm>
#include <cstring>

#include "formats/sources/zip.h"
#include "src/endian.h"

namespace ds {

namespace {

using namespace zip;

constexpr uint16_t kMadeBy = (3 << 8) | 63;  // Unix, spec version 6.3 (docs/formats/zip.md)
constexpr uint16_t kNeeded = 20;             // deflate
constexpr uint16_t kNeededZip64 = 45;
constexpr uint16_t kDosTime = 0;                        // 00:00:00
constexpr uint16_t kDosDate = (0 << 9) | (1 << 5) | 1;  // 1980-01-01: output is reproducible
constexpr uint32_t kExternalAttr = 0100644u << 16;      // regular file, rw-r--r--
constexpr size_t kBufferSize = 1 << 20;                 // output buffer
constexpr size_t kChunk = 256 << 10;                    // input chunk and deflate output

struct Entry {
  uint64_t offset = 0;  // of the local header
  uint64_t csize = 0;
  uint64_t size = 0;
  uint32_t crc = 0;
  uint16_t method = 0;
  bool local_zip64 = false;
};

// Not thread-safe. Appends through buf_; bytes before base_ are in the file already.
class Writer {
 public:
  explicit Writer(std::unique_ptr<RandomWriteFile> file)
      : file_(std::move(file)), name_(file_->name()) {}
  ~Writer() {
    if (z_ok_) deflateEnd(&z_);
  }

  Status Init(int level) {
    z_ok_ = deflateInit2(&z_, level, Z_DEFLATED, -MAX_WBITS, 8, Z_DEFAULT_STRATEGY) == Z_OK;
    return z_ok_ ? Status::Ok() : Status(Code::kInternal, "deflateInit2 failed");
  }
  uint64_t size() const { return base_ + buf_.size(); }
  const std::vector<Entry>& entries() const { return entries_; }

  // Writes one member from `in`. REQUIRES: method is kMethodStore or kMethodDeflate.
  Status AddMember(std::string_view name, InputFile* in, uint16_t method);
  // Drops the last member (to store it instead).
  Status DropLast();
  Status Finish(const FileTree& tree, bool* zip64);

 private:
  Status Append(const void* p, size_t n);
  Status Patch(uint64_t offset, const std::string& bytes);
  Status Flush();
  Status Deflate(const char* p, size_t n, int flush);

  std::unique_ptr<RandomWriteFile> file_;
  std::string name_;
  std::string buf_;
  uint64_t base_ = 0;
  z_stream z_{};
  bool z_ok_ = false;
  std::string chunk_;     // input chunk
  std::string deflated_;  // deflate's output chunk
  std::vector<Entry> entries_;
};

Status Writer::Append(const void* p, size_t n) {
  if (buf_.size() + n > kBufferSize) DS_RETURN_IF_ERROR(Flush());
  if (n >= kBufferSize) {
    DS_RETURN_IF_ERROR(file_->WriteAt(base_, p, n));
    base_ += n;
    return Status::Ok();
  }
  buf_.append(static_cast<const char*>(p), n);
  return Status::Ok();
}

Status Writer::Flush() {
  DS_RETURN_IF_ERROR(file_->WriteAt(base_, buf_.data(), buf_.size()));
  base_ += buf_.size();
  buf_.clear();
  return Status::Ok();
}

// Overwrites bytes already appended: in the file for those before base_, in buf_ for the rest.
Status Writer::Patch(uint64_t offset, const std::string& bytes) {
  uint64_t end = offset + bytes.size();
  if (offset < base_) {
    uint64_t n = std::min(end, base_) - offset;
    DS_RETURN_IF_ERROR(file_->WriteAt(offset, bytes.data(), n));
  }
  if (end > base_) {
    uint64_t from = std::max(offset, base_);
    std::memcpy(&buf_[from - base_], bytes.data() + (from - offset), end - from);
  }
  return Status::Ok();
}

Status Writer::Deflate(const char* p, size_t n, int flush) {
  std::string& out = deflated_;
  out.resize(kChunk);
  z_.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(p));
  z_.avail_in = static_cast<uInt>(n);
  int rc;
  do {
    z_.next_out = reinterpret_cast<Bytef*>(out.data());
    z_.avail_out = static_cast<uInt>(out.size());
    rc = deflate(&z_, flush);
    if (rc == Z_STREAM_ERROR) return Status(Code::kInternal, name_ + ": deflate failed");
    DS_RETURN_IF_ERROR(Append(out.data(), out.size() - z_.avail_out));
  } while (z_.avail_out == 0 || (flush == Z_FINISH && rc != Z_STREAM_END));
  return Status::Ok();
}

Status Writer::AddMember(std::string_view name, InputFile* in, uint16_t method) {
  if (name.size() > kMax16) {
    return Status(Code::kBadInput, fmt::format("{}: name of {} bytes, more than a zip holds "
                                               "({}): shorten it",
                                               name, name.size(), kMax16));
  }
  Entry e;
  e.offset = size();
  e.size = in->size();
  e.method = method;
  if (method == kMethodDeflate) deflateReset(&z_);
  // The local header cannot grow later, so it takes Zip64 sizes whenever they might be needed.
  uint64_t bound = method == kMethodDeflate ? deflateBound(&z_, e.size) : e.size;
  e.local_zip64 = e.size >= kMax32 || bound >= kMax32;
  bool utf8 = std::any_of(name.begin(), name.end(), [](char c) { return c & 0x80; });
  std::string h;
  PutLE32(&h, kLocalSig);
  PutLE16(&h, e.local_zip64 ? kNeededZip64 : kNeeded);
  PutLE16(&h, utf8 ? kFlagUtf8 : 0);
  PutLE16(&h, method);
  PutLE16(&h, kDosTime);
  PutLE16(&h, kDosDate);
  PutLE32(&h, 0);                           // crc, patched below
  PutLE32(&h, e.local_zip64 ? kMax32 : 0);  // compressed size, patched below
  PutLE32(&h, e.local_zip64 ? kMax32 : static_cast<uint32_t>(e.size));
  PutLE16(&h, static_cast<uint16_t>(name.size()));
  PutLE16(&h, e.local_zip64 ? 20 : 0);
  h += name;
  if (e.local_zip64) {
    PutLE16(&h, kZip64ExtraId);
    PutLE16(&h, 16);
    PutLE64(&h, e.size);
    PutLE64(&h, 0);  // compressed size, patched below
  }
  DS_RETURN_IF_ERROR(Append(h.data(), h.size()));
  uint64_t data_start = size();
  uLong crc = crc32_z(0, nullptr, 0);
  std::string& chunk = chunk_;
  chunk.resize(kChunk);
  for (;;) {
    size_t n;
    if (in->is_inline()) {
      n = in->data().size();
      std::memcpy(chunk.data(), in->data().data(), n);
    } else {
      DS_ASSIGN_OR_RETURN(n, in->ReadChunk(chunk.data(), chunk.size()));
    }
    crc = crc32_z(crc, reinterpret_cast<const Bytef*>(chunk.data()), n);
    if (method == kMethodDeflate) {
      DS_RETURN_IF_ERROR(
          Deflate(chunk.data(), n, n == 0 || in->is_inline() ? Z_FINISH : Z_NO_FLUSH));
    } else {
      DS_RETURN_IF_ERROR(Append(chunk.data(), n));
    }
    if (n == 0 || in->is_inline()) break;
  }
  e.crc = static_cast<uint32_t>(crc);
  e.csize = size() - data_start;
  std::string v;
  PutLE32(&v, e.crc);
  DS_RETURN_IF_ERROR(Patch(e.offset + 14, v));
  v.clear();
  if (e.local_zip64) {
    PutLE64(&v, e.csize);
    DS_RETURN_IF_ERROR(Patch(e.offset + kLocalSize + name.size() + 12, v));
  } else {
    PutLE32(&v, static_cast<uint32_t>(e.csize));
    DS_RETURN_IF_ERROR(Patch(e.offset + 18, v));
  }
  entries_.push_back(e);
  return Status::Ok();
}

Status Writer::DropLast() {
  uint64_t offset = entries_.back().offset;
  entries_.pop_back();
  if (offset >= base_) {
    buf_.resize(offset - base_);
    return Status::Ok();
  }
  buf_.clear();
  base_ = offset;
  return file_->Truncate(offset);
}

Status Writer::Finish(const FileTree& tree, bool* zip64) {
  const uint64_t cd_offset = size();
  for (uint64_t i = 0; i < entries_.size(); i++) {
    const Entry& e = entries_[i];
    std::string_view name = tree.path(i);
    std::string x;  // Zip64 extra: the fields that do not fit, in this order
    if (e.size >= kMax32) PutLE64(&x, e.size);
    if (e.csize >= kMax32) PutLE64(&x, e.csize);
    if (e.offset >= kMax32) PutLE64(&x, e.offset);
    bool utf8 = std::any_of(name.begin(), name.end(), [](char c) { return c & 0x80; });
    std::string h;
    PutLE32(&h, kCentralSig);
    PutLE16(&h, kMadeBy);
    PutLE16(&h, x.empty() && !e.local_zip64 ? kNeeded : kNeededZip64);
    PutLE16(&h, utf8 ? kFlagUtf8 : 0);
    PutLE16(&h, e.method);
    PutLE16(&h, kDosTime);
    PutLE16(&h, kDosDate);
    PutLE32(&h, e.crc);
    PutLE32(&h, static_cast<uint32_t>(std::min<uint64_t>(e.csize, kMax32)));
    PutLE32(&h, static_cast<uint32_t>(std::min<uint64_t>(e.size, kMax32)));
    PutLE16(&h, static_cast<uint16_t>(name.size()));
    PutLE16(&h, static_cast<uint16_t>(x.empty() ? 0 : 4 + x.size()));
    PutLE16(&h, 0);  // comment
    PutLE16(&h, 0);  // disk
    PutLE16(&h, 0);  // internal attributes
    PutLE32(&h, kExternalAttr);
    PutLE32(&h, static_cast<uint32_t>(std::min<uint64_t>(e.offset, kMax32)));
    h += name;
    if (!x.empty()) {
      PutLE16(&h, kZip64ExtraId);
      PutLE16(&h, static_cast<uint16_t>(x.size()));
      h += x;
    }
    DS_RETURN_IF_ERROR(Append(h.data(), h.size()));
  }
  const uint64_t cd_size = size() - cd_offset, n = entries_.size();
  *zip64 = n >= kMax16 || cd_size >= kMax32 || cd_offset >= kMax32;
  std::string t;
  if (*zip64) {
    uint64_t rec = size();
    PutLE32(&t, kEocd64Sig);
    PutLE64(&t, kEocd64Size - 12);  // the size of the rest of the record
    PutLE16(&t, kMadeBy);
    PutLE16(&t, kNeededZip64);
    PutLE32(&t, 0);  // this disk
    PutLE32(&t, 0);  // disk with the central directory
    PutLE64(&t, n);
    PutLE64(&t, n);
    PutLE64(&t, cd_size);
    PutLE64(&t, cd_offset);
    PutLE32(&t, kLocator64Sig);
    PutLE32(&t, 0);  // disk with the Zip64 end record
    PutLE64(&t, rec);
    PutLE32(&t, 1);  // disks
  }
  PutLE32(&t, kEocdSig);
  PutLE16(&t, 0);
  PutLE16(&t, 0);
  PutLE16(&t, static_cast<uint16_t>(std::min<uint64_t>(n, kMax16)));
  PutLE16(&t, static_cast<uint16_t>(std::min<uint64_t>(n, kMax16)));
  PutLE32(&t, static_cast<uint32_t>(std::min<uint64_t>(cd_size, kMax32)));
  PutLE32(&t, static_cast<uint32_t>(std::min<uint64_t>(cd_offset, kMax32)));
  PutLE16(&t, 0);  // comment
  DS_RETURN_IF_ERROR(Append(t.data(), t.size()));
  DS_RETURN_IF_ERROR(Flush());
  DS_RETURN_IF_ERROR(file_->Sync());
  return file_->Close();
}

std::string DirOf(const std::string& path) {
  size_t slash = path.rfind('/');
  return slash == std::string::npos ? "." : slash == 0 ? "/" : path.substr(0, slash);
}

Status WriteTree(Storage& src, const FileTree& tree, Storage& dst, const std::string& tmp,
                 const ZipWriteOptions& options, ZipWriteSummary* summary) {
  DS_ASSIGN_OR_RETURN(auto out, dst.OpenWrite(tmp, WriteMode::kTruncate));
  Writer w(std::move(out));
  DS_RETURN_IF_ERROR(w.Init(options.level));
  for (uint64_t f = 0; f < tree.file_count(); f++) {
    std::string rel(tree.path(f));
    auto in = InputFile::Open(src, tree.root(), rel, 0);  // only empty files are read whole
    if (!in.ok()) return in.status().Prefixed(tree.root());
    uint16_t method = options.deflate && in->size() > 0 ? kMethodDeflate : kMethodStore;
    DS_RETURN_IF_ERROR(w.AddMember(rel, &*in, method));
    const Entry& e = w.entries().back();
    if (method == kMethodDeflate && e.csize >= e.size) {
      // As zip -r: a member deflate does not shrink is stored instead.
      DS_RETURN_IF_ERROR(w.DropLast());
      in = InputFile::Open(src, tree.root(), rel, 0);
      if (!in.ok()) return in.status().Prefixed(tree.root());
      DS_RETURN_IF_ERROR(w.AddMember(rel, &*in, kMethodStore));
    }
    summary->payload_bytes += w.entries().back().size;
  }
  DS_RETURN_IF_ERROR(w.Finish(tree, &summary->zip64));
  summary->members = tree.file_count();
  summary->zip_bytes = w.size();
  return Status::Ok();
}

}  // namespace

Status WriteZip(const std::string& src_dir, const std::string& zip_path,
                const ZipWriteOptions& options, ZipWriteSummary* summary) {
  if (options.deflate && (options.level < 0 || options.level > 9)) {
    return Status(Code::kInvalidArgument,
                  fmt::format("zip level {}: want 0 (fastest) to 9 (smallest)", options.level));
  }
  DS_ASSIGN_OR_RETURN(StorageRef src, OpenStorage(src_dir));
  DS_ASSIGN_OR_RETURN(StorageRef dst, OpenStorage(zip_path));
  DS_ASSIGN_OR_RETURN(FileTree tree, FileTree::Scan(*src.storage, src.path, {},
                                                    [&](std::string_view, const Status& s) {
                                                      return s.Prefixed(src_dir);
                                                    }));
  ZipWriteSummary unused;
  std::string tmp = dst.path + ".tmp";
  Status s = WriteTree(*src.storage, tree, *dst.storage, tmp, options, summary ? summary : &unused);
  if (s.ok()) s = dst.storage->Rename(tmp, dst.path);
  if (!s.ok()) {
    (void)dst.storage->Remove(tmp);
    return s;
  }
  return dst.storage->SyncDir(DirOf(dst.path));
}

}  // namespace ds
