// Command-line plumbing shared by every dspack tool's main() (dspack, dsbench, dssync,
// dsbench-slowfs), so that each reports errors and exits the same way (docs/cli.md, exit codes):
//   - ParseArgs: --help and --version print and exit 0; a usage error prints one line naming
//     the flag and exits 2.
//   - Fail: prints "<tool>: <message>" (bytes escaped; the option fields a library names in
//     backticks rendered as this tool's flags, RenderOptionNames) and returns ExitCode(status).
//   - SizeFlag / DurationFlag: a flag's text through ParseSize / ParseDuration; an error is a
//     usage error (kInvalidArgument) that names the flag.
//   - ExceptionExit: the one catch tail of main (bad_alloc, anything else a bug): exit 2.
//   - FinishStdout: main's last word: a report that could not be written to stdout (a full
//     disk, /dev/full, a closed pipe) is an error, exit 2, never a silent 0.
//
// Header-only and included by the mains only: it pulls in CLI11, which no library links.
// Thread-safety: call from main's thread.
#pragma once

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <new>
#include <string>
#include <string_view>
#include <vector>

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

// Names a field by `app`'s own long options, its subcommands' included: `on_error` ->
// --on-error, a choice `cache=cold` -> "--cache cold"; nullopt for a field it has no flag for.
inline FlagResolver AppFlagResolver(const CLI::App& app) {
  return [&app](std::string_view field) -> std::optional<std::string> {
    std::string_view value;
    if (auto eq = field.find('='); eq != std::string_view::npos) {
      value = field.substr(eq + 1);
      field = field.substr(0, eq);
    }
    std::string dashed(field);
    std::replace(dashed.begin(), dashed.end(), '_', '-');
    std::vector<const CLI::App*> apps{&app};
    for (size_t i = 0; i < apps.size(); ++i) {
      for (const CLI::Option* o : apps[i]->get_options()) {
        for (const std::string& l : o->get_lnames()) {
          if (l == dashed || l == field) {
            return value.empty() ? "--" + l : "--" + l + " " + std::string(value);
          }
        }
      }
      for (const CLI::App* sub : apps[i]->get_subcommands({})) apps.push_back(sub);
    }
    return std::nullopt;
  };
}

// Fail with the flags a resolver names (AppFlagResolver, or a tool's own).
inline int Fail(std::string_view tool, const Status& status, const FlagResolver& resolve) {
  if (status.ok()) return 0;
  std::fprintf(stderr, "%.*s: %s\n", static_cast<int>(tool.size()), tool.data(),
               EscapeBytes(RenderOptionNames(status.message(), resolve)).c_str());
  return ExitCode(status);
}

namespace internal {

// The closest long option of `app` to `flag` ("--formt" -> "--format"), or "" when none is
// within 2 edits.
inline std::string Closest(const CLI::App& app, std::string_view flag) {
  std::string_view name = flag.substr(0, flag.find('='));
  while (!name.empty() && name.front() == '-') name.remove_prefix(1);
  std::string best;
  size_t best_d = 3;
  for (const CLI::Option* o : app.get_options()) {
    for (const std::string& l : o->get_lnames()) {
      size_t d = EditDistance(name, l);
      if (d < best_d) {
        best_d = d;
        best = "--" + l;
      }
    }
  }
  return best;
}

}  // namespace internal

// --nfs-connections N and --nfs-timeout SECONDS on `app` and on every subcommand under it (call
// once the subcommands are made): the nfs:// backend's defaults for this process and the
// processes it starts (a torch DataLoader's Python, an mpirun's ranks inherit the environment),
// set as DSPACK_NFS_CONNECTIONS / DSPACK_NFS_TIMEOUT (docs/nfs.md). A URL's own ?connections= and
// ?timeout= still win.
inline void AddNfsFlags(CLI::App& app) {
  std::vector<CLI::App*> apps{&app};
  for (size_t i = 0; i < apps.size(); ++i) {
    for (CLI::App* sub : apps[i]->get_subcommands({})) apps.push_back(sub);
    apps[i]
        ->add_option_function<int>(
            "--nfs-connections",
            [](const int& n) { ::setenv("DSPACK_NFS_CONNECTIONS", std::to_string(n).c_str(), 1); },
            "nfs:// URLs: TCP connections per server, as the kernel's nconnect (default 2)")
        ->check(CLI::Range(1, 64))
        ->group("NFS");
    apps[i]
        ->add_option_function<int>(
            "--nfs-timeout",
            [](const int& s) { ::setenv("DSPACK_NFS_TIMEOUT", std::to_string(s).c_str(), 1); },
            "nfs:// URLs: seconds without a reply before an RPC fails (default 10)")
        ->check(CLI::Range(1, 3600))
        ->group("NFS");
  }
}

// Returns -1 when main should go on, else the exit code to return.
inline int ParseArgs(std::string_view tool, CLI::App& app, int argc, char** argv) {
  // A first word that is no command: "unknown command 'frobnicate'" and the list.
  if (argc > 1 && argv[1][0] != '-' && !app.get_subcommands({}).empty()) {
    std::string word = argv[1], list;
    bool known = false;
    for (const CLI::App* sub : app.get_subcommands({})) {
      known = known || sub->check_name(word);
      list += (list.empty() ? "" : ", ") + sub->get_name();
    }
    if (!known) {
      std::fprintf(stderr, "%.*s: unknown command '%s' (commands: %s; see --help)\n",
                   static_cast<int>(tool.size()), tool.data(), EscapeBytes(word).c_str(),
                   list.c_str());
      return 2;
    }
  }
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
    // An unknown flag close to a known one: "did you mean --format?".
    std::string hint;
    const CLI::App* in = &app;
    for (const CLI::App* sub : app.get_subcommands()) in = sub;  // the command parsed
    for (int i = 1; i < argc && hint.empty(); i++) {
      std::string_view a = argv[i];
      if (a.rfind("--", 0) != 0 || in->get_option_no_throw(std::string(a.substr(0, a.find('='))))) {
        continue;
      }
      std::string c = internal::Closest(*in, a);
      if (!c.empty()) hint = "; did you mean " + c + "?";
    }
    std::fprintf(stderr, "%.*s: %s%s (see --help)\n", static_cast<int>(tool.size()), tool.data(),
                 what.c_str(), hint.c_str());
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

// Flushes stdout and checks it for a write error; returns rc, or 2 (with a line on stderr) when
// the output was lost and rc was 0 or 1. Call as main's return: `return FinishStdout(tool, Run())`.
inline int FinishStdout(std::string_view tool, int rc) {
  const int n = static_cast<int>(tool.size());
  errno = 0;
  bool flushed = std::fflush(stdout) == 0;
  int e = errno;
  if (flushed && !std::ferror(stdout)) return rc;
  std::fprintf(stderr,
               "%.*s: writing to standard output failed%s%s; the output is incomplete: "
               "redirect it to a file system with space, or use the tool's output file option\n",
               n, tool.data(), e ? ": " : "", e ? std::strerror(e) : "");
  return rc >= 2 ? rc : 2;
}

}  // namespace ds
