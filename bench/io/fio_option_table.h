// fio's option table for `dsbench io` (bench/io/fio_options.h): every key dsbench io accepts,
// with fio's meaning and how its value applies to a job, and fio's command-line-only options.
// Part of the fio option language: fio_tokenizer.h reads job files and the command line into
// Entries; fio_options.cc builds the jobs from them through this table.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "bench/io/fio_options.h"
#include "bench/io/io_job.h"
#include "src/status.h"

namespace ds::bench::fio {

// One option as written: key, value ("" for a bare flag) and where (for errors).
struct Entry {
  std::string key, value, where;
  bool bare = false;
};

// What a job's options build up before it is resolved into IoJobOptions.
struct Build {
  IoJobOptions o;
  std::string filename, directory;
  bool time_based_given = false;
  std::vector<std::string>* notes = nullptr;
  std::optional<uint64_t> filesize;  // fio's filesize: per file (size is the job's total)
};

using Apply = Status (*)(Build&, const std::string&);

// A bare write_*_log: the logs are named after the job (resolved once its name is known).
inline constexpr char kJobName[] = "\x01name";

struct Option {
  const char* name;
  const char* alias;  // or nullptr
  bool flag;          // may be given bare (means 1, or bare_value)
  const char* help;
  Apply apply;
  const char* bare_value = nullptr;  // what a bare flag means, if not 1
};

// Every option, in the help's order.
std::span<const Option> Options();
// The option of this name or alias, or null.
const Option* Find(std::string_view key);
// fio's command-line options that are not job options (--output, --output-format, ...).
bool IsCliOnly(std::string_view key);
Status SetCliOnly(const std::string& key, const std::string& value, FioOutput* out);
// A key no option has: kInvalidArgument naming it and where, with "did you mean X?" when one is
// at most 2 edits away.
Status Unknown(const std::string& key, const std::string& where);

}  // namespace ds::bench::fio
