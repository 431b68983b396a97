// dsbench's training-job commands (docs/dsbench.md): `replay`, `compare` and `slowfs`. Flags are
// declared on the caller's CLI::App; Run() executes whichever was parsed. Kept apart from
// dsbench_main.cc, which holds the fio-style commands (io, storage, meta).
//
// Exit codes: 0 done; 1 the job STARVES (with a required rate) or samples failed their checks
// (corrupt data, also when skipped with --on-error skip); 2 usage error, IO error, or a corrupt
// sample that stopped the run under --on-error stop is 1 as well (see ExitCode in src/status.h).
#pragma once

#include <CLI/CLI.hpp>
#include <memory>

namespace ds::bench {

class TrainingCommands {
 public:
  explicit TrainingCommands(CLI::App& app);
  ~TrainingCommands();
  // -1 when none of these commands was given, else the exit code.
  int Run();

  struct Flags;  // defined in the .cc

 private:
  std::unique_ptr<Flags> f_;
};

}  // namespace ds::bench
