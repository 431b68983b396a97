// Command-line plumbing shared by every dspack tool's main() (dspack, dsbench, dssync,
// dsbench-slowfs), so that each reports errors and exits the same way (docs/cli.md, exit codes):
//   - ParseArgs: --help and --version print and exit 0; a usage error prints one line naming
//     the flag and exits 2.
//   - Fail: prints "<tool>: <message>" (bytes escaped; the option fields a library names in
//     backticks rendered as this tool's flags, RenderOptionNames) and returns ExitCode(status).
//   - SizeFlag / DurationFlag: a flag's text through ParseSize / ParseDuration; an error is a
//     usage error (kInvalidArgument) that names the flag.
//   - ExceptionExit: the one catch tail of main (bad_alloc, anything else a bug): exit 2.
//
// Header-only and included by the mains only: it pulls in CLI11, which no library links.
// Thread-safety: call from main's thread.
#pragma once

#include <CLI/CLI.hpp>
#include <cstdint>
#include <cstdio>
#include <exception>
#include <new>
#include <string>
#include <string_view>

#include "src/human.h"
#include "src/status.h"

namespace ds {

// Prints `status` as "<tool>: <message>" on stderr; returns the exit code it calls for.
// REQUIRES: !status.ok() (an OK status prints nothing and returns 0).
inline int Fail(std::string_view tool, const Status& status,
                std::span<const OptionName> flags = {}) {
  if (status.ok()) return 0;
  std::fprintf(stderr, "%.*s: %s\n", static_cast<int>(tool.size()), tool.data(),
               EscapeBytes(RenderOptionNames(status.message(), flags)).c_str());
  return ExitCode(status);
}

// Returns -1 when main should go on, else the exit code to return.
inline int ParseArgs(std::string_view tool, CLI::App& app, int argc, char** argv) {
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    // One line, as every other error, naming the flag CLI11 names.
    std::string what = e.what();
    while (!what.empty() && what.back() == '\n') what.pop_back();
    for (char& c : what) {
      if (c == '\n') c = ' ';
    }
    std::fprintf(stderr, "%.*s: %s (see --help)\n", static_cast<int>(tool.size()), tool.data(),
                 what.c_str());
    return 2;
  }
  return -1;
}

// A size flag's text ("4k", "1GiB", "500MB/s") into *out.
inline Status SizeFlag(const std::string& text, std::string_view flag, uint64_t* out) {
  auto v = ParseSize(text);
  if (!v.ok()) return Status(Code::kInvalidArgument, v.status().Prefixed(flag).message());
  *out = *v;
  return Status::Ok();
}

// A duration flag's text ("30", "1ms", "0.2ms") into *out, in seconds; empty text leaves *out.
inline Status DurationFlag(const std::string& text, std::string_view flag, double* out) {
  if (text.empty()) return Status::Ok();
  auto v = ParseDuration(text);
  if (!v.ok()) return Status(Code::kInvalidArgument, v.status().Prefixed(flag).message());
  *out = *v;
  return Status::Ok();
}

// The catch tail of every main: `} catch (...) { return ds::ExceptionExit("dsbench"); }`.
// Library code does not throw; what arrives here is CLI11's, the standard library's (bad_alloc)
// or a bug. Exit 2.
inline int ExceptionExit(std::string_view tool) {
  const int n = static_cast<int>(tool.size());
  try {
    throw;
  } catch (const std::bad_alloc&) {
    std::fprintf(stderr, "%.*s: out of memory\n", n, tool.data());
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%.*s: internal error: %s\n", n, tool.data(), e.what());
  } catch (...) {
    std::fprintf(stderr, "%.*s: internal error: unknown exception\n", n, tool.data());
  }
  return 2;
}

}  // namespace ds
