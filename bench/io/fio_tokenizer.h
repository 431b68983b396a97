// The words of fio's option language for `dsbench io` (bench/io/fio_options.h), before they are
// applied: job files (INI: [global] and [job] sections, key=value lines) and the command line
// (--key=value, --key value, positional job files and PATH), read into RawJobs of Entries. Every
// key is checked against the option table here (fio_option_table.h): an unknown key, a flag
// missing its value or a malformed line is kInvalidArgument naming the file:line or --key.
#pragma once

#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "bench/io/fio_option_table.h"

namespace ds::bench::fio {

// A job before its options are applied: the [global] entries in force when its section began,
// its own, then the command line's.
struct RawJob {
  std::string name;
  std::vector<Entry> entries;
  size_t own_from = 0;  // entries[own_from..own_to) are the job's own (echoed as "job options")
  size_t own_to = SIZE_MAX;
  // The first job of a job file after the first: fio stonewalls between job files.
  bool starts_file = false;
};

// What the arguments say, before jobs are built.
struct Tokens {
  std::vector<RawJob> jobs;        // the job files' sections, in order
  std::vector<Entry> last_global;  // the last [global] section of the files
  std::vector<Entry> cli_global;   // command-line options before the first --name
  std::vector<RawJob> cli_jobs;    // each --name=N and the options after it
  std::string target;              // PATH, if given
  bool any_file = false;           // a job file was given
  FioOutput out;                   // fio's command-line-only options
};

// Reads `args` (the words after `dsbench io`), job files included.
Result<Tokens> Tokenize(std::span<const std::string> args);

}  // namespace ds::bench::fio
