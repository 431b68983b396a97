// dspack: pack datasets into sequential shards, inspect and verify them (docs/cli.md).
// Parses flags and calls the pack/ library; exit codes: 0 ok, 1 bad data, 2 usage/environment.
#include <fmt/format.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <cstdio>
#include <cstring>
#include <new>
#include <thread>

#include "datasets/synth.h"
#include "mpi/world.h"
#include "pack/inspect.h"
#include "pack/packer.h"
#include "src/cli_args.h"
#include "src/human.h"

namespace {

// The library's option fields (src/status.h, RenderOptionNames) as this CLI's flags.
constexpr ds::OptionName kFlags[] = {
    {"existing=replace", "--force"},
    {"existing=resume", "--resume"},
    {"shard_size", "--shard-size"},
    {"align", "--align"},
    {"lmdb_layout", "--lmdb-layout"},
    {"lmdb_layout=sample", "--lmdb-layout sample"},
    {"dali_index", "--wds-dali-index"},
    {"wds_index", "--wds-index"},
    {"lmdb_map_size", "the LMDB map size"},
    {"label_from_dir", "--label-from-dir"},
    {"exclude", "--exclude"},
    {"shuffle_seed", "--shuffle-seed"},
    {"max_expansion", "--max-expansion"},
    {"raw_names", "--raw-names"},
    {"field", "--field"},
    {"schema", "--schema"},
    {"field_map", "--field-map"},
    {"label_base", "--label-base"},
    {"on_error=skip", "--on-error skip"},
};

constexpr std::string_view kTool = "dspack";

// A partitioned convert's job (pack/partition.h) over the MPI world.
class WorldJob : public ds::PackJob {
 public:
  explicit WorldJob(ds::mpi::World& w) : w_(w) {}
  int rank() const override { return w_.rank(); }
  int size() const override { return w_.size(); }
  ds::Result<std::vector<std::string>> Gather(const std::string& mine,
                                              std::string_view what) override {
    return w_.Gather(mine, what);
  }
  ds::Result<std::vector<std::string>> AllGather(const std::string& mine,
                                                 std::string_view what) override {
    // Rank 0 gathers and broadcasts the lot as length-prefixed parts.
    DS_ASSIGN_OR_RETURN(auto parts, w_.Gather(mine, what));
    std::string all;
    for (const auto& p : parts) {
      uint64_t n = p.size();
      all.append(reinterpret_cast<const char*>(&n), 8).append(p);
    }
    DS_RETURN_IF_ERROR(w_.BroadcastInPlace(&all, 0, what));
    std::vector<std::string> out;
    for (size_t at = 0; at + 8 <= all.size();) {
      uint64_t n = 0;
      std::memcpy(&n, all.data() + at, 8);
      out.push_back(all.substr(at + 8, n));
      at += 8 + n;
    }
    return out;
  }

 private:
  ds::mpi::World& w_;
};

int Fail(const ds::Status& s) { return ds::Fail(kTool, s, kFlags); }

std::string ConvertSummary(const ds::ConvertOptions& o, const ds::ConvertReport& r) {
  double t = r.total_seconds > 0 ? r.total_seconds : 1e-9;
  // From a dataset the inputs are its samples' fields, not files.
  std::string what = r.from_dataset
                         ? fmt::format("{} samples ({} fields) of a dataset", r.samples, r.files)
                         : fmt::format("{} files into {} samples", r.files, r.samples);
  std::string s = fmt::format(
      "converted {} ({}) -> {} shards in {}\n"
      "  {} {}/s, {} (scan {}), {} threads{}\n"
      "  output: {} ({} written)",
      what, ds::FormatBytes(r.payload_bytes), r.shards, ds::FormatDuration(r.total_seconds),
      ds::FormatCount((r.from_dataset ? r.samples : r.files) / t),
      r.from_dataset ? "samples" : "files", ds::FormatRate(r.payload_bytes / t),
      ds::FormatDuration(r.scan_seconds), o.threads,
      r.ranks > 1 ? fmt::format(" on each of {} ranks", r.ranks) : "", o.out,
      ds::FormatBytes(r.bytes_written));
  if (r.classes) s += fmt::format(", {} classes", r.classes);
  if (r.schema != ds::SchemaKind::kRaw) s += fmt::format(", schema {}", ds::SchemaName(r.schema));
  if (r.ignored_entries)
    s += fmt::format(", {} archive entries ignored (directories, links)", r.ignored_entries);
  if (r.resumed_at) s += fmt::format(", resumed at source sample {}", r.resumed_at);
  s += "\n";
  if (r.skipped) {
    s += fmt::format("  skipped {} inputs (listed in manifest.json), e.g.:\n", r.skipped);
    for (const auto& e : r.skipped_examples) s += "    " + ds::EscapeBytes(e) + "\n";
  }
  return s;
}

}  // namespace

static int Run(int argc, char** argv) try {
  CLI::App app{"dspack: pack ML datasets into verified sequential shards"};
  app.set_version_flag("--version", std::string("dspack ") + DSPACK_VERSION);
  app.require_subcommand(1);
  app.footer(
      "Exit codes: 0 success, 1 bad data (corrupt dataset, unreadable input), "
      "2 usage or environment error.\nDocs: docs/cli.md");

  // convert
  ds::ConvertOptions co;
  std::string shard_size, align, lmdb_layout, on_error = "fail", format = "native", schema,
                                              field_map;
  bool dali_index = false, force = false, resume = false;
  std::string wds_index;
  uint64_t seed = 0;
  bool quiet = false, json = false;
  double mpi_timeout = 3600;
  auto* conv = app.add_subcommand(
      "convert", "Pack a directory tree, an archive or a dataset into any dataset layout");
  conv->footer(
      "Under mpirun -n N: N processes pack a directory tree into one dataset (native, wds, "
      "tfrecord, recordio), each writing a range of the shards; byte-identical to one process "
      "(docs/mpi.md).");
  conv->add_option("SRC", co.src,
                   "Source: directory tree, .zip/.tar/.tar.gz/.tgz/.tar.zst/.tar.xz archive, or "
                   "a dataset (native, lmdb, wds, tfrecord, recordio)")
      ->required();
  conv->add_option("OUT", co.out, "Output dataset directory (new or empty)")->required();
  conv->add_option("--format", format,
                   "Layout of OUT: native, lmdb, wds (WebDataset tar), tfrecord, recordio "
                   "(MXNet); docs/formats/")
      ->check(CLI::IsMember({"native", "lmdb", "wds", "tfrecord", "recordio"}))
      ->capture_default_str();
  conv->add_option("--lmdb-layout", lmdb_layout,
                   "lmdb: 'field' (a key per field, plain bytes; default), 'sample' (a value per "
                   "sample), 'pickle' ((image, label) pickles, as PyTorch ImageNet-LMDB recipes "
                   "read them; the default under --schema imagenet) or 'caffe' (Caffe Datum)")
      ->check(CLI::IsMember({"field", "sample", "pickle", "caffe"}));
  conv->add_flag("--wds-dali-index", dali_index,
                 "wds: also write a DALI wds2idx index (.idx) next to each shard");
  conv->add_option("--wds-index", wds_index,
                   "wds: where dspack's sample index goes: 'member' (the tar's last member, "
                   "__dspack_index__; default) or 'sidecar' (shard-N.dsidx beside it, so the tar "
                   "holds only samples, for readers such as DALI without an index)")
      ->check(CLI::IsMember({"member", "sidecar"}));
  conv->add_option("--shard-size", shard_size,
                   "Target shard size, e.g. 256MiB (the default), 1GB; native, wds, tfrecord, "
                   "recordio");
  conv->add_option("--threads", co.threads,
                   "Files read in parallel: operations in flight, which hide storage latency")
      ->capture_default_str();
  conv->add_option("--align", align, "native: align record starts, e.g. 4k (default 1: none)");
  conv->add_flag("--label-from-dir", co.label_from_dir,
                 "Add a 'cls' field: index of the top-level class folder (writes classes.txt)");
  conv->add_option("--schema", schema,
                   "Field names for the layout's loaders: imagenet (TFRecord image/encoded + int64 "
                   "image/class/label, wds jpg/cls, im2rec records, LMDB pickles) or raw (names as "
                   "they are). Default: imagenet with --label-from-dir when every sample is one "
                   "image, raw otherwise; docs/formats/schema.md")
      ->check(CLI::IsMember({"raw", "imagenet"}));
  conv->add_option("--field-map", field_map,
                   "Explicit names and types instead: FROM=TO[:int64],... e.g. "
                   "JPEG=image/encoded,cls=image/class/label:int64");
  conv->add_option("--label-base", co.label_base,
                   "--label-from-dir: the first class's label (default 0; TF's ImageNet uses 1)");
  conv->add_option("--include", co.include, "Only files matching this glob (repeatable)");
  conv->add_option("--exclude", co.exclude, "Leave out files matching this glob (repeatable)");
  auto* seed_opt =
      conv->add_option("--shuffle-seed", seed, "Write samples in a seeded random order");
  conv->add_option("--on-error", on_error, "On a bad input: fail (stop) or skip (count, list)")
      ->check(CLI::IsMember({"fail", "skip"}))
      ->capture_default_str();
  conv->add_option("--max-expansion", co.max_expansion,
                   "Archives: refuse entries expanding beyond this ratio (zip bombs)")
      ->capture_default_str();
  conv->add_flag("--raw-names", co.raw_names,
                 "Zip: keep names without the UTF-8 flag as stored bytes (default: CP437, "
                 "converted to UTF-8, as Python's zipfile)");
  auto* force_opt = conv->add_flag("--force", force, "Replace a dataset already in OUT");
  conv->add_flag("--resume", resume,
                 "Finish an interrupted convert into OUT (same SRC and options)")
      ->excludes(force_opt);
  conv->add_flag("-q,--quiet", quiet, "No progress bar, no summary");
  conv->add_option("--mpi-timeout", mpi_timeout,
                   "Under mpirun: seconds a rank waits for the others (its part of the shards "
                   "written, a gather) before it aborts the job")
      ->capture_default_str();
  conv->add_flag("--json", json, "Print the summary as JSON");

  // inspection
  ds::InspectOptions io;
  std::string dataset, key, field, dir;
  auto* verify = app.add_subcommand(
      "verify", "Check every byte of a dataset in any layout (exit 1 on corruption)");
  verify->add_option("DATASET", dataset)->required();
  verify->add_flag("--json", io.json, "Report as JSON");
  verify->add_flag("-q,--quiet", io.quiet, "Print problems only");
  auto* info = app.add_subcommand("info", "Summarize a dataset");
  info->add_option("DATASET", dataset)->required();
  info->add_flag("--json", io.json, "Print as JSON");
  auto* ls = app.add_subcommand("ls", "List sample keys in order (non-printable bytes as \\xNN)");
  ls->add_option("DATASET", dataset)->required();
  ls->add_flag("-l,--long", io.long_format, "Also sample number, shard, offset and fields");
  auto* cat = app.add_subcommand("cat", "Write one field of the sample KEY to stdout");
  cat->add_option("DATASET", dataset)->required();
  cat->add_option("KEY", key)->required();
  cat->add_option("--field", field, "Field name, e.g. JPEG (needed when the sample has several)");
  auto* extract = app.add_subcommand("extract", "Restore the original files under DIR");
  extract->add_option("DATASET", dataset)->required();
  extract->add_option("DIR", dir)->required();
  extract->add_flag("--with-labels", io.with_labels, "Also write the added 'cls' label files");
  extract->add_flag("-q,--quiet", io.quiet, "No summary");

  // synth
  ds::SynthOptions so;
  std::string profiles;
  for (const auto& p : ds::SynthProfiles()) profiles += "\n  " + p.name + ": " + p.description;
  auto* synth = app.add_subcommand("synth", "Write a deterministic synthetic dataset");
  synth->add_option("PROFILE", so.profile, "One of:" + profiles)->required();
  synth->add_option("DIR", so.dir, "Output directory (new or empty)")->required();
  synth->add_option("--samples", so.samples, "Number of samples")->required();
  synth->add_option("--seed", so.seed, "Seed")->capture_default_str();
  synth->add_option("--threads", so.threads, "Writer threads")->capture_default_str();
  synth->add_flag("-q,--quiet", quiet, "No summary");

  if (int rc = ds::ParseArgs(kTool, app, argc, argv); rc >= 0) return rc;

  io.progress = !io.quiet && !io.json;
  if (conv->parsed()) {
    uint64_t v = 0;
    if (!shard_size.empty()) {
      if (ds::Status st = ds::SizeFlag(shard_size, "--shard-size", &v); !st.ok()) return Fail(st);
      co.layout.shard_size = v;
    }
    if (!align.empty()) {
      if (ds::Status st = ds::SizeFlag(align, "--align", &v); !st.ok()) return Fail(st);
      if (v > (1u << 30))
        return Fail(ds::Status(ds::Code::kInvalidArgument, "--align: at most 1GiB"));
      co.layout.align = static_cast<uint32_t>(v == 0 ? 1 : v);
    }
    if (!lmdb_layout.empty()) co.layout.lmdb_layout = *ds::ParseLmdbLayout(lmdb_layout);
    co.layout.dali_index = dali_index;
    co.layout.wds_index_sidecar = wds_index == "sidecar";
    if (!schema.empty()) co.schema = *ds::ParseSchemaKind(schema);
    if (!field_map.empty()) {
      auto rules = ds::ParseFieldMap(field_map);
      if (!rules.ok()) return Fail(rules.status());
      co.field_map = std::move(rules).value();
    }
    co.existing = resume  ? ds::ExistingOutput::kResume
                  : force ? ds::ExistingOutput::kReplace
                          : ds::ExistingOutput::kRefuse;
    if (*seed_opt) co.shuffle_seed = seed;
    co.on_error = on_error == "skip" ? ds::OnError::kSkip : ds::OnError::kFail;
    co.format = *ds::ParseFormat(format);
    co.progress = !quiet && !json;
    // Under a launcher (mpirun, srun) with several ranks the convert is partitioned: every rank
    // writes some shards and rank 0 commits (docs/mpi.md#partitioned-packing). Only rank 0
    // prints; every rank exits with the job's code.
    std::unique_ptr<ds::mpi::World> world;
    std::unique_ptr<WorldJob> job;
    if (!ds::mpi::LauncherEnv().empty()) {
      auto started = ds::mpi::World::Start(&argc, &argv);
      if (!started.ok()) return Fail(started.status());
      world = std::move(*started);
      world->set_tool(std::string(kTool));
      world->set_json_errors(json);
      world->set_timeout(mpi_timeout);
      if (world->size() > 1) {
        job = std::make_unique<WorldJob>(*world);
        co.job = job.get();
        if (world->rank() != 0) quiet = true, json = false, co.progress = false;
      }
    }
    ds::ConvertReport report;
    ds::Status s = ds::Convert(co, &report);
    if (!s.ok()) return job && world->rank() != 0 ? ds::ExitCode(s) : Fail(s);
    if (report.already_complete) {
      if (!quiet)
        std::printf("%s already holds the finished dataset; nothing to resume\n", co.out.c_str());
      return 0;
    }
    if (json)
      std::printf("%s\n", report.ToJson().dump(2).c_str());
    else if (!quiet)
      std::fputs(ConvertSummary(co, report).c_str(), stdout);
    return 0;
  }
  ds::Status s;
  if (verify->parsed()) s = ds::Verify(dataset, io, stdout);
  if (info->parsed()) s = ds::Info(dataset, io, stdout);
  if (ls->parsed()) s = ds::Ls(dataset, io, stdout);
  if (cat->parsed()) s = ds::Cat(dataset, key, field, stdout);
  if (extract->parsed()) s = ds::Extract(dataset, dir, io, stdout);
  if (synth->parsed()) {
    ds::SynthReport r;
    s = ds::Synthesize(so, &r);
    if (s.ok() && !quiet) {
      std::printf("synth %s: %llu samples, %llu files, %s in %s\n", so.profile.c_str(),
                  static_cast<unsigned long long>(r.samples),
                  static_cast<unsigned long long>(r.files), ds::FormatBytes(r.bytes).c_str(),
                  so.dir.c_str());
    }
  }
  return s.ok() ? 0 : Fail(s);
} catch (...) {
  return ds::ExceptionExit(kTool);
}

int main(int argc, char** argv) { return ds::FinishStdout(kTool, Run(argc, argv)); }
