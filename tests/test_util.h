// Helpers for unit tests: scratch directories that clean up after themselves, and small
// file utilities. Not thread-safe.
#pragma once

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

}  // namespace ds::test
