#include "src/status.h"

#include <algorithm>
#include <cstring>

namespace ds {

std::string_view CodeName(Code code) {
  switch (code) {
    case Code::kOk:
      return "ok";
    case Code::kInvalidArgument:
      return "invalid argument";
    case Code::kNotFound:
      return "not found";
    case Code::kAlreadyExists:
      return "already exists";
    case Code::kCorruption:
      return "corruption";
    case Code::kBadInput:
      return "bad input";
    case Code::kIOError:
      return "io error";
    case Code::kNoSpace:
      return "no space";
    case Code::kUnsupported:
      return "unsupported";
    case Code::kInternal:
      return "internal error";
  }
  return "unknown";
}

Status Status::FromErrno(int err, std::string_view context, Code fallback) {
  Code code = fallback;
  if (err == ENOSPC || err == EDQUOT) code = Code::kNoSpace;
  if (err == ENOENT) code = Code::kNotFound;
  if (err == EEXIST) code = Code::kAlreadyExists;
  std::string msg(context);
  msg += ": ";
  msg += std::strerror(err);
  return Status(code, std::move(msg), err);
}

Status Status::FromStorage(const Status& s, std::string_view context, Code fallback) {
  if (s.err() == 0) return s;
  return FromErrno(s.err(), context, fallback);
}

std::string Status::ToString() const {
  if (ok()) return "ok";
  return message_;
}

Status Status::Prefixed(std::string_view prefix) const {
  if (ok()) return *this;
  return Status(code_, std::string(prefix) + ": " + message_, err_);
}

std::string RenderOptionNames(std::string_view message, const FlagResolver& resolve) {
  std::string out;
  out.reserve(message.size());
  size_t pos = 0;
  while (pos < message.size()) {
    size_t open = message.find('`', pos);
    size_t close = open == std::string_view::npos ? open : message.find('`', open + 1);
    if (close == std::string_view::npos) break;
    std::string_view field = message.substr(open + 1, close - open - 1);
    out.append(message.substr(pos, open - pos));
    if (std::optional<std::string> flag = resolve(field)) {
      out.append(*flag);
    } else {
      out.append(message.substr(open, close - open + 1));
    }
    pos = close + 1;
  }
  out.append(message.substr(std::min(pos, message.size())));
  return out;
}

std::string RenderOptionNames(std::string_view message, std::span<const OptionName> names) {
  return RenderOptionNames(message, [names](std::string_view field) -> std::optional<std::string> {
    auto it = std::find_if(names.begin(), names.end(),
                           [&](const OptionName& n) { return n.field == field; });
    if (it == names.end()) return std::nullopt;
    return std::string(it->flag);
  });
}

int ExitCode(const Status& s) {
  switch (s.code()) {
    case Code::kOk:
      return 0;
    case Code::kCorruption:
    case Code::kBadInput:
      return 1;
    default:
      return 2;
  }
}

}  // namespace ds
