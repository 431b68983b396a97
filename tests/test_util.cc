#include "test_util.h"

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <stdexcept>

namespace ds::test {

TempDir::TempDir() {
  const char* base = std::getenv("TMPDIR");
  std::string tmpl = std::string(base ? base : "/tmp") + "/dspack-test-XXXXXX";
  if (!::mkdtemp(tmpl.data())) throw std::runtime_error("mkdtemp failed");
  path_ = tmpl;
}

TempDir::~TempDir() {
  std::error_code ec;
  std::filesystem::remove_all(path_, ec);
}

void WriteFile(const std::string& path, const std::string& data) {
  std::filesystem::create_directories(std::filesystem::path(path).parent_path());
  std::ofstream f(path, std::ios::binary);
  f.write(data.data(), static_cast<std::streamsize>(data.size()));
  if (!f) throw std::runtime_error("cannot write " + path);
}

std::string DirBytes(const std::string& dir) {
  std::set<std::string> names;
  for (const auto& e : std::filesystem::directory_iterator(dir)) names.insert(e.path().filename());
  std::string all;
  for (const auto& n : names) all += n + "\n" + ReadFile(dir + "/" + n);
  return all;
}

std::string ReadFile(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) throw std::runtime_error("cannot read " + path);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

size_t ExhaustiveStride() {
  const char* v = std::getenv("DSPACK_EXHAUSTIVE_STRIDE");
  if (v == nullptr || *v == '\0') return 1;
  unsigned long k = std::strtoul(v, nullptr, 10);
  if (k == 0) throw std::runtime_error("DSPACK_EXHAUSTIVE_STRIDE must be a positive integer");
  return k;
}

bool ExhaustiveVisits(size_t off, size_t size) {
  return off % ExhaustiveStride() == 0 || off + 1 == size;
}

}  // namespace ds::test
