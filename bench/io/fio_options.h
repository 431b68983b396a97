// fio's option language for `dsbench io` (docs/dsbench.md, "fio job files and options").
//
// A run is described the way fio describes it:
//   - Job files (INI, fio's HOWTO "Job file format"): a `[global]` section applies to the jobs
//     that follow it, every other `[name]` section is a job; a line is `key=value` or a bare `key`
//     (a flag: `time_based`, `group_reporting`, `stonewall`); `;` and `#` start a comment line.
//     fio's `$VAR` expansion and `include` are not supported (refused by name).
//   - The command line, after the job files are read: options before the first `--name` apply to
//     every job and override the files' values (fio lets a section's own value win; dsbench
//     lets the command line win, so `dsbench io job.fio --runtime 5s` does what it says), and are
//     echoed among the "global options", a job's overridden key no longer among its own; each
//     `--name=N` starts a job of its own whose options follow it. `--key=value` and `--key
//     value` are both accepted.
//   - Several job files run one after the other: the first job of each file after the first
//     has `stonewall`, as in fio.
//   - A later occurrence of an option wins, as in fio.
//   - A positional argument that looks like a job file (LooksLikeJobFile, bench/io/io_job.h) is read
//   as one and is
//     never a test target; any other positional argument is dsbench's PATH (a directory, as fio's
//     --directory, or an existing file, as --filename).
// Every key is looked up in one table. A key that is not in it, or a value it does not
// accept, is an error (kInvalidArgument: exit 2) that names the key and where it came from
// (`job.fio:12` or `--key`); nothing is ignored.
//
// Jobs run as fio runs them: all jobs start together, except that a job with `stonewall` waits
// for every job before it to finish. `stonewall` and `new_group` start a new reporting group
// (IoJobOptions::groupid); `group_reporting` merges a group's jobs into one result.
#pragma once

#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "bench/io/io_job.h"
#include "src/status.h"

namespace ds::bench {

// fio's command-line options that are not job options (fio's "Command line options").
struct FioOutput {
  std::vector<std::string> formats = {"normal"};  // --output-format, a comma list
  std::string file;                               // --output: the report goes there, not stdout
  std::vector<std::string> sections;              // --section: run only these job sections
  // --eta: fio's progress line (on stderr here): auto on a terminal, always, never.
  enum class Eta { kAuto, kAlways, kNever } eta = Eta::kAuto;
  double status_interval = 0;  // --status-interval: a status report every this many seconds
};

struct FioSpec {
  std::vector<IoJobOptions> jobs;  // in file order, then the command line's --name jobs
  // The options of the last [global] section, echoed as fio's "global options".
  std::vector<std::pair<std::string, std::string>> global_given;
  FioOutput out;
  std::vector<std::string> notes;  // things to tell the user (posixaio runs as psync, ...)
};

// `args`: the words after `dsbench io` that are not dsbench's own flags, in order.
// `defaults`: dsbench's own settings (keep, allow_overwrite, ...) that every job starts from.
Result<FioSpec> ParseFioArgs(std::span<const std::string> args, const IoJobOptions& defaults);

// Whether `name` is one of the fio options dsbench io takes (an alias or a CLI-only one such as
// output-format too): library messages name those fields as fio spells them.
bool IsFioOption(std::string_view name);

// The option table as help text: one line per option, "  --name=VALUE  help".
std::string FioOptionsHelp();

}  // namespace ds::bench
