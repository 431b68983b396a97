// dsbench's fio-style commands (docs/dsbench.md): `io` (fio's jobs), `storage` (the verdict
// against the bar) and `meta` (mdtest-style). Flags are declared on the caller's CLI::App; Run()
// executes whichever was parsed, as one rank of an MPI job under mpirun. Kept apart from
// dsbench_main.cc, which only parses and dispatches, and from training_cli.h (replay, compare,
// slowfs).
//
// Exit codes: 0 ok (storage: PASS); 1 storage: FAIL; 2 usage or IO error. Errors go through
// ExitCode (src/status.h), as in every dspack tool.
#pragma once

#include <CLI/CLI.hpp>
#include <memory>

namespace ds::bench {

class FioCommands {
 public:
  explicit FioCommands(CLI::App& app);
  ~FioCommands();
  // -1 when none of these commands was given, else the exit code. argc/argv: main's, for MPI.
  int Run(int* argc, char*** argv);

  struct Flags;  // defined in the .cc

 private:
  std::unique_ptr<Flags> f_;
};

}  // namespace ds::bench
