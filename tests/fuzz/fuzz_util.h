// Shared by the fuzz harnesses (tests/fuzz/README.md): a scratch directory per process, and the
// input written to a file in it, since every reader under test reads real files.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace ds::fuzz {

// This process's scratch directory (created once, removed at exit).
const std::string& ScratchDir();
// Writes data to ScratchDir()/name (replacing it) and returns the path.
std::string WriteScratch(const std::string& name, std::string_view data);
inline std::string_view Bytes(const uint8_t* data, size_t size) {
  return {reinterpret_cast<const char*>(data), size};
}

}  // namespace ds::fuzz
