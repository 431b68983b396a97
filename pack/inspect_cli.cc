// dspack's inspection commands and `synth` (pack/dspack_cli.h).
#include <cstdio>

#include "datasets/synth.h"
#include "pack/dspack_cli.h"
#include "pack/inspect.h"
#include "src/human.h"

namespace ds {

struct InspectCommands::Flags {
  CLI::App *verify = nullptr, *info = nullptr, *ls = nullptr, *cat = nullptr, *extract = nullptr,
           *synth = nullptr;
  InspectOptions io;
  std::string dataset, key, field, dir;
  SynthOptions so;
  bool quiet = false;
};

InspectCommands::~InspectCommands() = default;

InspectCommands::InspectCommands(CLI::App& app) : f_(std::make_unique<Flags>()) {
  Flags& f = *f_;
  f.verify = app.add_subcommand(
      "verify", "Check every byte of a dataset in any layout (exit 1 on corruption)");
  f.verify->add_option("DATASET", f.dataset)->required();
  f.verify->add_flag("--json", f.io.json, "Report as JSON");
  f.verify->add_flag("-q,--quiet", f.io.quiet, "Print problems only");
  f.info = app.add_subcommand("info", "Summarize a dataset");
  f.info->add_option("DATASET", f.dataset)->required();
  f.info->add_flag("--json", f.io.json, "Print as JSON");
  f.ls = app.add_subcommand("ls", "List sample keys in order (non-printable bytes as \\xNN)");
  f.ls->add_option("DATASET", f.dataset)->required();
  f.ls->add_flag("-l,--long", f.io.long_format, "Also sample number, shard, offset and fields");
  f.cat = app.add_subcommand("cat", "Write one field of the sample KEY to stdout");
  f.cat->add_option("DATASET", f.dataset)->required();
  f.cat->add_option("KEY", f.key)->required();
  f.cat->add_option("--field", f.field,
                    "Field name, e.g. JPEG (needed when the sample has several)");
  f.extract = app.add_subcommand("extract", "Restore the original files under DIR");
  f.extract->add_option("DATASET", f.dataset)->required();
  f.extract->add_option("DIR", f.dir)->required();
  f.extract->add_flag("--with-labels", f.io.with_labels, "Also write the added 'cls' label files");
  f.extract->add_flag("-q,--quiet", f.io.quiet, "No summary");

  std::string profiles;
  for (const auto& p : SynthProfiles()) profiles += "\n  " + p.name + ": " + p.description;
  f.synth = app.add_subcommand("synth", "Write a deterministic synthetic dataset");
  f.synth->add_option("PROFILE", f.so.profile, "One of:" + profiles)->required();
  f.synth->add_option("DIR", f.so.dir, "Output directory (new or empty)")->required();
  f.synth->add_option("--samples", f.so.samples, "Number of samples")->required();
  f.synth->add_option("--seed", f.so.seed, "Seed")->capture_default_str();
  f.synth->add_option("--threads", f.so.threads, "Writer threads")->capture_default_str();
  f.synth->add_flag("-q,--quiet", f.quiet, "No summary");
}

int InspectCommands::Run() {
  Flags& f = *f_;
  f.io.progress = !f.io.quiet && !f.io.json;
  Status s;
  bool ran = false;
  if (f.verify->parsed()) ran = true, s = Verify(f.dataset, f.io, stdout);
  if (f.info->parsed()) ran = true, s = Info(f.dataset, f.io, stdout);
  if (f.ls->parsed()) ran = true, s = Ls(f.dataset, f.io, stdout);
  if (f.cat->parsed()) ran = true, s = Cat(f.dataset, f.key, f.field, stdout);
  if (f.extract->parsed()) ran = true, s = Extract(f.dataset, f.dir, f.io, stdout);
  if (f.synth->parsed()) {
    ran = true;
    SynthReport r;
    s = Synthesize(f.so, &r);
    if (s.ok() && !f.quiet) {
      std::printf("synth %s: %llu samples, %llu files, %s in %s\n", f.so.profile.c_str(),
                  static_cast<unsigned long long>(r.samples),
                  static_cast<unsigned long long>(r.files), FormatBytes(r.bytes).c_str(),
                  f.so.dir.c_str());
    }
  }
  if (!ran) return -1;
  return s.ok() ? 0 : DspackFail(s);
}

}  // namespace ds
