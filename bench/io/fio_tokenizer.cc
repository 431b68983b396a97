// Reading job files and the command line (bench/io/fio_tokenizer.h).
#include "bench/io/fio_tokenizer.h"

#include <fmt/format.h>

#include <fstream>
#include <sstream>

#include "bench/io/io_job.h"

namespace ds::bench::fio {

namespace {

std::string Trim(std::string_view s) {
  size_t b = s.find_first_not_of(" \t\r");
  if (b == std::string_view::npos) return "";
  size_t e = s.find_last_not_of(" \t\r");
  return std::string(s.substr(b, e - b + 1));
}

Status ParseText(std::string_view text, const std::string& file, std::vector<RawJob>* jobs,
                 std::vector<Entry>* global, std::vector<Entry>* last_global) {
  std::istringstream in{std::string(text)};
  std::string line;
  size_t lineno = 0;
  RawJob* cur = nullptr;
  bool in_global = false;
  while (std::getline(in, line)) {
    lineno++;
    std::string t = Trim(line);
    std::string where = fmt::format("{}:{}", file, lineno);
    if (t.empty() || t[0] == ';' || t[0] == '#') continue;
    if (t[0] == '[') {
      if (t.back() != ']' || t.size() < 3) {
        return Status(Code::kInvalidArgument, where + ": a section header is [name]");
      }
      std::string name = Trim(t.substr(1, t.size() - 2));
      in_global = name == "global";
      if (in_global) {
        last_global->clear();
        cur = nullptr;
      } else {
        jobs->push_back(RawJob{name, *global, global->size()});
        jobs->back().entries.push_back(Entry{"name", name, where, false});
        cur = &jobs->back();
      }
      continue;
    }
    if (t.find('$') != std::string::npos) {
      return Status(Code::kInvalidArgument,
                    where + ": fio's $VAR expansion is not supported; write the value out");
    }
    auto eq = t.find('=');
    Entry e{Trim(t.substr(0, eq)), eq == std::string::npos ? "" : Trim(t.substr(eq + 1)), where,
            eq == std::string::npos};
    const Option* opt = Find(e.key);
    if (!opt) return Unknown(e.key, where);
    if (e.bare && !opt->flag) {
      return Status(Code::kInvalidArgument, fmt::format("{}: {} needs a value", where, e.key));
    }
    if (in_global) {
      global->push_back(e);
      last_global->push_back(e);
    } else if (cur) {
      cur->entries.push_back(e);
    } else {
      return Status(Code::kInvalidArgument,
                    where + ": an option before any section; start with [global] or [jobname]");
    }
  }
  return Status::Ok();
}

}  // namespace

Result<Tokens> Tokenize(std::span<const std::string> args) {
  Tokens t;
  std::vector<Entry> global;  // the [global] entries in force while a file is read
  for (size_t i = 0; i < args.size(); i++) {
    const std::string& a = args[i];
    if (a.rfind("--", 0) != 0) {
      if (LooksLikeJobFile(a)) {
        std::ifstream in(a, std::ios::binary);
        if (!in) {
          return Status(Code::kInvalidArgument,
                        a + ": no such job file (a path ending in .fio is read as a job file)");
        }
        std::stringstream ss;
        ss << in.rdbuf();
        global.clear();  // each file starts afresh, as fio does
        size_t first = t.jobs.size();
        DS_RETURN_IF_ERROR(ParseText(ss.str(), a, &t.jobs, &global, &t.last_global));
        if (t.any_file && first < t.jobs.size()) t.jobs[first].starts_file = true;
        t.any_file = true;
        continue;
      }
      if (!t.target.empty()) {
        return Status(
            Code::kInvalidArgument,
            fmt::format("'{}': a second PATH ('{}' is the first); give one", a, t.target));
      }
      t.target = a;
      continue;
    }
    std::string body = a.substr(2), key = body, value;
    auto eq = body.find('=');
    bool bare = eq == std::string::npos;
    if (!bare) {
      key = body.substr(0, eq);
      value = body.substr(eq + 1);
    }
    const std::string where = "--" + key;
    bool cli_only = IsCliOnly(key);
    const Option* opt = cli_only ? nullptr : Find(key);
    if (!cli_only && !opt) return Unknown(key, where);
    // dsbench's own form wrote `--direct 1`: a flag followed by 0/1 takes it as its value.
    if (bare && opt && opt->flag && i + 1 < args.size() &&
        (args[i + 1] == "0" || args[i + 1] == "1")) {
      value = args[++i];
      bare = false;
    }
    if (bare && !(opt && opt->flag)) {
      if (i + 1 >= args.size()) {
        return Status(Code::kInvalidArgument, where + " needs a value: " + where + "=VALUE");
      }
      value = args[++i];
      bare = false;
    }
    if (cli_only) {
      DS_RETURN_IF_ERROR(SetCliOnly(key, value, &t.out));
      continue;
    }
    Entry e{key, value, where, bare};
    if (std::string_view(opt->name) == "name") {
      t.cli_jobs.push_back(RawJob{value, {}, 0});
      t.cli_jobs.back().entries.push_back(e);
    } else if (t.cli_jobs.empty()) {
      t.cli_global.push_back(e);
    } else {
      t.cli_jobs.back().entries.push_back(e);
    }
  }
  return t;
}

}  // namespace ds::bench::fio
