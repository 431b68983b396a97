#include "formats/sources/archive_source.h"

#include <archive.h>
#include <archive_entry.h>
#include <fmt/format.h>
#include <limits.h>
#include <locale.h>
#include <unistd.h>

#include <algorithm>
#include <optional>
#include <unordered_map>
#include <unordered_set>

#include "formats/sample.h"
#include "formats/sources/zip.h"
#include "src/checksum.h"
#include "src/fd.h"
#include "src/human.h"

namespace ds {

// Outside the anonymous namespace: ArchiveSource::Reader, a member class, holds one.
struct ArchiveCloser {
  void operator()(archive* a) const { archive_read_free(a); }
};
using ArchivePtr = std::unique_ptr<archive, ArchiveCloser>;

// libarchive reads the archive through the storage interface: its read, skip and seek callbacks
// over a RandomAccessFile, so an archive on any backend is read the same way (and zip's
// central directory is found by seeking, as with a local file).
struct ArchiveInput {
  std::unique_ptr<RandomAccessFile> file;
  uint64_t pos = 0;
  std::unique_ptr<char[]> buf;
  Status error;  // the backend's read error, which libarchive only knows as "fatal"
};

// An open archive: the input outlives libarchive's handle (declared first, destroyed last).
struct OpenedArchive {
  std::unique_ptr<ArchiveInput> in;
  ArchivePtr a;
  archive* get() const { return a.get(); }
};

namespace {

constexpr size_t kArchiveReadBlock = 1 << 20;

la_ssize_t ArchiveRead(archive* a, void* data, const void** buff) {
  auto* in = static_cast<ArchiveInput*>(data);
  auto n = in->file->ReadSome(in->pos, in->buf.get(), kArchiveReadBlock);
  if (!n.ok()) {
    in->error = n.status();
    archive_set_error(a, n.status().err() != 0 ? n.status().err() : EIO, "%s",
                      n.status().message().c_str());
    return ARCHIVE_FATAL;
  }
  in->pos += *n;
  *buff = in->buf.get();
  return static_cast<la_ssize_t>(*n);
}

la_int64_t ArchiveSkip(archive*, void* data, la_int64_t request) {
  auto* in = static_cast<ArchiveInput*>(data);
  uint64_t left = in->file->size() > in->pos ? in->file->size() - in->pos : 0;
  uint64_t k = std::min<uint64_t>(static_cast<uint64_t>(std::max<la_int64_t>(request, 0)), left);
  in->pos += k;
  return static_cast<la_int64_t>(k);
}

la_int64_t ArchiveSeek(archive*, void* data, la_int64_t offset, int whence) {
  auto* in = static_cast<ArchiveInput*>(data);
  int64_t base = whence == SEEK_SET   ? 0
                 : whence == SEEK_CUR ? static_cast<int64_t>(in->pos)
                                      : static_cast<int64_t>(in->file->size());
  if (base + offset < 0) return ARCHIVE_FATAL;
  in->pos = static_cast<uint64_t>(base + offset);
  return static_cast<la_int64_t>(in->pos);
}

const char* ArchiveMessage(archive* a) {
  const char* msg = archive_error_string(a);
  return msg ? msg : "unreadable archive";
}

// The one place ARCHIVE_* results become a Status. A read error of the backend is its own
// message (the file and the offset), with what was being read.
Status ArchiveError(const OpenedArchive& ar, const std::string& path, std::string_view what) {
  if (!ar.in->error.ok()) {
    return Status(Code::kBadInput, fmt::format("{} ({})", ar.in->error.message(), what),
                  ar.in->error.err());
  }
  archive* a = ar.get();
  return Status(Code::kBadInput,
                fmt::format("{}: {} at byte {}: {}", path, what, archive_filter_bytes(a, -1),
                            ArchiveMessage(a)),
                archive_errno(a));
}

// libarchive converts header names to the current locale's charset; in the C locale a UTF-8
// name (a zip's flag bit 11, a pax header) cannot be converted, came back NULL, and its entry was
// dropped. Every libarchive call of a source runs under C.UTF-8 (uselocale: this thread only,
// the process's locale untouched), so names come out as UTF-8 whatever the user's locale.
class Utf8Locale {
 public:
  Utf8Locale() : loc_(::newlocale(LC_CTYPE_MASK, "C.UTF-8", nullptr)) {
    if (loc_ != nullptr) old_ = ::uselocale(loc_);
  }
  ~Utf8Locale() {
    if (loc_ == nullptr) return;
    ::uselocale(old_);
    ::freelocale(loc_);
  }
  Utf8Locale(const Utf8Locale&) = delete;
  Utf8Locale& operator=(const Utf8Locale&) = delete;

 private:
  locale_t loc_;
  locale_t old_ = LC_GLOBAL_LOCALE;
};

// An entry's name as UTF-8, or (a name that is not valid in its declared charset, or a raw
// CP437 name under raw_names) its stored bytes; nullopt when libarchive has neither.
std::optional<std::string> EntryName(archive_entry* e) {
  if (const char* u = archive_entry_pathname_utf8(e)) return std::string(u);
  if (const char* m = archive_entry_pathname(e)) return std::string(m);
  return std::nullopt;
}

// True when a plain (uncompressed) tar failed past the data of its last entry, and the file
// holds only zeros from there: only its end-of-archive blocks or record padding were cut, and
// every entry was read with its header checksum verified. A compressed stream cut anywhere is
// never this: its own trailer check (gzip, bzip2, xz, zstd) was not reached.
bool OnlyEndZerosCut(const OpenedArchive& ar, uint64_t data_end) {
  archive* a = ar.get();
  if (data_end == 0 || !ar.in->error.ok() || archive_filter_count(a) != 1 ||
      archive_filter_code(a, 0) != ARCHIVE_FILTER_NONE ||
      (archive_format(a) & ARCHIVE_FORMAT_BASE_MASK) != ARCHIVE_FORMAT_TAR) {
    return false;
  }
  const RandomAccessFile& f = *ar.in->file;
  // At most the two end blocks and a 10 KiB record's padding can be missing.
  if (f.size() < data_end || f.size() - data_end > 20 * 512) return false;
  std::string tail(f.size() - data_end, '\0');
  if (!f.ReadAt(data_end, tail.data(), tail.size()).ok()) return false;
  return tail.find_first_not_of('\0') == std::string::npos;
}

Result<OpenedArchive> OpenArchive(Storage& storage, const std::string& path, bool raw_names) {
  OpenedArchive ar;
  ar.in = std::make_unique<ArchiveInput>();
  auto file = storage.OpenRead(path);
  if (!file.ok()) {
    Code code = file.status().code() == Code::kNotFound ? Code::kNotFound : Code::kBadInput;
    return Status(code, file.status().message(), file.status().err());
  }
  ar.in->file = std::move(file).value();
  // libarchive reads an empty file as an archive of no entries; unzip, tar and Python's
  // zipfile/tarfile refuse it, and so do we: a failed download must not read as success.
  if (ar.in->file->size() == 0) {
    return Status(Code::kBadInput,
                  path + ": not an archive: 0 bytes (an interrupted download or copy?)");
  }
  ar.in->buf.reset(new char[kArchiveReadBlock]);
  ar.a.reset(archive_read_new());
  archive* a = ar.get();
  archive_read_support_filter_all(a);
  archive_read_support_format_all(a);
  // Zip names without flag bit 11 are CP437 (APPNOTE.TXT appendix D; Python's zipfile agrees).
  if (!raw_names) archive_read_set_format_option(a, "zip", "hdrcharset", "CP437");
  // Past tar's end-of-archive blocks to the end of the stream: a compressed stream is then
  // decompressed to its end, so its trailer (gzip, bzip2, xz, zstd) is read and a cut one is an
  // error, not a silent success; members after a first end marker (tars concatenated with cat)
  // are read, not dropped, as GNU tar --ignore-zeros does. docs/formats/archives.md.
  archive_read_set_format_option(a, "tar", "read_concatenated_archives", "1");
  archive_read_set_read_callback(a, ArchiveRead);
  archive_read_set_skip_callback(a, ArchiveSkip);
  archive_read_set_seek_callback(a, ArchiveSeek);
  archive_read_set_callback_data(a, ar.in.get());
  // libarchive may take a failed read while it bids on the format for an empty stream.
  if (archive_read_open1(a) != ARCHIVE_OK || !ar.in->error.ok()) {
    return ArchiveError(ar, path, "cannot open");
  }
  return ar;
}

}  // namespace

Result<std::string> NormaliseArchivePath(std::string_view p) {
  std::string out;
  size_t pos = 0;
  while (pos <= p.size()) {
    size_t slash = p.find('/', pos);
    if (slash == std::string_view::npos) slash = p.size();
    std::string_view c = p.substr(pos, slash - pos);
    pos = slash + 1;
    if (c.empty() || c == ".") continue;
    if (c == "..") {
      return Status(Code::kBadInput, fmt::format("'{}': a '..' component could escape the "
                                                 "extraction directory; entry refused",
                                                 EscapeBytes(p)));
    }
    if (c.size() > NAME_MAX) {  // could never be extracted: ENAMETOOLONG on every file system
      return Status(Code::kBadInput,
                    fmt::format("'{}': a path component of {} bytes; file systems allow {} "
                                "(NAME_MAX); entry refused",
                                EscapeBytes(p), c.size(), NAME_MAX));
    }
    if (!out.empty()) out += '/';
    out.append(c);
  }
  return out;
}

struct ArchiveSource::Reader {
  OpenedArchive a;
  size_t next = 0;          // next position in order_ to read
  uint64_t next_entry = 0;  // ordinal of the next header in the archive
  uint64_t bytes_out = 0;
  uint64_t held_bytes = 0;                               // in-memory bytes of held entries
  std::unordered_map<uint64_t, Result<InputFile>> held;  // file -> content, until its sample
  Status dead;  // sticky: the archive cannot be read further
};

ArchiveSource::~ArchiveSource() = default;

Result<std::unique_ptr<ArchiveSource>> ArchiveSource::Open(std::shared_ptr<Storage> storage,
                                                           const std::string& path,
                                                           const ArchiveOptions& options,
                                                           const ScanErrorFn& on_error) {
  std::unique_ptr<ArchiveSource> s(new ArchiveSource());
  s->storage_ = std::move(storage);
  s->path_ = path;
  s->options_ = options;
  s->tree_ = FileTree(path);
  DS_RETURN_IF_ERROR(s->ListEntries(on_error));
  s->tree_.ShrinkToFit();
  return s;
}

Status ArchiveSource::ListEntries(const ScanErrorFn& on_error) {
  Utf8Locale utf8;
  DS_ASSIGN_OR_RETURN(OpenedArchive a, OpenArchive(*storage_, path_, options_.raw_names));
  // A zip's entry list is its central directory: read it ourselves too, so a cut directory or
  // overlapping entries (which libarchive reads as fewer names, silently) are errors.
  if (LooksLikeZip(*storage_, path_)) {
    DS_RETURN_IF_ERROR(
        ZipArchive::Open(*storage_, path_, ZipArchive::OpenMode::kStructure).status());
  }
  const uint64_t archive_size = a.in->file->size();
  struct Listed {
    uint64_t ord;
    uint64_t sample;
    std::string path;
  };
  std::vector<Listed> listed;
  std::unordered_map<uint64_t, uint64_t> sample_of_key;  // xxh3(key) -> sample
  std::vector<uint64_t> first_listed;                    // sample -> its first entry in listed
  std::unordered_set<uint64_t> paths;                    // xxh3(path), to find paths stored twice
  uint64_t declared = 0;
  uint64_t data_end = 0;
  Status stop;
  for (uint64_t ord = 0;; ord++) {
    archive_entry* e = nullptr;
    int r = archive_read_next_header(a.get(), &e);
    if (r == ARCHIVE_EOF && a.in->error.ok()) break;
    if (r == ARCHIVE_RETRY) r = archive_read_next_header(a.get(), &e);
    if (r < ARCHIVE_WARN || !a.in->error.ok()) {
      if (OnlyEndZerosCut(a, data_end)) break;  // every entry read: GNU tar accepts it too
      // Truncated or corrupt: the rest is unreadable. Under skip, keep what was listed.
      stop = on_error(path_, ArchiveError(a, path_, fmt::format("entry #{}", ord)));
      break;
    }
    // Where this entry's data ends in an uncompressed tar, for OnlyEndZerosCut.
    data_end = static_cast<uint64_t>(archive_filter_bytes(a.get(), 0)) +
               (archive_entry_size_is_set(e) ? (archive_entry_size(e) + 511) / 512 * 512 : 0);
    std::optional<std::string> decoded = EntryName(e);
    if (!decoded) {  // never skipped unlisted: an error, or a listed skip under --on-error skip
      std::string id = fmt::format("entry #{}", ord);
      DS_RETURN_IF_ERROR(on_error(
          id, Status(Code::kBadInput,
                     fmt::format("{}: {}: its name cannot be decoded ({}); pass `raw_names` to "
                                 "keep the stored bytes",
                                 path_, id, ArchiveMessage(a.get())))));
      continue;
    }
    std::string name = std::move(*decoded);
    mode_t type = archive_entry_filetype(e);
    if (type == AE_IFDIR) {
      ignored_dirs_++;
      continue;
    }
    // WebDataset metadata members ("__index__", dspack's "__dspack_index__") are not samples:
    // skipped as WebDataset's tariterators skip them (docs/formats/archives.md).
    if (name.find('/') == std::string::npos && name.size() >= 4 && name.rfind("__", 0) == 0 &&
        name.compare(name.size() - 2, 2, "__") == 0) {
      ignored_dirs_++;
      continue;
    }
    if (type != AE_IFREG || archive_entry_hardlink(e) != nullptr) {
      const char* what = archive_entry_hardlink(e) ? "hard link"
                         : type == AE_IFLNK        ? "symbolic link"
                                                   : "special file";
      ignored_.emplace_back(name, fmt::format("{}: {} in the archive; not stored", name, what));
      continue;
    }
    if (archive_entry_is_encrypted(e)) {
      DS_RETURN_IF_ERROR(
          on_error(name, Status(Code::kBadInput, fmt::format("{}: entry '{}' is encrypted; decrypt "
                                                             "the archive first",
                                                             path_, EscapeBytes(name)))));
      continue;
    }
    auto norm = NormaliseArchivePath(name);
    if (!norm.ok()) {
      DS_RETURN_IF_ERROR(on_error(name, norm.status().Prefixed(path_)));
      continue;
    }
    if (norm->empty() || !PathWanted(options_.filter, *norm)) continue;
    if (!paths.insert(Xxh3_64(*norm)).second) {
      DS_RETURN_IF_ERROR(on_error(
          *norm, Status(Code::kBadInput,
                        fmt::format("{}: duplicate key: '{}' is stored twice (entry #{}); the "
                                    "later copy is refused",
                                    path_, EscapeBytes(*norm), ord))));
      continue;
    }
    std::string_view key = SplitPath(*norm).key;
    auto [it, added] = sample_of_key.emplace(Xxh3_64(key), first_listed.size());
    if (added) {
      first_listed.push_back(listed.size());
    } else if (SplitPath(listed[first_listed[it->second]].path).key != key) {
      return Status(
          Code::kBadInput,
          fmt::format("{}: keys '{}' and '{}' collide in a 64-bit hash", path_, EscapeBytes(key),
                      EscapeBytes(listed[first_listed[it->second]].path)));
    }
    if (archive_entry_size_is_set(e)) declared += static_cast<uint64_t>(archive_entry_size(e));
    if (archive_size > 0 && declared > options_.max_expansion * archive_size + (64 << 20)) {
      return Status(Code::kBadInput,
                    fmt::format("{}: entries declare {} from a {} archive, beyond the expansion "
                                "limit of {}x (a zip bomb?); raise `max_expansion` if it is "
                                "genuine",
                                path_, FormatBytes(declared), FormatBytes(archive_size),
                                options_.max_expansion));
    }
    listed.push_back({ord, it->second, std::move(norm).value()});
  }
  DS_RETURN_IF_ERROR(stop);
  // Samples in order of first appearance; fields by name, as in a directory.
  std::vector<uint64_t> idx(listed.size());
  for (uint64_t i = 0; i < idx.size(); i++) idx[i] = i;
  std::sort(idx.begin(), idx.end(), [&](uint64_t x, uint64_t y) {
    if (listed[x].sample != listed[y].sample) return listed[x].sample < listed[y].sample;
    return SplitPath(listed[x].path).field < SplitPath(listed[y].path).field;
  });
  order_.reserve(listed.size());
  sample_of_file_.reserve(listed.size());
  for (uint64_t file = 0; file < idx.size(); file++) {
    const Listed& l = listed[idx[file]];
    tree_.Append(l.path);
    order_.emplace_back(l.ord, file);
    sample_of_file_.push_back(l.sample);
  }
  std::sort(order_.begin(), order_.end());
  return Status::Ok();
}

// Reads the entry at order_[reader_->next] (whose header is current) into memory or a spool.
Result<InputFile> ArchiveSource::ReadEntry(uint64_t file) {
  Reader& rd = *reader_;
  std::string path(tree_.path(file));
  archive_entry* e = nullptr;
  uint64_t want = order_[rd.next].first;
  while (rd.next_entry <= want) {
    int r = archive_read_next_header(rd.a.get(), &e);
    if (r == ARCHIVE_RETRY) r = archive_read_next_header(rd.a.get(), &e);
    if (!rd.a.in->error.ok()) {
      rd.dead = ArchiveError(rd.a, path_, fmt::format("entry #{}", rd.next_entry));
      return rd.dead;
    }
    if (r == ARCHIVE_EOF) {
      rd.dead = Status(Code::kBadInput, fmt::format("{}: ends before entry #{} ({}); it changed "
                                                    "since it was listed",
                                                    path_, want, EscapeBytes(path)));
      return rd.dead;
    }
    if (r < ARCHIVE_WARN) {
      rd.dead = ArchiveError(rd.a, path_, fmt::format("entry #{}", rd.next_entry));
      return rd.dead;
    }
    rd.next_entry++;
  }
  uint64_t size = archive_entry_size_is_set(e) ? static_cast<uint64_t>(archive_entry_size(e)) : 0;
  auto data_error = [&](la_ssize_t r) {
    Status s = ArchiveError(rd.a, path_, "reading entry '" + EscapeBytes(path) + "'");
    if (r == ARCHIVE_FATAL || !rd.a.in->error.ok()) rd.dead = s;
    return s;
  };
  auto check_ratio = [&]() -> Status {
    uint64_t in = static_cast<uint64_t>(archive_filter_bytes(rd.a.get(), -1));
    if (rd.bytes_out > options_.max_expansion * in + (64 << 20)) {
      rd.dead = Status(Code::kBadInput,
                       fmt::format("{}: entry '{}' expands beyond {}x the compressed bytes read "
                                   "(a zip bomb?); raise `max_expansion` if it is genuine",
                                   path_, EscapeBytes(path), options_.max_expansion));
      return rd.dead;
    }
    return Status::Ok();
  };
  if (size <= options_.inline_limit && rd.held_bytes + size <= kHoldBudget) {
    std::unique_ptr<char[]> buf(new char[size + 1]);
    uint64_t got = 0;
    for (;;) {
      la_ssize_t r = archive_read_data(rd.a.get(), buf.get() + got, size + 1 - got);
      if (r < 0 || !rd.a.in->error.ok()) return data_error(r);
      if (r == 0) break;
      got += static_cast<uint64_t>(r);
      rd.bytes_out += static_cast<uint64_t>(r);
      if (got > size) break;
    }
    DS_RETURN_IF_ERROR(check_ratio());
    if (got != size) {
      return Status(Code::kBadInput, fmt::format("{}: entry '{}' holds {} bytes, its header says "
                                                 "{}",
                                                 path_, EscapeBytes(path), got, size));
    }
    rd.held_bytes += size;
    return InputFile::FromMemory(path, std::move(buf), size);
  }
  // Big entry: spool to an unnamed file next to the output, then stream it from there.
  DS_ASSIGN_OR_RETURN(OwnedFd spool, OpenScratchFile(options_.spool_dir));
  const int fd = spool.get();
  std::unique_ptr<char[]> buf(new char[1 << 20]);
  uint64_t got = 0;
  for (;;) {
    la_ssize_t r = archive_read_data(rd.a.get(), buf.get(), 1 << 20);
    if (r < 0 || !rd.a.in->error.ok()) return data_error(r);
    if (r == 0) break;
    got += static_cast<uint64_t>(r);
    rd.bytes_out += static_cast<uint64_t>(r);
    DS_RETURN_IF_ERROR(check_ratio());
    DS_RETURN_IF_ERROR(WriteFull(fd, buf.get(), static_cast<size_t>(r), "spool file"));
  }
  if (got != size) {
    return Status(Code::kBadInput, fmt::format("{}: entry '{}' holds {} bytes, its header says {}",
                                               path_, EscapeBytes(path), got, size));
  }
  if (::lseek(fd, 0, SEEK_SET) != 0) return Status::FromErrno(errno, "spool file: lseek");
  return InputFile::FromFile(path, LocalFileFromFd(std::move(spool), "spool file", size), size);
}

std::unique_ptr<LoadedSample> ArchiveSource::Load(uint64_t i) {
  auto l = std::make_unique<LoadedSample>();
  l->sample = i;
  Utf8Locale utf8;
  if (!reader_) {
    reader_ = std::make_unique<Reader>();
    auto a = OpenArchive(*storage_, path_, options_.raw_names);
    if (a.ok())
      reader_->a = std::move(a).value();
    else
      reader_->dead = a.status();
  }
  Reader& rd = *reader_;
  // Not a structured binding: the lambdas below capture it (clang 14 cannot).
  const std::pair<uint64_t, uint64_t> files = tree_.files_of(i);
  const uint64_t begin = files.first, end = files.second;
  // Read entries in archive order until every file of sample i is held. Entries of earlier
  // samples (before a resume point) are passed over unread.
  auto complete = [&] {
    for (uint64_t f = begin; f < end; f++) {
      if (!rd.held.count(f)) return false;
    }
    return true;
  };
  while (!complete() && rd.dead.ok() && rd.next < order_.size()) {
    uint64_t file = order_[rd.next].second;
    if (sample_of_file_[file] < i) {
      rd.next++;  // its header is skipped by the next ReadEntry
      continue;
    }
    rd.held.emplace(file, ReadEntry(file));
    rd.next++;
  }
  for (uint64_t f = begin; f < end; f++) {
    auto it = rd.held.find(f);
    Status st = it == rd.held.end() ? rd.dead : it->second.status();
    if (st.ok() && it == rd.held.end()) {
      st = Status(Code::kBadInput, path_ + ": entry missing on the second read");
    }
    if (!st.ok()) {
      if (l->status.ok()) {
        l->status = st;
        l->bad_path = std::string(tree_.path(f));
      }
    } else {
      InputFile in = std::move(it->second).value();
      if (in.is_inline()) rd.held_bytes -= in.size();
      l->files.push_back(std::move(in));
    }
    if (it != rd.held.end()) rd.held.erase(it);
  }
  return l;
}

}  // namespace ds
