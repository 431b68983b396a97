// Signed S3 requests through libcurl (src/s3_client.h).
#include "src/s3_client.h"

#include <arpa/inet.h>
#include <curl/curl.h>
#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <thread>

namespace ds {
namespace {

std::string Env(const char* name) {
  const char* v = std::getenv(name);
  return v ? std::string(v) : std::string();
}

std::string Trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() &&
         (s.back() == ' ' || s.back() == '\t' || s.back() == '\r' || s.back() == '\n'))
    s.remove_suffix(1);
  return std::string(s);
}

// The keys of section `section` in an INI file (the AWS CLI's config and credentials files).
std::map<std::string, std::string> IniSection(const std::string& file, const std::string& section) {
  std::map<std::string, std::string> out;
  std::ifstream in(file);
  std::string line;
  bool inside = false;
  while (std::getline(in, line)) {
    std::string t = Trim(line);
    if (t.empty() || t[0] == '#' || t[0] == ';') continue;
    if (t.front() == '[' && t.back() == ']') {
      inside = Trim(std::string_view(t).substr(1, t.size() - 2)) == section;
      continue;
    }
    auto eq = t.find('=');
    if (inside && eq != std::string::npos) out[Trim(t.substr(0, eq))] = Trim(t.substr(eq + 1));
  }
  return out;
}

std::string HomeFile(const char* env, const char* rel) {
  std::string f = Env(env);
  if (!f.empty()) return f;
  std::string home = Env("HOME");
  return home.empty() ? std::string() : home + "/" + rel;
}

void InitCurl() {
  static const bool once = [] { return curl_global_init(CURL_GLOBAL_DEFAULT) == CURLE_OK; }();
  (void)once;
}

}  // namespace

Result<S3Config> LoadS3Config(std::string_view query) {
  S3Config c;
  std::string profile = Env("AWS_PROFILE");
  if (profile.empty()) profile = "default";
  std::string config_file = HomeFile("AWS_CONFIG_FILE", ".aws/config");
  auto conf = IniSection(config_file, profile == "default" ? "default" : "profile " + profile);
  c.endpoint = Env("AWS_ENDPOINT_URL_S3");
  if (c.endpoint.empty()) c.endpoint = Env("AWS_ENDPOINT_URL");
  if (c.endpoint.empty()) c.endpoint = conf["endpoint_url"];
  c.region = Env("AWS_REGION");
  if (c.region.empty()) c.region = Env("AWS_DEFAULT_REGION");
  if (c.region.empty()) c.region = conf["region"];
  if (c.region.empty()) c.region = "us-east-1";
  c.path_style = !c.endpoint.empty();
  if (c.endpoint.empty()) c.endpoint = fmt::format("https://s3.{}.amazonaws.com", c.region);
  while (!c.endpoint.empty() && c.endpoint.back() == '/') c.endpoint.pop_back();
  if (c.endpoint.find("://") == std::string::npos) {
    return Status(Code::kInvalidArgument,
                  fmt::format("endpoint {}: give the scheme, e.g. AWS_ENDPOINT_URL=http://{}",
                              c.endpoint, c.endpoint));
  }

  c.access_key = Env("AWS_ACCESS_KEY_ID");
  c.secret_key = Env("AWS_SECRET_ACCESS_KEY");
  c.session_token = Env("AWS_SESSION_TOKEN");
  c.key_source = "AWS_ACCESS_KEY_ID in the environment";
  std::string cred_file = HomeFile("AWS_SHARED_CREDENTIALS_FILE", ".aws/credentials");
  if (c.access_key.empty() || c.secret_key.empty()) {
    auto cred = IniSection(cred_file, profile);
    c.access_key = cred["aws_access_key_id"];
    c.secret_key = cred["aws_secret_access_key"];
    c.session_token = cred["aws_session_token"];
    c.key_source = fmt::format("profile {} in {}", profile, cred_file);
  }
  if (c.access_key.empty() || c.secret_key.empty()) {
    return Status(Code::kInvalidArgument,
                  fmt::format("no S3 credentials: set AWS_ACCESS_KEY_ID and "
                              "AWS_SECRET_ACCESS_KEY, or give profile {} keys in {}",
                              profile, cred_file));
  }

  for (size_t pos = 0; pos < query.size();) {
    size_t amp = query.find('&', pos);
    std::string_view kv = query.substr(pos, amp == std::string_view::npos ? amp : amp - pos);
    pos = amp == std::string_view::npos ? query.size() : amp + 1;
    if (kv.empty()) continue;
    auto eq = kv.find('=');
    std::string key(kv.substr(0, eq));
    std::string value(eq == std::string_view::npos ? "" : kv.substr(eq + 1));
    char* end = nullptr;
    long n = std::strtol(value.c_str(), &end, 10);
    bool number = !value.empty() && *end == '\0';
    if (key == "addressing" && (value == "path" || value == "virtual")) {
      c.path_style = value == "path";
    } else if (key == "retries" && number && n >= 0 && n <= 20) {
      c.retries = static_cast<int>(n);
    } else if (key == "timeout" && number && n >= 1 && n <= 3600) {
      c.stall_timeout_s = n;
      c.connect_timeout_ms = n * 1000;
    } else if (key == "readahead" && number && n >= 0 && n <= 64) {
      c.readahead_max = static_cast<size_t>(n) << 20;
    } else {
      return Status(Code::kInvalidArgument,
                    fmt::format("?{}: s3:// takes addressing=path|virtual, retries=0..20, "
                                "timeout=1..3600 (seconds) and readahead=0..64 (MiB)",
                                kv));
    }
  }
  if (!c.path_style) {
    // Virtual-host addressing puts the bucket in front of the endpoint's host: an IP address
    // has no such subdomain, so the request could only fail to resolve later, far from its cause.
    size_t start = c.endpoint.find("://") + 3;
    std::string host = c.endpoint.substr(start, c.endpoint.find_first_of(":/", start) - start);
    in_addr v4;
    if (host.empty() || host.front() == '[' || inet_pton(AF_INET, host.c_str(), &v4) == 1) {
      return Status(Code::kInvalidArgument,
                    fmt::format("?addressing=virtual: endpoint {} is an IP address, which takes no "
                                "BUCKET. in front; give a host name, or addressing=path",
                                c.endpoint));
    }
  }
  return c;
}

std::string AwsEncode(std::string_view s, bool keep_slash) {
  std::string out;
  out.reserve(s.size());
  for (unsigned char ch : s) {
    if (std::isalnum(ch) || ch == '-' || ch == '_' || ch == '.' || ch == '~' ||
        (keep_slash && ch == '/')) {
      out += static_cast<char>(ch);
    } else {
      out += fmt::format("%{:02X}", ch);
    }
  }
  return out;
}

std::string S3Response::ErrorCode() const { return XmlText(body, "Code"); }

struct S3Client::Handle {
  CURL* curl = nullptr;
  Handle() : curl(curl_easy_init()) {}
  ~Handle() {
    if (curl) curl_easy_cleanup(curl);
  }
};

S3Client::S3Client(S3Config config, std::string bucket)
    : config_(std::move(config)), bucket_(std::move(bucket)) {
  InitCurl();
  sigv4_ = fmt::format("aws:amz:{}:s3", config_.region);
  userpwd_ = config_.access_key + ":" + config_.secret_key;
}

S3Client::~S3Client() = default;

S3Client::Counters S3Client::counters() const {
  std::lock_guard lock(mu_);
  return counters_;
}

std::unique_ptr<S3Client::Handle> S3Client::Borrow() {
  {
    std::lock_guard lock(mu_);
    if (!idle_.empty()) {
      auto h = std::move(idle_.back());
      idle_.pop_back();
      return h;
    }
  }
  return std::make_unique<Handle>();
}

void S3Client::Return(std::unique_ptr<Handle> handle) {
  std::lock_guard lock(mu_);
  idle_.push_back(std::move(handle));
}

std::string S3Client::Url(const S3Request& request) const {
  std::string url;
  auto scheme_end = config_.endpoint.find("://") + 3;
  if (config_.path_style) {
    url = fmt::format("{}/{}", config_.endpoint, bucket_);
  } else {
    url = fmt::format("{}{}.{}", config_.endpoint.substr(0, scheme_end), bucket_,
                      config_.endpoint.substr(scheme_end));
  }
  url += "/" + AwsEncode(request.key, true);
  auto query = request.query;
  std::sort(query.begin(), query.end());
  char sep = '?';
  for (const auto& [k, v] : query) {
    url += sep + AwsEncode(k, false) + "=" + AwsEncode(v, false);
    sep = '&';
  }
  return url;
}

namespace {

using Transfer = S3Client::Transfer;

size_t OnData(char* data, size_t size, size_t nmemb, void* user) {
  auto* t = static_cast<Transfer*>(user);
  size_t n = size * nmemb;
  const S3Request& r = *t->request;
  bool ok_status =
      t->response->status == 0 || (t->response->status >= 200 && t->response->status < 300);
  if (r.sized() && ok_status) {
    if (t->response->sink_bytes + n > r.sink_size) {
      t->overflow = true;
      return 0;
    }
    if (r.sink) std::memcpy(r.sink + t->response->sink_bytes, data, n);
    t->response->sink_bytes += n;
  } else {
    t->response->body.append(data, n);
  }
  return n;
}

size_t OnHeader(char* data, size_t size, size_t nmemb, void* user) {
  auto* t = static_cast<Transfer*>(user);
  size_t n = size * nmemb;
  std::string_view line(data, n);
  if (line.rfind("HTTP/", 0) == 0) {
    t->response->headers.clear();  // a new response (after 100 Continue or a redirect)
    auto sp = line.find(' ');
    if (sp != std::string_view::npos)
      t->response->status = std::atol(std::string(line.substr(sp + 1, 3)).c_str());
    return n;
  }
  auto colon = line.find(':');
  if (colon == std::string_view::npos) return n;
  std::string name(line.substr(0, colon));
  std::transform(name.begin(), name.end(), name.begin(),
                 [](unsigned char c) { return std::tolower(c); });
  t->response->headers[name] = Trim(line.substr(colon + 1));
  return n;
}

size_t OnRead(char* out, size_t size, size_t nmemb, void* user) {
  auto* t = static_cast<Transfer*>(user);
  size_t n = std::min(size * nmemb, t->request->body.size() - t->body_pos);
  std::memcpy(out, t->request->body.data() + t->body_pos, n);
  t->body_pos += n;
  return n;
}

}  // namespace

bool S3Client::Retryable(const S3Response& r) {
  if (r.status >= 500) return true;
  return r.ErrorCode() == "SlowDown" || r.ErrorCode() == "RequestTimeout";
}

void S3Client::Count(const S3Request& request, const S3Response& response, bool retry) {
  std::lock_guard lock(mu_);
  ++counters_.requests;
  if (retry) ++counters_.retries;
  counters_.bytes_in += response.sink_bytes + response.body.size();
  counters_.bytes_out += request.body.size();
}

curl_slist* S3Client::Prepare(void* curl, Transfer* t) const {
  CURL* c = static_cast<CURL*>(curl);
  const S3Request& request = *t->request;
  curl_slist* headers = nullptr;
  headers = curl_slist_append(headers, "x-amz-content-sha256: UNSIGNED-PAYLOAD");
  if (!config_.session_token.empty()) {
    headers =
        curl_slist_append(headers, ("x-amz-security-token: " + config_.session_token).c_str());
  }
  for (const std::string& line : request.headers)
    headers = curl_slist_append(headers, line.c_str());
  curl_easy_setopt(c, CURLOPT_URL, Url(request).c_str());
  curl_easy_setopt(c, CURLOPT_AWS_SIGV4, sigv4_.c_str());
  curl_easy_setopt(c, CURLOPT_USERPWD, userpwd_.c_str());
  curl_easy_setopt(c, CURLOPT_HTTPHEADER, headers);
  curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(c, CURLOPT_TCP_NODELAY, 1L);
  curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, config_.connect_timeout_ms);
  curl_easy_setopt(c, CURLOPT_LOW_SPEED_LIMIT, 1L);
  curl_easy_setopt(c, CURLOPT_LOW_SPEED_TIME, config_.stall_timeout_s);
  curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, OnData);
  curl_easy_setopt(c, CURLOPT_WRITEDATA, t);
  curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, OnHeader);
  curl_easy_setopt(c, CURLOPT_HEADERDATA, t);
  if (request.method == "HEAD") {
    curl_easy_setopt(c, CURLOPT_NOBODY, 1L);
  } else if (request.method == "PUT") {
    curl_easy_setopt(c, CURLOPT_UPLOAD, 1L);
    curl_easy_setopt(c, CURLOPT_READFUNCTION, OnRead);
    curl_easy_setopt(c, CURLOPT_READDATA, t);
    curl_easy_setopt(c, CURLOPT_INFILESIZE_LARGE, static_cast<curl_off_t>(request.body.size()));
  } else if (request.method == "POST") {
    curl_easy_setopt(c, CURLOPT_POST, 1L);
    curl_easy_setopt(c, CURLOPT_POSTFIELDS, request.body.data());
    curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(request.body.size()));
  } else if (request.method != "GET") {
    curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, request.method.c_str());
  }
  return headers;
}

Result<S3Response> S3Client::Perform(const S3Request& request, std::string_view what) {
  std::string curl_error;
  for (int attempt = 0;; ++attempt) {
    if (attempt > 0) {
      std::this_thread::sleep_for(std::chrono::milliseconds(50L << std::min(attempt - 1, 6)));
      std::lock_guard lock(mu_);
      ++counters_.retries;  // the request itself is counted when done
    }
    auto h = Borrow();
    CURL* c = h->curl;
    curl_easy_reset(c);
    S3Response response;
    Transfer t{&request, &response};
    char errbuf[CURL_ERROR_SIZE] = {0};
    curl_slist* headers = Prepare(c, &t);
    curl_easy_setopt(c, CURLOPT_ERRORBUFFER, errbuf);
    CURLcode rc = curl_easy_perform(c);
    curl_slist_free_all(headers);
    Count(request, response, false);
    if (rc == CURLE_OK) {
      Return(std::move(h));
      bool short_sink =
          request.sized() && response.status / 100 == 2 && response.sink_bytes != request.sink_size;
      if (!short_sink && !Retryable(response)) return response;
      if (attempt >= config_.retries) {
        if (short_sink) {
          return Status(Code::kIOError,
                        fmt::format("{}: {} bytes came of {} asked, {} times", what,
                                    response.sink_bytes, request.sink_size, attempt + 1));
        }
        return response;
      }
      continue;
    }
    if (t.overflow) {
      return Status(Code::kIOError, fmt::format("{}: the server sent more than the {} bytes asked",
                                                what, request.sink_size));
    }
    curl_error = errbuf[0] ? errbuf : curl_easy_strerror(rc);
    if (attempt >= config_.retries) break;
  }
  return Status(Code::kIOError,
                fmt::format("{}: cannot reach {} ({}) after {} tries: check AWS_ENDPOINT_URL and "
                            "that the server is up",
                            what, config_.endpoint, curl_error, config_.retries + 1));
}

Status S3Client::Fail(const S3Response& r, std::string_view what) const {
  std::string code = r.ErrorCode();
  std::string message = XmlText(r.body, "Message");
  std::string said = code.empty() ? fmt::format("HTTP {}", r.status)
                                  : fmt::format("HTTP {} {}{}{}", r.status, code,
                                                message.empty() ? "" : ": ", message);
  if (code == "NoSuchBucket") {
    return Status(Code::kNotFound,
                  fmt::format("{}: no bucket {} at {} ({}): check the bucket's name and "
                              "AWS_ENDPOINT_URL",
                              what, bucket_, config_.endpoint, said));
  }
  if (r.status == 403 || code == "InvalidAccessKeyId" || code == "SignatureDoesNotMatch") {
    return Status(Code::kInvalidArgument,
                  fmt::format("{}: access denied ({}) for key {} from {}: check the keys and "
                              "that they may use bucket {}",
                              what, said, config_.access_key, config_.key_source, bucket_));
  }
  // ENOENT, as a local or NFS file that is not there: callers tell "absent" from "unreadable".
  if (r.status == 404) {
    return Status(Code::kNotFound, fmt::format("{}: not found ({})", what, said), ENOENT);
  }
  if (r.status == 412) {
    return Status(Code::kCorruption,
                  fmt::format("{}: the object changed since it was opened ({}): rerun on the new "
                              "object",
                              what, said),
                  ESTALE);  // as NFS says of a file replaced under an open handle
  }
  if (r.status == 400) return Status(Code::kInvalidArgument, fmt::format("{}: {}", what, said));
  return Status(Code::kIOError, fmt::format("{}: {}", what, said));
}

namespace {

std::string XmlDecode(std::string_view s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] != '&') {
      out += s[i];
      continue;
    }
    auto semi = s.find(';', i);
    std::string_view ent = s.substr(i + 1, semi == std::string_view::npos ? 0 : semi - i - 1);
    if (ent == "amp")
      out += '&';
    else if (ent == "lt")
      out += '<';
    else if (ent == "gt")
      out += '>';
    else if (ent == "quot")
      out += '"';
    else if (ent == "apos")
      out += '\'';
    else if (ent.size() > 1 && ent[0] == '#') {
      long cp = ent[1] == 'x' ? std::strtol(std::string(ent.substr(2)).c_str(), nullptr, 16)
                              : std::strtol(std::string(ent.substr(1)).c_str(), nullptr, 10);
      if (cp < 0x80) {
        out += static_cast<char>(cp);
      } else if (cp < 0x800) {
        out += static_cast<char>(0xC0 | (cp >> 6));
        out += static_cast<char>(0x80 | (cp & 0x3F));
      } else {
        out += static_cast<char>(0xE0 | (cp >> 12));
        out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
        out += static_cast<char>(0x80 | (cp & 0x3F));
      }
    } else {
      out += '&';
      continue;
    }
    i = semi;
  }
  return out;
}

}  // namespace

std::vector<std::string_view> XmlBlocks(std::string_view xml, std::string_view tag) {
  std::vector<std::string_view> out;
  std::string open = fmt::format("<{}>", tag), close = fmt::format("</{}>", tag);
  for (size_t pos = 0;;) {
    size_t a = xml.find(open, pos);
    if (a == std::string_view::npos) break;
    a += open.size();
    size_t b = xml.find(close, a);
    if (b == std::string_view::npos) break;
    out.push_back(xml.substr(a, b - a));
    pos = b + close.size();
  }
  return out;
}

std::string XmlText(std::string_view xml, std::string_view tag) {
  auto blocks = XmlBlocks(xml, tag);
  return blocks.empty() ? std::string() : XmlDecode(blocks.front());
}

}  // namespace ds
