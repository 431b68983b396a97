#include "src/status.h"

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

std::string Status::ToString() const {
  if (ok()) return "ok";
  return message_;
}

Status Status::Prefixed(std::string_view prefix) const {
  if (ok()) return *this;
  return Status(code_, std::string(prefix) + ": " + message_, err_);
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
