// Helpers for unit tests: scratch directories that clean up after themselves, and small
// file utilities. Not thread-safe.
#pragma once

#include <cstddef>
#include <string>

namespace ds::test {

// A fresh directory under $TMPDIR (default /tmp), removed recursively on destruction.
class TempDir {
 public:
  TempDir();
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::string& path() const { return path_; }
  std::string operator/(const std::string& rel) const { return path_ + "/" + rel; }

 private:
  std::string path_;
};

// Writes data to path, creating parent directories.
void WriteFile(const std::string& path, const std::string& data);
std::string ReadFile(const std::string& path);
// Every file of dir (not recursive) as "name\n" + its bytes, in name order: two directories
// compare equal when they hold byte-identical files under the same names.
std::string DirBytes(const std::string& dir);

// The step of the [exhaustive] loops (byte flips, truncations): they visit offsets 0, k, 2k, ...
// and always the last byte. k is $DSPACK_EXHAUSTIVE_STRIDE (default 1: every byte). The
// sanitizer pass of ./test.sh sets a small prime, so each run still flips bytes of every field
// at a fraction of the cost; the plain pass flips every byte.
size_t ExhaustiveStride();
// True if the loop over [0, size) visits offset off under ExhaustiveStride().
bool ExhaustiveVisits(size_t off, size_t size);

}  // namespace ds::test
