// dspack's commands (docs/cli.md), their flags declared on the caller's CLI::App and run by
// Run(), which returns -1 when its command was not the one given, else the exit code:
//   ConvertCommand    `convert` (one rank of a partitioned convert under mpirun);
//   InspectCommands   `verify`, `info`, `ls`, `cat`, `extract` and `synth`.
// Exit codes: 0 ok, 1 bad data, 2 usage or environment error (ExitCode, src/status.h).
#pragma once

#include <CLI/CLI.hpp>
#include <memory>

#include "src/status.h"

namespace ds {

// ds::Fail (src/cli_args.h) as "dspack: ...", the library's option fields as dspack's flags.
int DspackFail(const Status& s);

class ConvertCommand {
 public:
  explicit ConvertCommand(CLI::App& app);
  ~ConvertCommand();
  int Run(int* argc, char*** argv);  // main's argc/argv, for MPI
  struct Flags;

 private:
  std::unique_ptr<Flags> f_;
};

class InspectCommands {
 public:
  explicit InspectCommands(CLI::App& app);
  ~InspectCommands();
  int Run();
  struct Flags;

 private:
  std::unique_ptr<Flags> f_;
};

}  // namespace ds
