#include "sync/journal.h"

#include <fmt/format.h>

#include <charconv>

#include "src/checksum.h"

namespace ds::sync {

std::string EncodePath(std::string_view path, bool encode_space) {
  std::string out;
  out.reserve(path.size());
  for (unsigned char c : path) {
    bool enc = c == '%' || c < 0x20 || c == 0x7f || c >= 0x80 || (c == ' ' && encode_space);
    if (enc) {
      out += fmt::format("%{:02X}", c);
    } else {
      out += static_cast<char>(c);
    }
  }
  return out;
}

namespace {

int HexDigit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

template <typename T>
bool ParseNum(std::string_view s, T* out, int base = 10) {
  if (s.empty()) return false;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), *out, base);
  return ec == std::errc() && p == s.data() + s.size();
}

std::vector<std::string_view> Split(std::string_view line) {
  std::vector<std::string_view> f;
  size_t i = 0;
  while (i <= line.size()) {
    size_t j = line.find(' ', i);
    if (j == std::string_view::npos) j = line.size();
    f.push_back(line.substr(i, j - i));
    i = j + 1;
  }
  return f;
}

bool ParseLine(std::string_view line, JournalEntry* e) {
  size_t sp = line.rfind(' ');
  if (sp == std::string_view::npos) return false;
  uint32_t crc = 0;
  if (line.size() - sp - 1 != 8 || !ParseNum(line.substr(sp + 1), &crc, 16)) return false;
  if (Crc32c(line.substr(0, sp)) != crc) return false;
  auto f = Split(line.substr(0, sp));
  if (f.size() != 7 || f[0].size() != 1 || (f[0][0] != 'C' && f[0][0] != 'F')) return false;
  e->kind = f[0][0];
  return f[5].size() == 16 && ParseNum(f[1], &e->src_size) && ParseNum(f[2], &e->src_mtime_ns) &&
         ParseNum(f[3], &e->offset) && ParseNum(f[4], &e->length) && ParseNum(f[5], &e->xxh3, 16) &&
         DecodePath(f[6], &e->path) && !e->path.empty();
}

}  // namespace

bool DecodePath(std::string_view text, std::string* out) {
  out->clear();
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] != '%') {
      *out += text[i];
      continue;
    }
    if (i + 2 >= text.size()) return false;
    int hi = HexDigit(text[i + 1]), lo = HexDigit(text[i + 2]);
    if (hi < 0 || lo < 0) return false;
    *out += static_cast<char>(hi * 16 + lo);
    i += 2;
  }
  return true;
}

std::string FormatEntry(const JournalEntry& e) {
  std::string body = fmt::format("{} {} {} {} {} {} {}", e.kind, e.src_size, e.src_mtime_ns,
                                 e.offset, e.length, HexU64(e.xxh3), EncodePath(e.path));
  return fmt::format("{} {:08x}\n", body, Crc32c(body));
}

std::vector<JournalEntry> ParseJournal(std::string_view text, size_t* bad) {
  std::vector<JournalEntry> out;
  size_t nbad = 0;
  size_t i = 0;
  while (i < text.size()) {
    size_t j = text.find('\n', i);
    if (j == std::string_view::npos) {  // a torn last line
      ++nbad;
      break;
    }
    JournalEntry e;
    if (ParseLine(text.substr(i, j - i), &e)) {
      out.push_back(std::move(e));
    } else {
      ++nbad;
    }
    i = j + 1;
  }
  if (bad != nullptr) *bad = nbad;
  return out;
}

Result<Journal> Journal::Open(const std::string& dir, std::vector<JournalEntry>* existing,
                              std::shared_ptr<Storage> storage) {
  if (!storage) storage = LocalStorage();
  std::string path = dir + "/" + kJournalName;
  existing->clear();
  auto text = ReadAll(*storage, path);
  if (text.ok()) {
    *existing = ParseJournal(*text);
  } else if (text.status().code() != Code::kNotFound) {
    return text.status();
  }
  DS_ASSIGN_OR_RETURN(auto file, storage->OpenWrite(path, WriteMode::kKeep));
  DS_ASSIGN_OR_RETURN(uint64_t end, file->Size());
  return Journal(std::move(storage), std::move(file), path, end);
}

Status Journal::Append(const std::vector<JournalEntry>& entries, bool sync) {
  if (entries.empty()) return Status::Ok();
  std::string text;
  for (const auto& e : entries) text += FormatEntry(e);
  std::lock_guard<std::mutex> lock(mu_);
  if (!file_) return Status(Code::kInternal, path_ + ": appended to after Remove()");
  DS_RETURN_IF_ERROR(file_->WriteAt(end_, text.data(), text.size()));
  end_ += text.size();
  if (sync) DS_RETURN_IF_ERROR(file_->Sync());
  return Status::Ok();
}

Status Journal::Remove() {
  std::lock_guard<std::mutex> lock(mu_);
  if (file_) {
    (void)file_->Close();
    file_.reset();
  }
  Status st = storage_->Remove(path_);
  if (!st.ok() && st.code() != Code::kNotFound) return st;
  return Status::Ok();
}

}  // namespace ds::sync
