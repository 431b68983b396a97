// dspack: pack datasets into sequential shards, inspect and verify them (docs/cli.md).
// Parses flags and runs the command given (pack/dspack_cli.h); exit codes: 0 ok, 1 bad data,
// 2 usage/environment.
#include <CLI/CLI.hpp>

#include "pack/dspack_cli.h"
#include "src/cli_args.h"

namespace {
constexpr std::string_view kTool = "dspack";
}  // namespace

static int Run(int argc, char** argv) try {
  CLI::App app{"dspack: pack ML datasets into verified sequential shards"};
  app.set_version_flag("--version", std::string("dspack ") + DSPACK_VERSION);
  app.require_subcommand(1);
  app.footer(
      "Exit codes: 0 success, 1 bad data (corrupt dataset, unreadable input), "
      "2 usage or environment error.\nDocs: docs/cli.md");
  ds::ConvertCommand convert(app);
  ds::InspectCommands inspect(app);  // verify, info, ls, cat, extract, synth
  ds::AddNfsFlags(app);
  if (int rc = ds::ParseArgs(kTool, app, argc, argv); rc >= 0) return rc;
  if (int rc = convert.Run(&argc, &argv); rc >= 0) return rc;
  if (int rc = inspect.Run(); rc >= 0) return rc;
  return ds::DspackFail(ds::Status(ds::Code::kInternal, "no command ran (a bug in dspack)"));
} catch (...) {
  return ds::ExceptionExit(kTool);
}

int main(int argc, char** argv) { return ds::FinishStdout(kTool, Run(argc, argv)); }
