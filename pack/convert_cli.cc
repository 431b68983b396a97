// `dspack convert` (pack/dspack_cli.h).
#include <fmt/format.h>

#include <cstdio>
#include <cstring>

#include "mpi/world.h"
#include "pack/dspack_cli.h"
#include "pack/packer.h"
#include "src/cli_args.h"
#include "src/human.h"

namespace ds {

namespace {

// The library's option fields (src/status.h, RenderOptionNames) as this CLI's flags.
constexpr OptionName kFlags[] = {
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

std::string ConvertSummary(const ConvertOptions& o, const ConvertReport& r) {
  double t = r.total_seconds > 0 ? r.total_seconds : 1e-9;
  // From a dataset the inputs are its samples' fields, not files.
  std::string what = r.from_dataset
                         ? fmt::format("{} samples ({} fields) of a dataset", r.samples, r.files)
                         : fmt::format("{} files into {} samples", r.files, r.samples);
  std::string s = fmt::format(
      "converted {} ({}) -> {} shards in {}\n"
      "  {} {}/s, {} (scan {}), {} threads{}\n"
      "  output: {} ({} written)",
      what, FormatBytes(r.payload_bytes), r.shards, FormatDuration(r.total_seconds),
      FormatCount((r.from_dataset ? r.samples : r.files) / t), r.from_dataset ? "samples" : "files",
      FormatRate(r.payload_bytes / t), FormatDuration(r.scan_seconds), o.threads,
      r.ranks > 1 ? fmt::format(" on each of {} ranks", r.ranks) : "", o.out,
      FormatBytes(r.bytes_written));
  if (r.classes) s += fmt::format(", {} classes", r.classes);
  if (r.schema != SchemaKind::kRaw) s += fmt::format(", schema {}", SchemaName(r.schema));
  if (r.ignored_entries)
    s += fmt::format(", {} archive entries ignored (directories, links)", r.ignored_entries);
  if (r.resumed_at) s += fmt::format(", resumed at source sample {}", r.resumed_at);
  s += "\n";
  if (r.skipped) {
    s += fmt::format("  skipped {} inputs (listed in manifest.json), e.g.:\n", r.skipped);
    for (const auto& e : r.skipped_examples) s += "    " + EscapeBytes(e) + "\n";
  }
  return s;
}

}  // namespace

int DspackFail(const Status& s) { return Fail(kTool, s, kFlags); }

struct ConvertCommand::Flags {
  CLI::App* conv = nullptr;
  CLI::Option* seed_opt = nullptr;
  ConvertOptions co;
  std::string shard_size, align, lmdb_layout, on_error = "fail", format = "native", schema,
                                              field_map, wds_index;
  bool dali_index = false, force = false, resume = false, quiet = false, json = false;
  uint64_t seed = 0;
  double mpi_timeout = 3600;
};

ConvertCommand::~ConvertCommand() = default;

ConvertCommand::ConvertCommand(CLI::App& app) : f_(std::make_unique<Flags>()) {
  Flags& f = *f_;
  f.conv = app.add_subcommand(
      "convert", "Pack a directory tree, an archive or a dataset into any dataset layout");
  f.conv->footer(
      "Under mpirun -n N: N processes pack a directory tree into one dataset (native, wds, "
      "tfrecord, recordio), each writing a range of the shards; byte-identical to one process "
      "(docs/mpi.md).");
  f.conv
      ->add_option("SRC", f.co.src,
                   "Source: directory tree, .zip/.tar/.tar.gz/.tgz/.tar.zst/.tar.xz archive, or "
                   "a dataset (native, lmdb, wds, tfrecord, recordio)")
      ->required();
  f.conv->add_option("OUT", f.co.out, "Output dataset directory (new or empty)")->required();
  f.conv
      ->add_option("--format", f.format,
                   "Layout of OUT: native, lmdb, wds (WebDataset tar), tfrecord, recordio "
                   "(MXNet); docs/formats/")
      ->check(CLI::IsMember({"native", "lmdb", "wds", "tfrecord", "recordio"}))
      ->capture_default_str();
  f.conv
      ->add_option("--lmdb-layout", f.lmdb_layout,
                   "lmdb: 'field' (a key per field, plain bytes; default), 'sample' (a value per "
                   "sample), 'pickle' ((image, label) pickles, as PyTorch ImageNet-LMDB recipes "
                   "read them; the default under --schema imagenet) or 'caffe' (Caffe Datum)")
      ->check(CLI::IsMember({"field", "sample", "pickle", "caffe"}));
  f.conv->add_flag("--wds-dali-index", f.dali_index,
                   "wds: also write a DALI wds2idx index (.idx) next to each shard");
  f.conv
      ->add_option("--wds-index", f.wds_index,
                   "wds: where dspack's sample index goes: 'member' (the tar's last member, "
                   "__dspack_index__; default) or 'sidecar' (shard-N.dsidx beside it, so the tar "
                   "holds only samples, for readers such as DALI without an index)")
      ->check(CLI::IsMember({"member", "sidecar"}));
  f.conv->add_option("--shard-size", f.shard_size,
                     "Target shard size, e.g. 256MiB (the default), 1GB; native, wds, tfrecord, "
                     "recordio");
  f.conv
      ->add_option("--threads", f.co.threads,
                   "Files read in parallel: operations in flight, which hide storage latency")
      ->capture_default_str();
  f.conv->add_option("--align", f.align, "native: align record starts, e.g. 4k (default 1: none)");
  f.conv->add_flag("--label-from-dir", f.co.label_from_dir,
                   "Add a 'cls' field: index of the top-level class folder (writes classes.txt)");
  f.conv
      ->add_option("--schema", f.schema,
                   "Field names for the layout's loaders: imagenet (TFRecord image/encoded + int64 "
                   "image/class/label, wds jpg/cls, im2rec records, LMDB pickles) or raw (names as "
                   "they are). Default: imagenet with --label-from-dir when every sample is one "
                   "image, raw otherwise; docs/formats/schema.md")
      ->check(CLI::IsMember({"raw", "imagenet"}));
  f.conv->add_option("--field-map", f.field_map,
                     "Explicit names and types instead: FROM=TO[:int64],... e.g. "
                     "JPEG=image/encoded,cls=image/class/label:int64");
  f.conv->add_option("--label-base", f.co.label_base,
                     "--label-from-dir: the first class's label (default 0; TF's ImageNet uses 1)");
  f.conv->add_option("--include", f.co.include, "Only files matching this glob (repeatable)");
  f.conv->add_option("--exclude", f.co.exclude, "Leave out files matching this glob (repeatable)");
  f.seed_opt =
      f.conv->add_option("--shuffle-seed", f.seed, "Write samples in a seeded random order");
  f.conv->add_option("--on-error", f.on_error, "On a bad input: fail (stop) or skip (count, list)")
      ->check(CLI::IsMember({"fail", "skip"}))
      ->capture_default_str();
  f.conv
      ->add_option("--max-expansion", f.co.max_expansion,
                   "Archives: refuse entries expanding beyond this ratio (zip bombs)")
      ->capture_default_str();
  f.conv->add_flag("--raw-names", f.co.raw_names,
                   "Zip: keep names without the UTF-8 flag as stored bytes (default: CP437, "
                   "converted to UTF-8, as Python's zipfile)");
  auto* force_opt = f.conv->add_flag("--force", f.force, "Replace a dataset already in OUT");
  f.conv
      ->add_flag("--resume", f.resume,
                 "Finish an interrupted convert into OUT (same SRC and options)")
      ->excludes(force_opt);
  f.conv->add_flag("-q,--quiet", f.quiet, "No progress bar, no summary");
  f.conv
      ->add_option("--mpi-timeout", f.mpi_timeout,
                   "Under mpirun: seconds a rank waits for the others (its part of the shards "
                   "written, a gather) before it aborts the job")
      ->capture_default_str();
  f.conv->add_flag("--json", f.json, "Print the summary as JSON");
}

int ConvertCommand::Run(int* argc, char*** argv) {
  Flags& f = *f_;
  if (!f.conv->parsed()) return -1;
  {
    uint64_t v = 0;
    if (!f.shard_size.empty()) {
      if (Status st = SizeFlag(f.shard_size, "--shard-size", &v); !st.ok()) return DspackFail(st);
      f.co.layout.shard_size = v;
    }
    if (!f.align.empty()) {
      if (Status st = SizeFlag(f.align, "--align", &v); !st.ok()) return DspackFail(st);
      if (v > (1u << 30))
        return DspackFail(Status(Code::kInvalidArgument, "--align: at most 1GiB"));
      f.co.layout.align = static_cast<uint32_t>(v == 0 ? 1 : v);
    }
    if (!f.lmdb_layout.empty()) f.co.layout.lmdb_layout = *ParseLmdbLayout(f.lmdb_layout);
    f.co.layout.dali_index = f.dali_index;
    f.co.layout.wds_index_sidecar = f.wds_index == "sidecar";
    if (!f.schema.empty()) f.co.schema = *ParseSchemaKind(f.schema);
    if (!f.field_map.empty()) {
      auto rules = ParseFieldMap(f.field_map);
      if (!rules.ok()) return DspackFail(rules.status());
      f.co.field_map = std::move(rules).value();
    }
    f.co.existing = f.resume  ? ExistingOutput::kResume
                    : f.force ? ExistingOutput::kReplace
                              : ExistingOutput::kRefuse;
    if (*f.seed_opt) f.co.shuffle_seed = f.seed;
    f.co.on_error = f.on_error == "skip" ? OnError::kSkip : OnError::kFail;
    f.co.format = *ParseFormat(f.format);
    f.co.progress = !f.quiet && !f.json;
    // Under a launcher (mpirun, srun) with several ranks the convert is partitioned: every rank
    // writes some shards and rank 0 commits (docs/mpi.md#partitioned-packing). Only rank 0
    // prints; every rank exits with the job's code.
    std::unique_ptr<mpi::World> world;
    if (!mpi::LauncherEnv().empty()) {
      auto started = mpi::World::Start(argc, argv);
      if (!started.ok()) return DspackFail(started.status());
      world = std::move(*started);
      world->set_tool(std::string(kTool));
      world->set_json_errors(f.json);
      world->set_timeout(f.mpi_timeout);
      if (world->size() > 1) {
        f.co.job = world.get();  // mpi::World is the job (src/job.h)
        if (world->rank() != 0) f.quiet = true, f.json = false, f.co.progress = false;
      }
    }
    ConvertReport report;
    Status s = Convert(f.co, &report);
    if (!s.ok()) return f.co.job && world->rank() != 0 ? ExitCode(s) : DspackFail(s);
    if (report.already_complete) {
      if (!f.quiet)
        std::printf("%s already holds the finished dataset; nothing to resume\n", f.co.out.c_str());
      return 0;
    }
    for (const std::string& w : report.warnings)
      std::fprintf(stderr, "dspack: warning: %s\n", w.c_str());
    if (f.json)
      std::printf("%s\n", report.ToJson().dump(2).c_str());
    else if (!f.quiet)
      std::fputs(ConvertSummary(f.co, report).c_str(), stdout);
    return 0;
  }
}

}  // namespace ds
