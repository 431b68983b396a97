// Command-line parsing shared by every dspack tool's main(): --help and --version print and
// exit 0, a usage error prints CLI11's message and exits 2 (docs/cli.md, exit codes).
#pragma once

#include <CLI/CLI.hpp>

namespace ds {

// Returns -1 when main should go on, else the exit code to return.
inline int ParseArgs(CLI::App& app, int argc, char** argv) {
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    app.exit(e);
    return 2;
  }
  return -1;
}

}  // namespace ds
