#include "pack/inspect.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <limits.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "formats/layout.h"
#include "src/fd.h"
#include "src/human.h"
#include "src/progress.h"

namespace ds {

using nlohmann::json;

namespace {

void Print(std::FILE* out, const std::string& s) { std::fwrite(s.data(), 1, s.size(), out); }

// Splits a stored key+field path into components; rejects anything that could leave the
// extraction directory.
Result<std::vector<std::string>> SafeComponents(const std::string& path) {
  auto bad = [&](std::string_view why) {
    return Status(Code::kCorruption,
                  fmt::format("refusing to extract '{}': {}", EscapeBytes(path), why));
  };
  if (path.empty()) return bad("empty path");
  if (path[0] == '/') return bad("absolute path");
  if (path.find('\0') != std::string::npos) return bad("NUL byte in path");
  std::vector<std::string> parts;
  size_t pos = 0;
  while (pos <= path.size()) {
    size_t slash = path.find('/', pos);
    if (slash == std::string::npos) slash = path.size();
    std::string c = path.substr(pos, slash - pos);
    if (c.empty() || c == "." || c == "..") return bad("'" + c + "' path component");
    if (c.size() > NAME_MAX) {
      return bad(fmt::format("a path component of {} bytes; file systems allow {} (NAME_MAX)",
                             c.size(), NAME_MAX));
    }
    parts.push_back(std::move(c));
    pos = slash + 1;
  }
  return parts;
}

// Opens (creating as needed) the parent directory of parts under root, never following symlinks.
Result<OwnedFd> OpenParent(int root, const std::vector<std::string>& parts,
                           const std::string& path) {
  OwnedFd cur(::dup(root));
  for (size_t i = 0; i + 1 < parts.size(); i++) {
    int fd = ::openat(cur.get(), parts[i].c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0 && errno == ENOENT) {
      if (::mkdirat(cur.get(), parts[i].c_str(), 0755) != 0 && errno != EEXIST) {
        return Status::FromErrno(errno, "mkdir for " + EscapeBytes(path));
      }
      fd = ::openat(cur.get(), parts[i].c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    }
    if (fd < 0) {
      return Status::FromErrno(errno, fmt::format("{}: component '{}' is not a plain directory",
                                                  EscapeBytes(path), EscapeBytes(parts[i])));
    }
    cur = OwnedFd(fd);
  }
  return cur;
}

}  // namespace

Status Info(const std::string& dataset, const InspectOptions& o, std::FILE* out) {
  DS_ASSIGN_OR_RETURN(auto r, OpenLayout(dataset));
  if (o.json) {
    Print(out, r->Info().dump(2, ' ', false, json::error_handler_t::replace) + "\n");
  } else {
    Print(out, r->InfoText());
  }
  return Status::Ok();
}

Status Ls(const std::string& dataset, const InspectOptions& o, std::FILE* out) {
  DS_ASSIGN_OR_RETURN(auto r, OpenLayout(dataset));
  for (uint64_t i = 0; i < r->size(); i++) {
    DS_ASSIGN_OR_RETURN(SampleHead h, r->Head(i));
    std::string line = EscapeBytes(h.key);
    if (o.long_format) {
      DS_ASSIGN_OR_RETURN(SampleLocation at, r->Locate(i));
      line = fmt::format("{}\t{}\t{}\t{}", i, at.file, at.offset, line);
      for (const auto& f : h.fields) line += fmt::format("\t{}={}", EscapeBytes(f.name), f.size);
    }
    line += '\n';
    Print(out, line);
  }
  return Status::Ok();
}

Status Cat(const std::string& dataset, const std::string& key, const std::string& field,
           std::FILE* out) {
  DS_ASSIGN_OR_RETURN(auto ds, OpenLayout(dataset));
  DS_ASSIGN_OR_RETURN(auto found, ds->Find(key));
  if (!found) {
    return Status(Code::kNotFound, fmt::format("{}: no sample with key '{}' (list keys with "
                                               "`dspack ls {}`)",
                                               dataset, EscapeBytes(key), dataset));
  }
  DS_ASSIGN_OR_RETURN(SampleHead h, ds->Head(*found));
  std::string names;
  size_t want = h.fields.size();
  for (size_t f = 0; f < h.fields.size(); f++) {
    names += (f ? ", " : "") + EscapeBytes(h.fields[f].name.empty() ? "\"\"" : h.fields[f].name);
    if (h.fields[f].name == field) want = f;
  }
  if (field.empty() && h.fields.size() == 1) want = 0;
  if (want == h.fields.size()) {
    return Status(
        Code::kInvalidArgument,
        fmt::format("key '{}' has fields {}; choose one with `field`", EscapeBytes(key), names));
  }
  DS_ASSIGN_OR_RETURN(Sample s, ds->Get(*found));  // checks the data checksum before output
  const std::string& data = s.fields[want].data;
  if (std::fwrite(data.data(), 1, data.size(), out) != data.size() || std::fflush(out) != 0) {
    return Status::FromErrno(errno, "stdout");
  }
  return Status::Ok();
}

Status Extract(const std::string& dataset, const std::string& dir, const InspectOptions& o,
               std::FILE* out) {
  DS_ASSIGN_OR_RETURN(auto ds, OpenLayout(dataset));
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) return Status::FromErrno(ec.value(), "cannot create " + dir);
  DS_ASSIGN_OR_RETURN(OwnedFd root, OpenFile(dir, O_RDONLY | O_DIRECTORY));
  const std::string label = ds->label_field();
  Progress progress(o.progress, "samples", ds->size());
  uint64_t files = 0, bytes = 0, refused = 0;
  for (uint64_t i = 0; i < ds->size(); i++) {
    DS_ASSIGN_OR_RETURN(SampleHead h, ds->Head(i));
    // A schema's stored names back to the source's (formats/schema.h); TFRecord's imagenet
    // keeps the image's name in image/filename, so that sample is read whole first.
    std::optional<Sample> whole;
    if (NeedsImageFilename(ds->schema())) {
      DS_ASSIGN_OR_RETURN(whole, ds->Get(i));
    }
    std::string_view image_filename;
    if (whole) {
      for (const auto& f : whole->fields) {
        if (f.name == kTfImageFilename) image_filename = f.data;
      }
    }
    auto names = SourceFieldNames(ds->schema(), h.fields, image_filename);
    struct Target {
      OwnedFd parent;
      std::string name;
      std::string tmp;
      OwnedFd fd;
      bool skip = false;
      bool tmp_exists = false;  // tmp is on disk (created, not yet renamed)
    };
    std::vector<Target> targets(h.fields.size());
    Status bad;
    for (size_t f = 0; f < h.fields.size() && bad.ok(); f++) {
      Target& t = targets[f];
      if ((!label.empty() && h.fields[f].name == label && !o.with_labels) || !names[f]) {
        t.skip = true;
        continue;
      }
      std::string path = JoinKeyField(h.key, *names[f]);
      auto parts = SafeComponents(path);
      if (!parts.ok()) {
        bad = parts.status();
        break;
      }
      auto parent = OpenParent(root.get(), *parts, path);
      if (!parent.ok()) {
        bad = parent.status();
        break;
      }
      t.parent = std::move(parent).value();
      t.name = parts->back();
      t.tmp = ".dspack-tmp." + std::to_string(::getpid()) + "." + std::to_string(f);
      auto fd = OpenFileAt(t.parent.get(), t.tmp, O_WRONLY | O_CREAT | O_TRUNC, 0644);
      if (!fd.ok()) {
        for (size_t g = 0; g < f; g++) {
          if (targets[g].tmp_exists) ::unlinkat(targets[g].parent.get(), targets[g].tmp.c_str(), 0);
        }
        return fd.status().Prefixed(EscapeBytes(path));
      }
      t.fd = std::move(fd).value();
      t.tmp_exists = true;
    }
    // Every tmp file still on disk goes, whatever failed (a failed rename included).
    auto cleanup = [&] {
      for (auto& t : targets) {
        if (t.tmp_exists) ::unlinkat(t.parent.get(), t.tmp.c_str(), 0);
        t.tmp_exists = false;
      }
    };
    if (!bad.ok()) {
      cleanup();
      std::fprintf(stderr, "dspack: %s\n", bad.message().c_str());
      refused++;
      continue;
    }
    auto write = [&](size_t f, std::string_view chunk) -> Status {
      if (targets[f].skip) return Status::Ok();
      return WriteFull(targets[f].fd.get(), chunk.data(), chunk.size(), targets[f].name);
    };
    Status s;
    if (whole) {
      for (size_t f = 0; f < whole->fields.size() && s.ok(); f++)
        s = write(f, whole->fields[f].data);
    } else {
      s = ds->StreamPayload(i, write);
    }
    if (!s.ok()) {
      cleanup();
      return s;
    }
    for (auto& t : targets) {
      if (t.skip) continue;
      t.fd.reset();
      if (::renameat(t.parent.get(), t.tmp.c_str(), t.parent.get(), t.name.c_str()) != 0) {
        Status e = Status::FromErrno(errno, "rename to " + EscapeBytes(t.name));
        cleanup();
        return e;
      }
      t.tmp_exists = false;
      files++;
    }
    bytes += h.payload_len();
    progress.Update(i + 1, bytes);
  }
  progress.Finish();
  if (!o.quiet) {
    Print(out, fmt::format("extracted {} files ({}) from {} samples into {}\n", files,
                           FormatBytes(bytes), ds->size(), dir));
  }
  if (refused > 0) {
    return Status(Code::kCorruption,
                  fmt::format("{} samples refused (unsafe paths listed above)", refused));
  }
  return Status::Ok();
}

Status Verify(const std::string& dataset, const InspectOptions& o, std::FILE* out) {
  auto t0 = std::chrono::steady_clock::now();
  LayoutVerifyReport r;
  {
    Progress progress(o.progress, "records", 0);
    auto update = [&](uint64_t recs, uint64_t bytes) { progress.Update(recs, bytes); };
    DS_RETURN_IF_ERROR(VerifyLayout(dataset, &r, update));
  }
  double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (o.json) {
    json j = {{"path", dataset},       {"ok", r.ok()},     {"shards", r.shards},
              {"records", r.records},  {"bytes", r.bytes}, {"seconds", secs},
              {"problems", r.problems}};
    Print(out, j.dump(2, ' ', false, json::error_handler_t::replace) + "\n");
  } else {
    for (const auto& p : r.problems) Print(out, p + "\n");
    if (!o.quiet) {
      Print(out, fmt::format("{}: {} shards, {} records, {} checked in {} ({}): {}\n", dataset,
                             r.shards, r.records, FormatBytes(r.bytes), FormatDuration(secs),
                             FormatRate(secs > 0 ? r.bytes / secs : 0),
                             r.ok() ? "OK" : fmt::format("{} problems", r.problems.size())));
    }
  }
  if (!r.ok()) {
    return Status(Code::kCorruption,
                  fmt::format("{}: {} problems found", dataset, r.problems.size()));
  }
  return Status::Ok();
}

}  // namespace ds
