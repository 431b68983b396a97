#include "pack/packer.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>

#include <algorithm>
#include <chrono>
#include <climits>
#include <cstdlib>
#include <memory>

#include "formats/dir_source.h"
#include "formats/native_dataset.h"
#include "src/checksum.h"
#include "src/fd.h"
#include "src/human.h"
#include "src/ordered_workers.h"
#include "src/progress.h"
#include "src/random.h"

namespace ds {

using nlohmann::json;

std::vector<uint64_t> ShufflePermutation(uint64_t n, uint64_t seed) {
  std::vector<uint64_t> perm(n);
  for (uint64_t i = 0; i < n; i++) perm[i] = i;
  Rng rng(seed, 0x5348554646ull);  // "SHUFF"
  for (uint64_t i = n; i > 1; i--) std::swap(perm[i - 1], perm[rng.Below(i)]);
  return perm;
}

json ConvertReport::ToJson() const {
  return {{"samples", samples},
          {"files", files},
          {"payload_bytes", payload_bytes},
          {"shards", shards},
          {"bytes_written", bytes_written},
          {"skipped", skipped},
          {"classes", classes},
          {"scan_seconds", scan_seconds},
          {"seconds", total_seconds},
          {"files_per_sec", total_seconds > 0 ? files / total_seconds : 0},
          {"bytes_per_sec", total_seconds > 0 ? payload_bytes / total_seconds : 0}};
}

namespace {

using Clock = std::chrono::steady_clock;
double Since(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

struct Loaded {
  uint64_t sample = 0;
  std::vector<InputFile> files;
  Status status;
  std::string bad_path;
};

// Labels from the first path component of each key (ImageNet layout ROOT/class/file).
struct Labels {
  std::vector<std::string> names;  // sorted
  Status Build(const FileTree& tree) {
    std::string prev;
    for (uint64_t s = 0; s < tree.sample_count(); s++) {
      std::string_view key = tree.key(s);
      auto slash = key.find('/');
      if (slash == std::string_view::npos) continue;  // reported per sample in Of()
      std::string_view cls = key.substr(0, slash);
      if (cls != prev) {
        names.emplace_back(cls);
        prev.assign(cls);
      }
    }
    std::sort(names.begin(), names.end());
    names.erase(std::unique(names.begin(), names.end()), names.end());
    for (const auto& n : names) {
      if (n.find('\n') != std::string::npos) {
        return Status(Code::kBadInput, fmt::format("class folder '{}' has a newline in its name; "
                                                   "rename it or drop --label-from-dir",
                                                   EscapeBytes(n)));
      }
    }
    return Status::Ok();
  }
  Result<std::string> Of(std::string_view key) const {
    auto slash = key.find('/');
    if (slash == std::string_view::npos) {
      return Status(Code::kBadInput, fmt::format("{}: not inside a class folder, so "
                                                 "--label-from-dir cannot label it; move it into "
                                                 "one or --exclude it",
                                                 EscapeBytes(key)));
    }
    auto it = std::lower_bound(names.begin(), names.end(), key.substr(0, slash));
    return std::to_string(it - names.begin());
  }
};

class Packer {
 public:
  Packer(const ConvertOptions& o, ConvertReport* r) : o_(o), r_(r) {}

  Status Run() {
    auto t0 = Clock::now();
    struct stat st;
    if (::stat(o_.src.c_str(), &st) != 0) return Status::FromErrno(errno, o_.src, Code::kBadInput);
    if (!S_ISDIR(st.st_mode)) {
      return Status(Code::kBadInput, o_.src +
                                         ": not a directory (archives arrive in a later "
                                         "release); give a directory tree");
    }
    native::DatasetOptions dopt;
    dopt.shard_size = o_.shard_size;
    dopt.align = o_.align;
    dopt.force = o_.force;
    dopt.resume = o_.resume;
    dopt.creation_options = CreationOptions();
    DS_ASSIGN_OR_RETURN(writer_, native::DatasetWriter::Create(o_.out, dopt));
    if (writer_->already_complete()) {
      r_->already_complete = true;
      return Status::Ok();
    }
    DS_RETURN_IF_ERROR(CheckOutsideSource());

    std::vector<std::pair<std::string, Status>> scan_skips;
    auto on_scan_error = [&](std::string_view path, const Status& s) -> Status {
      if (o_.on_error == OnError::kFail) return s.Prefixed(o_.src);
      scan_skips.emplace_back(std::string(path), s);
      return Status::Ok();
    };
    DS_ASSIGN_OR_RETURN(tree_, FileTree::Scan(o_.src, {o_.include, o_.exclude}, on_scan_error));
    r_->scan_seconds = Since(t0);
    json run = {{"options", CreationOptions()},
                {"source",
                 {{"files", tree_.file_count()},
                  {"samples", tree_.sample_count()},
                  {"fingerprint", HexU64(tree_.Fingerprint())}}}};
    uint64_t start = 0;
    if (o_.resume) {
      DS_ASSIGN_OR_RETURN(start, writer_->ResumeRun(run));
    } else {
      DS_RETURN_IF_ERROR(writer_->BeginRun(run));
    }
    r_->resumed_at = start;
    r_->skipped = writer_->restored_skipped();
    // Scan-time skips come first in the manifest; a resumed run restored them with the journal.
    if (writer_->restored_skipped() == 0) {
      for (const auto& [path, st] : scan_skips) Skip(path, st);
    }
    if (o_.label_from_dir) {
      DS_RETURN_IF_ERROR(labels_.Build(tree_));
      writer_->SetClasses(labels_.names, "cls");
      r_->classes = labels_.names.size();
    }
    if (o_.shuffle_seed) perm_ = ShufflePermutation(tree_.sample_count(), *o_.shuffle_seed);
    DS_ASSIGN_OR_RETURN(root_, OpenFile(o_.src, O_RDONLY | O_DIRECTORY));

    progress_ = std::make_unique<Progress>(o_.progress, "files", tree_.file_count());
    RunPipeline(start);
    progress_->Finish();
    if (!error_.ok()) return error_;
    writer_->SetSourcePosition(tree_.sample_count());
    native::DatasetSummary sum;
    DS_RETURN_IF_ERROR(writer_->Finish(&sum));
    r_->samples = sum.samples;
    r_->shards = sum.shards;
    r_->payload_bytes = sum.payload_bytes;
    r_->bytes_written = sum.bytes_written;
    r_->total_seconds = Since(t0);
    return Status::Ok();
  }

 private:
  // OUT inside SRC would pack the dataset into itself.
  Status CheckOutsideSource() const {
    char src[PATH_MAX], out[PATH_MAX];
    if (!::realpath(o_.src.c_str(), src) || !::realpath(o_.out.c_str(), out)) return Status::Ok();
    std::string s(src), d(out);
    if (d == s || d.rfind(s + "/", 0) == 0) {
      return Status(Code::kInvalidArgument,
                    fmt::format("OUT {} is inside SRC {}; choose an output directory outside the "
                                "source tree",
                                o_.out, o_.src));
    }
    return Status::Ok();
  }

  json CreationOptions() const {
    json j = {{"source", o_.src},
              {"shard_size", o_.shard_size},
              {"align", o_.align},
              {"label_from_dir", o_.label_from_dir},
              {"include", o_.include},
              {"exclude", o_.exclude},
              {"on_error", o_.on_error == OnError::kFail ? "fail" : "skip"}};
    j["shuffle_seed"] = o_.shuffle_seed ? json(*o_.shuffle_seed) : json(nullptr);
    return j;
  }

  void Skip(std::string_view path, const Status& s) {
    writer_->AddSkipped(path, s.message());
    r_->skipped++;
    if (r_->skipped_examples.size() < 10) r_->skipped_examples.push_back(s.message());
  }

  std::unique_ptr<Loaded> Load(uint64_t i) const {
    auto l = std::make_unique<Loaded>();
    l->sample = perm_.empty() ? i : perm_[i];
    auto [begin, end] = tree_.files_of(l->sample);
    l->files.reserve(end - begin);
    for (uint64_t f = begin; f < end; f++) {
      std::string path(tree_.path(f));
      auto in = InputFile::Open(root_.get(), path, kInlineLimit);
      if (!in.ok()) {
        l->status =
            Status(Code::kBadInput, o_.src + "/" + in.status().message(), in.status().err());
        l->bad_path = path;
        break;
      }
      l->files.push_back(std::move(in).value());
    }
    return l;
  }

  // Writes one loaded sample. Returns non-OK for a bad input (the caller decides skip or stop);
  // output errors are stored in error_.
  Status Write(Loaded& l) {
    DS_RETURN_IF_ERROR(l.status);
    auto [begin, end] = tree_.files_of(l.sample);
    std::string_view key = tree_.key(l.sample);
    std::vector<FieldInfo> fields;
    fields.reserve(end - begin + 1);
    for (uint64_t f = begin; f < end; f++) {
      fields.push_back({std::string(tree_.field(f)), l.files[f - begin].size()});
    }
    std::string label;
    if (o_.label_from_dir) {
      DS_ASSIGN_OR_RETURN(label, labels_.Of(key));
      fields.push_back({"cls", label.size()});
    }
    Status shape = native::CheckRecordShape(key, fields);
    if (!shape.ok()) {
      l.bad_path = std::string(key);
      return Status(Code::kBadInput, fmt::format("{}: {}", o_.src, shape.message()));
    }
    DS_RETURN_IF_ERROR(Output(writer_->BeginSample(key, fields)));
    for (uint64_t f = begin; f < end; f++) {
      InputFile& in = l.files[f - begin];
      if (in.is_inline()) {
        DS_RETURN_IF_ERROR(Output(writer_->AppendData(in.data())));
        continue;
      }
      if (chunk_.empty()) chunk_.resize(kInlineLimit);
      for (;;) {
        auto n = in.ReadChunk(chunk_.data(), chunk_.size());
        if (!n.ok()) {
          writer_->CancelSample();
          l.bad_path = std::string(tree_.path(f));
          return Status(Code::kBadInput, o_.src + "/" + n.status().message(), n.status().err());
        }
        if (*n == 0) break;
        DS_RETURN_IF_ERROR(Output(writer_->AppendData(std::string_view(chunk_.data(), *n))));
      }
    }
    if (o_.label_from_dir) DS_RETURN_IF_ERROR(Output(writer_->AppendData(label)));
    DS_RETURN_IF_ERROR(Output(writer_->EndSample()));
    r_->files += end - begin;
    files_done_ += end - begin;
    progress_->Update(files_done_, writer_->payload_bytes());
    return Status::Ok();
  }

  // Marks an output-side failure: always fatal.
  Status Output(Status s) {
    if (!s.ok() && error_.ok()) error_ = s;
    return s;
  }

  // Loads and writes source samples [start, n).
  void RunPipeline(uint64_t start) {
    int threads = std::max(1, o_.threads);
    RunOrdered<std::unique_ptr<Loaded>>(
        tree_.sample_count() - start, threads, static_cast<size_t>(threads) * 4,
        [&](uint64_t i) { return Load(start + i); },
        [&](uint64_t i, std::unique_ptr<Loaded>& l) {
          writer_->SetSourcePosition(start + i);
          Status s = Write(*l);
          if (s.ok()) return true;
          if (!error_.ok()) return false;  // output error: always fatal
          if (o_.on_error == OnError::kFail) {
            error_ = s;
            return false;
          }
          Skip(l->bad_path, s);
          return true;
        });
  }

  const ConvertOptions& o_;
  ConvertReport* r_;
  std::unique_ptr<native::DatasetWriter> writer_;
  FileTree tree_;
  Labels labels_;
  std::vector<uint64_t> perm_;
  OwnedFd root_;
  std::unique_ptr<Progress> progress_;
  std::string chunk_;
  uint64_t files_done_ = 0;
  Status error_;
};

}  // namespace

Status Convert(const ConvertOptions& options, ConvertReport* report) {
  return Packer(options, report).Run();
}

}  // namespace ds
