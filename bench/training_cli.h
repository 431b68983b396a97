// dsbench's training-job commands (docs/dsbench.md): `replay`, `compare` and `slowfs`. Flags are
// declared on the caller's CLI::App; Run() executes whichever was parsed. The fio-style
// commands (io, storage, meta) are fio_cli.h's; dsbench_main.cc only parses and dispatches.
//
// Exit codes: 0 done; 1 the job STARVES (with a required rate), samples failed their checks
// (corrupt data, also when skipped with --on-error skip; or stopped the run under --on-error
// stop), or the input is bad data (not a dataset, no samples); 2 usage or IO error. Errors go
// through ExitCode (src/status.h), as in every dspack tool.
#pragma once

#include <CLI/CLI.hpp>
#include <memory>
#include <string>

namespace ds::bench {

class TrainingCommands {
 public:
  explicit TrainingCommands(CLI::App& app);
  ~TrainingCommands();
  // -1 when none of these commands was given, else the exit code. `command`: the command line
  // as typed, recorded in compare's report.
  int Run(const std::string& command);

  struct Flags;  // defined in the .cc

 private:
  std::unique_ptr<Flags> f_;
};

}  // namespace ds::bench
