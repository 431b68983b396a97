// `dsbench s3` (docs/s3.md#dsbench-s3): flags in, bench/s3's run, the report out; as one rank of
// an MPI job under mpirun (rank 0 prints the job's figures). Kept apart from fio_cli.h and
// training_cli.h, as each of dsbench's families of commands.
//
// Exit codes: 0 ok / PASS, 1 FAIL (the verdict of --min-bw, --min-iops, --max-ttfb-p99),
// 2 usage or IO error (wrong keys, no bucket, no server: one line, the secret never shown).
#pragma once

#include <CLI/CLI.hpp>
#include <memory>

namespace ds::bench {

class S3Commands {
 public:
  explicit S3Commands(CLI::App& app);
  ~S3Commands();
  // -1 when `s3` was not given, else the exit code. argc/argv: main's, for MPI.
  int Run(int* argc, char*** argv);

  struct Flags;  // defined in the .cc

 private:
  std::unique_ptr<Flags> f_;
};

}  // namespace ds::bench
