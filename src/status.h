// Status and Result<T>: how every library function in dspack reports failure.
//
// A Status is either OK or carries a Code, the errno that caused it (0 if none) and a message
// that names the thing (file, offset, key) and, where useful, the fix. Result<T> holds a T or a
// non-OK Status. Both are [[nodiscard]]. Library code never throws; exceptions from CLI11, TBB and
// bad_alloc are caught only in main().
//
// Exit codes (docs/cli.md): ExitCode() maps a Status to the process exit code every dspack tool
// uses: 0 success, 1 the data is bad (corruption, unreadable or invalid input), 2 usage or
// environment error (bad flags, output exists, IO error on the output, disk full).
//
// Thread-safety: values; safe to copy/move between threads.
#pragma once

#include <cerrno>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <variant>

namespace ds {

enum class Code {
  kOk = 0,
  kInvalidArgument,  // usage error: bad flag, bad option value
  kNotFound,         // a path or key does not exist
  kAlreadyExists,    // refusing to overwrite
  kCorruption,       // stored data fails a check
  kBadInput,         // an input file cannot be read or is invalid
  kIOError,          // an IO error on our own output or environment
  kNoSpace,          // ENOSPC / EDQUOT
  kUnsupported,
  kInternal,  // a broken invariant in dspack itself (a bug): exit 2
};

std::string_view CodeName(Code code);

class [[nodiscard]] Status {
 public:
  Status() = default;  // OK
  Status(Code code, std::string message, int err = 0)
      : code_(code), err_(err), message_(std::move(message)) {}

  static Status Ok() { return Status(); }
  // Maps errno onto a Code (ENOSPC/EDQUOT -> kNoSpace, ENOENT -> kNotFound, EEXIST ->
  // kAlreadyExists, otherwise `fallback`). The message becomes "<context>: <strerror>".
  static Status FromErrno(int err, std::string_view context, Code fallback = Code::kIOError);
  // A storage call's failure about an input: FromErrno(s.err(), context, fallback) where the
  // backend gave an errno (a local or NFS file); s as it is where it did not (an S3 HTTP status,
  // whose message already names the object and the fix). Never strerror(0), "Success".
  static Status FromStorage(const Status& s, std::string_view context,
                            Code fallback = Code::kBadInput);

  bool ok() const { return code_ == Code::kOk; }
  Code code() const { return code_; }
  int err() const { return err_; }
  const std::string& message() const { return message_; }
  // Human one-liner, e.g. "corruption: shard-000012.dsr: record 431 ...".
  std::string ToString() const;
  // Returns a copy whose message is "<prefix>: <message>".
  Status Prefixed(std::string_view prefix) const;

 private:
  Code code_ = Code::kOk;
  int err_ = 0;
  std::string message_;
};

int ExitCode(const Status& s);

// Libraries speak in fields, CLIs in flags: a library message names an option by its field in
// backticks (`shard_size`, or a choice: `existing=replace`), never by a flag. A CLI renders each
// name it knows as its own flag (`shard_size` -> --shard-size); unknown names are left as they
// are.
struct OptionName {
  std::string_view field;  // as written between the backticks
  std::string_view flag;   // what this CLI calls it
};
std::string RenderOptionNames(std::string_view message, std::span<const OptionName> names);
// The same with a function that gives the flag for a field (nullopt: left as written), for a
// CLI whose flags come from a table of its own (dsbench: fio's options, then CLI11's).
using FlagResolver = std::function<std::optional<std::string>(std::string_view field)>;
std::string RenderOptionNames(std::string_view message, const FlagResolver& resolve);

template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : v_(std::move(value)) {}         // NOLINT(google-explicit-constructor)
  Result(Status status) : v_(std::move(status)) {}  // NOLINT REQUIRES: !status.ok()

  bool ok() const { return v_.index() == 0; }
  const Status& status() const {
    static const Status kOkStatus;
    return ok() ? kOkStatus : std::get<1>(v_);
  }
  T& value() & { return std::get<0>(v_); }
  const T& value() const& { return std::get<0>(v_); }
  T&& value() && { return std::get<0>(std::move(v_)); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }

 private:
  std::variant<T, Status> v_;
};

}  // namespace ds

#define DS_CONCAT_INNER_(a, b) a##b
#define DS_CONCAT_(a, b) DS_CONCAT_INNER_(a, b)

#define DS_RETURN_IF_ERROR(expr)             \
  do {                                       \
    ::ds::Status ds_status_ = (expr);        \
    if (!ds_status_.ok()) return ds_status_; \
  } while (0)

#define DS_ASSIGN_OR_RETURN_IMPL_(tmp, lhs, expr) \
  auto tmp = (expr);                              \
  if (!tmp.ok()) return tmp.status();             \
  lhs = std::move(tmp).value()

#define DS_ASSIGN_OR_RETURN(lhs, expr) \
  DS_ASSIGN_OR_RETURN_IMPL_(DS_CONCAT_(ds_result_, __LINE__), lhs, expr)
