// The resume journal DST/.dssync-journal (docs/dssync.md, "Journal and resume").
//
// A text file of one entry per line, appended with one WriteAt and a Sync per batch (through the
// storage interface):
//
//   C <src_size> <src_mtime_ns> <offset> <length> <xxh3> <path> <crc>   a chunk of a large file
//                                                                        landed in its tmp file
//   F <src_size> <src_mtime_ns> 0 <size> <xxh3> <path> <crc>             a file was committed
//
// Numbers are decimal, <xxh3> is 16 hex digits (XXH3-64 of the chunk, or of the whole file),
// <path> is the path relative to the staging directory, percent-encoded (EncodePath), and <crc>
// is 8 hex digits, the CRC-32C of the line up to the space before it. A line that fails to parse
// or whose CRC disagrees (a torn append after kill -9) is ignored, so the journal is only ever a
// hint: a chunk entry is trusted only after the tmp file's bytes re-hash to its xxh3 and the
// source's size and mtime still match.
//
// Thread-safety: Journal::Append may be called from any thread; the free functions are pure.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "src/status.h"
#include "src/storage.h"

namespace ds::sync {

// %XX for '%', bytes < 0x21 (space included when encode_space), 0x7f and bytes >= 0x80, so
// any path byte string becomes one printable token. DecodePath inverts it (false on a bad %).
std::string EncodePath(std::string_view path, bool encode_space = true);
bool DecodePath(std::string_view text, std::string* out);

struct JournalEntry {
  char kind = 'C';  // 'C' chunk, 'F' file
  uint64_t src_size = 0;
  int64_t src_mtime_ns = 0;
  uint64_t offset = 0;
  uint64_t length = 0;
  uint64_t xxh3 = 0;
  std::string path;

  bool operator==(const JournalEntry&) const = default;
};

// One line, '\n'-terminated.
std::string FormatEntry(const JournalEntry& e);
// Every well-formed line of `text`; malformed or torn lines are skipped and counted in *bad.
std::vector<JournalEntry> ParseJournal(std::string_view text, size_t* bad = nullptr);

inline constexpr const char* kJournalName = ".dssync-journal";

class Journal {
 public:
  // Opens (creating) DIR/.dssync-journal in `storage` (null: the local backend) for appending
  // and returns the entries already in it.
  static Result<Journal> Open(const std::string& dir, std::vector<JournalEntry>* existing,
                              std::shared_ptr<Storage> storage = nullptr);
  Journal(Journal&& o) noexcept
      : storage_(std::move(o.storage_)),
        file_(std::move(o.file_)),
        path_(std::move(o.path_)),
        end_(o.end_) {}

  // Appends the entries in one write and syncs when `sync`.
  Status Append(const std::vector<JournalEntry>& entries, bool sync);
  // Closes and deletes the journal (the run completed).
  Status Remove();

 private:
  Journal(std::shared_ptr<Storage> storage, std::unique_ptr<RandomWriteFile> file, std::string path,
          uint64_t end)
      : storage_(std::move(storage)), file_(std::move(file)), path_(std::move(path)), end_(end) {}
  std::mutex mu_;
  std::shared_ptr<Storage> storage_;
  std::unique_ptr<RandomWriteFile> file_;
  std::string path_;
  uint64_t end_ = 0;  // where the next line goes; guarded by mu_
};

}  // namespace ds::sync
