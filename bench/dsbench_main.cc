// dsbench: storage benchmarks for ML training data (docs/dsbench.md). Parses flags and calls
// the bench/ library. Exit codes: 0 ok (storage, s3: PASS), 1 storage, s3: FAIL / replay: STARVES,
// corrupt samples or bad input data, 2 usage or IO error (ExitCode, src/status.h).
#include <CLI/CLI.hpp>
#include <cstdio>

#include "bench/fio_cli.h"
#include "bench/io_cli.h"
#include "bench/s3_cli.h"
#include "bench/training_cli.h"
#include "bench/watch_cli.h"
#include "src/cli_args.h"
#include "src/stop.h"

static int Run(int argc, char** argv) try {
  CLI::App app{"dsbench: can this storage feed ML training? fio-compatible IO jobs and a verdict"};
  app.set_version_flag("--version", std::string("dsbench ") + DSPACK_VERSION);
  app.require_subcommand(1);
  app.footer(
      "Exit codes: 0 ok / PASS, 1 FAIL (storage and s3 verdicts; replay: the job STARVES or "
      "samples\n"
      "failed their checks), 2 usage or IO error.\n"
      "Docs: docs/dsbench.md");

  ds::bench::FioCommands fio(app);            // io, storage, meta
  ds::bench::TrainingCommands training(app);  // replay, compare, slowfs
  ds::bench::S3Commands s3(app);              // s3
  ds::bench::WatchCommands watch(app);        // watch, probe

  ds::bench::SetDsbenchFlags(&app);
  ds::AddNfsFlags(app);
  if (int rc = ds::ParseArgs(ds::bench::kDsbench, app, argc, argv); rc >= 0) return rc;
  ds::InstallStopHandlers();

  std::string command;  // as typed, for the report (arguments with spaces quoted)
  for (int i = 0; i < argc; i++) {
    std::string a = argv[i];
    if (a.find_first_of(" \t'\"") != std::string::npos) a = "'" + a + "'";
    command += (i ? " " : "") + a;
  }
  if (int rc = training.Run(command); rc >= 0) return rc;
  if (int rc = watch.Run(); rc >= 0) return rc;

  if (int rc = fio.Run(&argc, &argv); rc >= 0) return rc;
  if (int rc = s3.Run(&argc, &argv); rc >= 0) return rc;
  return ds::bench::DsbenchFail(
      ds::Status(ds::Code::kInternal, "no subcommand ran (a bug in dsbench)"));
} catch (...) {
  return ds::ExceptionExit(ds::bench::kDsbench);
}

int main(int argc, char** argv) { return ds::FinishStdout(ds::bench::kDsbench, Run(argc, argv)); }
