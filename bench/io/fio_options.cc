#include "bench/io/fio_options.h"

#include <fmt/format.h>

#include <algorithm>

#include "bench/io/fio_tokenizer.h"

namespace ds::bench {

namespace {

using fio::Build;
using fio::Entry;
using fio::Find;
using fio::Option;
using fio::RawJob;

Result<IoJobOptions> BuildJob(const RawJob& raw, const IoJobOptions& defaults,
                              const std::string& target, std::vector<std::string>* notes) {
  Build b{defaults, "", "", false, notes, std::nullopt};
  for (size_t i = 0; i < raw.entries.size(); i++) {
    const Entry& e = raw.entries[i];
    const Option* opt = Find(e.key);
    std::string v = e.bare ? (opt->bare_value ? opt->bare_value : "1") : e.value;
    Status s = opt->apply(b, v);
    if (!s.ok()) {  // "--key=value: why" on the command line, "job.fio:12: key=value: why"
      bool cli = e.where.rfind("--", 0) == 0;
      return Status(s.code(), (cli ? "--" : e.where + ": ") + s.message());
    }
    if (std::string_view(opt->name) == "time_based") b.time_based_given = true;
    if (i >= raw.own_from && i < raw.own_to && !e.bare) {  // fio echoes options with a value
      auto& g = b.o.given;
      auto it = std::find_if(g.begin(), g.end(), [&](const auto& kv) { return kv.first == e.key; });
      if (it != g.end()) g.erase(it);
      // fio echoes a command-line job's name, not a job file section's.
      if (e.key != "name" || e.where.rfind("--", 0) == 0) g.emplace_back(e.key, e.value);
    }
  }
  // A command-line option that overrode one of the job's own is echoed among the "global
  // options" (as fio echoes the command line), not as the job's: the echo says what ran.
  for (size_t i = raw.own_to; i < raw.entries.size(); i++) {
    std::erase_if(b.o.given, [&](const auto& kv) { return kv.first == raw.entries[i].key; });
  }
  IoJobOptions& o = b.o;
  o.echo_given = true;
  // fio's sizes: `size` is the job's total over its files, `filesize` each file's; IoJobOptions'
  // size is per file.
  if (b.filesize) {
    o.size = *b.filesize;
  } else if (o.nrfiles > 1) {
    o.size /= o.nrfiles;
  }
  for (std::string* log : {&o.logs.bw, &o.logs.lat, &o.logs.iops}) {
    if (*log == fio::kJobName)
      *log = o.name;  // fio: a bare write_*_log names the logs after the job
  }
  // Where the job's files are: fio's directory and filename, or dsbench's PATH.
  if (!b.filename.empty()) {
    if (!b.directory.empty()) {
      o.path = b.directory;
      o.file_name = b.filename;
    } else {
      o.path = b.filename;
      o.file_name.clear();
    }
    o.create_file = true;
  } else if (!b.directory.empty()) {
    o.path = b.directory;
  } else if (!target.empty()) {
    o.path = target;
  } else if (o.path.empty() && o.ioengine == "nfs") {
    // fio's nfs engine: the files are in the URL's directory. A named string: GCC 12's
    // -Wstringop-overflow misfires on assigning the literal here.
    static const std::string kUrlDir = ".";
    o.path = kUrlDir;
  } else if (o.path.empty()) {
    return Status(
        Code::kInvalidArgument,
        fmt::format("job '{}': no target; give --filename, --directory or a PATH", o.name));
  }
  if (Status s = o.Validate(); !s.ok()) return s.Prefixed(fmt::format("job '{}'", o.name));
  return o;
}

}  // namespace

Result<FioSpec> ParseFioArgs(std::span<const std::string> args, const IoJobOptions& defaults) {
  FioSpec spec;
  DS_ASSIGN_OR_RETURN(fio::Tokens t, fio::Tokenize(args));
  spec.out = std::move(t.out);
  std::vector<RawJob>& jobs = t.jobs;
  std::vector<Entry>& last_global = t.last_global;
  std::vector<Entry>& cli_global = t.cli_global;
  const std::string& target = t.target;
  for (const auto& f : spec.out.formats) {
    if (f != "normal" && f != "json" && f != "json+" && f != "terse") {
      return Status(
          Code::kInvalidArgument,
          "--output-format=" + f + ": choose normal, json, json+ or terse (a comma list)");
    }
  }
  // fio: options on the command line override the job files' (and fio echoes them among the
  // "global options", not a job's).
  for (auto& j : jobs) {
    j.own_to = j.entries.size();
    j.entries.insert(j.entries.end(), cli_global.begin(), cli_global.end());
  }
  for (auto& j : t.cli_jobs) {
    RawJob r{j.name, cli_global, cli_global.size()};
    r.entries.insert(r.entries.end(), j.entries.begin(), j.entries.end());
    jobs.push_back(std::move(r));
  }
  const bool short_form = jobs.empty() && !t.any_file;
  if (short_form) {  // dsbench's own form: one job from the options given, echoed as its own
    jobs.push_back(RawJob{defaults.name, cli_global, 0});
    cli_global.clear();
  }
  if (jobs.empty()) {
    return Status(Code::kInvalidArgument, "the job files define no job; add a [jobname] section");
  }
  // fio's "global options": the command line's (before the first --name), then the last
  // [global] section's; a later one of a key wins.
  for (const auto* list : {&cli_global, &last_global}) {
    for (const auto& e : *list) {
      if (e.bare) continue;
      auto& g = spec.global_given;
      std::erase_if(g, [&](const auto& kv) { return kv.first == e.key; });
      g.emplace_back(e.key, e.value);
    }
  }
  unsigned group = 0;
  for (const auto& raw : jobs) {
    if (!spec.out.sections.empty() && std::find(spec.out.sections.begin(), spec.out.sections.end(),
                                                raw.name) == spec.out.sections.end()) {
      continue;
    }
    DS_ASSIGN_OR_RETURN(IoJobOptions o, BuildJob(raw, defaults, target, &spec.notes));
    if (raw.starts_file) o.stonewall = true;  // fio runs job files one after the other
    if (!spec.jobs.empty() && (o.stonewall || o.new_group)) group++;
    o.groupid = group;
    spec.jobs.push_back(std::move(o));
  }
  if (spec.jobs.empty()) {
    return Status(Code::kInvalidArgument, "--section: no job section of that name");
  }
  return spec;
}

}  // namespace ds::bench
