// Archives as a sample source (docs/formats/archives.md): .zip (stored and deflated), .tar,
// .tar.gz/.tgz, .tar.zst, .tar.xz, .tar.bz2, through libarchive.
//
// Two passes over the file. Pass 1 (Open) reads headers only and lists regular-file entries:
// paths are normalised (leading "/" and "./" dropped, "//" collapsed), a ".." component is a bad
// input (it could escape on extract), filters apply. Entries are grouped into samples by key
// wherever they sit in the archive (tar and zip of a directory store files in readdir order);
// samples come in the order their first entry appears, fields sorted by name as for
// directories. The same path stored twice (tar -r) is a bad input ("duplicate key").
// Directories are ignored and counted; links and special entries are ignored, counted and
// listed (ignored()); encrypted entries and declared sizes beyond --max-expansion times the
// archive's size are bad inputs. A read error ends the listing: under skip the readable part
// is converted.
// Pass 2 (Load, sequential) streams the entries again, holding the entries of samples that are
// not complete yet: up to kHoldBudget bytes in memory, the rest (and every entry over
// inline_limit) spooled to unnamed temporary files (O_TMPFILE) in `spool_dir`, so memory stays
// bounded whatever the archive. Decompressed bytes beyond max_expansion times the compressed
// bytes consumed stop the run (a zip bomb that lies in its headers).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "formats/sources/source.h"
#include "src/storage.h"

struct archive;

namespace ds {

struct ArchiveOptions {
  DirScanOptions filter;
  double max_expansion = 1000;  // decompressed : compressed
  std::string spool_dir;        // where entries over inline_limit are spooled (OUT)
  uint64_t inline_limit = 1 << 20;
  // Entry names (docs/formats/archives.md#entry-names): by default decoded as the zip spec says
  // (UTF-8 with flag bit 11, else CP437) and as tar's pax headers say, to UTF-8; raw_names keeps
  // a zip name without bit 11 as its stored bytes.
  bool raw_names = false;
};

class ArchiveSource : public SampleSource {
 public:
  // The archive at path, read through storage (any backend: libarchive reads through it).
  static Result<std::unique_ptr<ArchiveSource>> Open(std::shared_ptr<Storage> storage,
                                                     const std::string& path,
                                                     const ArchiveOptions& options,
                                                     const ScanErrorFn& on_error);
  ~ArchiveSource() override;
  const FileTree& tree() const override { return tree_; }
  bool random_access() const override { return false; }
  std::unique_ptr<LoadedSample> Load(uint64_t i) override;
  uint64_t ignored_entries() const override { return ignored_dirs_ + ignored_.size(); }
  // Links and special entries left out, with the reason.
  const std::vector<std::pair<std::string, std::string>>& ignored() const { return ignored_; }

 private:
  struct Reader;
  Status ListEntries(const ScanErrorFn& on_error);
  Result<InputFile> ReadEntry(uint64_t file);
  static constexpr uint64_t kHoldBudget = 64 << 20;

  std::shared_ptr<Storage> storage_;
  std::string path_;
  ArchiveOptions options_;
  FileTree tree_;
  std::vector<std::pair<uint64_t, uint64_t>> order_;  // (archive entry ordinal, file), by ordinal
  std::vector<uint64_t> sample_of_file_;
  uint64_t ignored_dirs_ = 0;
  std::vector<std::pair<std::string, std::string>> ignored_;
  std::unique_ptr<Reader> reader_;  // pass 2
};

// Normalises an archive member path; returns "" for an entry with nothing left (e.g. "./"),
// or kBadInput for a ".." component.
Result<std::string> NormaliseArchivePath(std::string_view path);

}  // namespace ds
