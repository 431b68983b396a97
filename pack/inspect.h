// The inspection commands of `dspack` on a native dataset (docs/cli.md): info, ls, cat, extract,
// verify. Each writes its normal output to `out` and returns a Status whose ExitCode() is the
// process exit code (verify reports corruption as kCorruption after listing every problem).
#pragma once

#include <cstdio>
#include <string>

#include "src/status.h"

namespace ds {

struct InspectOptions {
  bool json = false;
  bool long_format = false;  // ls -l
  bool progress = false;
  bool quiet = false;
  bool with_labels = false;  // extract: also write the synthesized label field
};

Status Info(const std::string& dataset, const InspectOptions& o, std::FILE* out);
Status Ls(const std::string& dataset, const InspectOptions& o, std::FILE* out);
// Writes field `field` (or the only field) of the sample with key `key` to out, raw.
Status Cat(const std::string& dataset, const std::string& key, const std::string& field,
           std::FILE* out);
// Restores every sample's files under dir, byte for byte. Refuses (and reports) keys that would
// land outside dir; files appear under their final names only once their checksum passed.
Status Extract(const std::string& dataset, const std::string& dir, const InspectOptions& o,
               std::FILE* out);
Status Verify(const std::string& dataset, const InspectOptions& o, std::FILE* out);

}  // namespace ds
