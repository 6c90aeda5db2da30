#include "emulator/hosts/metadata_server.h"

#include <algorithm>
#include <cstdio>

#include <nlohmann/json.hpp>

#include "util/encoding.h"
#include "util/strings.h"

namespace tpufleet::emulator::hosts {
namespace {

using nlohmann::json;

// Headers past this count make a request malformed; real clients send under ten.
constexpr size_t kMaxHeaders = 64;

std::string Hex16(uint64_t v) {
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(v));
  return buf;
}

bool IsTrue(const std::map<std::string, std::string>& q, const std::string& key) {
  auto it = q.find(key);
  return it != q.end() && AsciiLower(it->second) == "true";
}

const char* ReasonPhrase(int status) {
  switch (status) {
    case 200:
      return "OK";
    case 301:
      return "Moved Permanently";
    case 400:
      return "Bad Request";
    case 403:
      return "Forbidden";
    case 404:
      return "Not Found";
    case 405:
      return "Method Not Allowed";
    case 503:
      return "Service Unavailable";
    default:
      return "Error";
  }
}

HttpResponse Error(int status, std::string body) {
  HttpResponse r;
  r.status = status;
  r.content_type = "text/html; charset=UTF-8";
  r.body = std::move(body);
  return r;
}

// A directory's JSON for ?recursive=true: the made-up token is never part of it.
json WithoutTokens(const json& j) {
  if (!j.is_object()) {
    return j;
  }
  json out = json::object();
  for (const auto& [k, v] : j.items()) {
    out[k] = WithoutTokens(v);
  }
  return out;
}

// A Host header that names this server (or none, as HTTP/1.0 allows): anything else is
// a web page's request reaching 169.254.169.254 through DNS rebinding.
bool IsMetadataHost(const std::map<std::string, std::string>& headers) {
  auto it = headers.find("host");
  if (it == headers.end()) {
    return true;
  }
  std::string host = AsciiLower(it->second);
  if (host.size() > 3 && host.compare(host.size() - 3, 3, ":80") == 0) {
    host.resize(host.size() - 3);
  }
  return host == "metadata.google.internal" || host == "metadata.google.internal." ||
         host == "metadata" || host == "169.254.169.254";
}

std::string LeafText(const json& j) {
  if (j.is_string()) {
    return j.get<std::string>();
  }
  return j.dump();
}

}  // namespace

Result<HttpRequest> ParseHttpRequestHead(std::string_view head) {
  std::vector<std::string> lines;
  size_t start = 0;
  while (start < head.size()) {
    size_t end = head.find('\n', start);
    if (end == std::string_view::npos) {
      end = head.size();
    }
    std::string_view line = head.substr(start, end - start);
    if (!line.empty() && line.back() == '\r') {
      line.remove_suffix(1);
    }
    if (line.empty()) {
      break;
    }
    lines.emplace_back(line);
    start = end + 1;
  }
  if (lines.empty() || lines.size() > kMaxHeaders + 1) {
    return InvalidArgumentError("bad request head");
  }
  std::vector<std::string> parts = Split(lines[0], ' ');
  if (parts.size() != 3 || parts[1].empty() || parts[1][0] != '/' ||
      !StartsWith(parts[2], "HTTP/1.")) {
    return InvalidArgumentError("bad request line");
  }
  HttpRequest r;
  r.method = parts[0];
  r.target = parts[1];
  bool http11 = parts[2] == "HTTP/1.1";
  for (size_t i = 1; i < lines.size(); ++i) {
    size_t colon = lines[i].find(':');
    if (colon == std::string::npos || colon == 0) {
      return InvalidArgumentError("bad header line");
    }
    r.headers[AsciiLower(Trim(std::string_view(lines[i]).substr(0, colon)))] =
        std::string(Trim(std::string_view(lines[i]).substr(colon + 1)));
  }
  std::string connection = r.headers.count("connection") ? AsciiLower(r.headers["connection"]) : "";
  r.keep_alive = http11 ? connection != "close" : connection == "keep-alive";
  if (r.headers.count("transfer-encoding") != 0) {
    r.has_body = true;
  }
  if (auto it = r.headers.find("content-length"); it != r.headers.end()) {
    long long n = 0;
    if (!ParseInt(it->second, &n) || n < 0) {
      return InvalidArgumentError("bad Content-Length");
    }
    r.has_body = n > 0;
  }
  return r;
}

std::string SerializeHttpResponse(const HttpResponse& r, bool keep_alive, bool head_only) {
  std::string out = "HTTP/1.1 " + std::to_string(r.status) + " " + ReasonPhrase(r.status) +
                    "\r\nMetadata-Flavor: Google\r\nContent-Type: " + r.content_type +
                    "\r\nServer: Metadata Server for VM\r\nX-XSS-Protection: 0\r\n"
                    "X-Frame-Options: SAMEORIGIN\r\n";
  if (!r.etag.empty()) {
    out += "ETag: " + r.etag + "\r\n";
  }
  if (!r.location.empty()) {
    out += "Location: " + r.location + "\r\n";
  }
  out += "Content-Length: " + std::to_string(r.body.size()) + "\r\n";
  out += keep_alive ? "Connection: keep-alive\r\n\r\n" : "Connection: close\r\n\r\n";
  if (!head_only) {
    out += r.body;
  }
  return out;
}

struct MetadataServer::Impl {
  json root = json::object();  // {"computeMetadata": {...}}
  std::string token_seed;
  std::string token;
  Clock::MonoTime token_expiry{};
  int token_serial = 0;

  HttpResponse Token(Clock::MonoTime now) {
    if (token.empty() || token_expiry - now < kTokenRenewMargin) {
      ++token_serial;
      token = "ya29.c.emulated-" + token_seed + "-" + std::to_string(token_serial);
      token_expiry = now + kTokenLifetime;
    }
    auto left = std::chrono::duration_cast<std::chrono::seconds>(token_expiry - now);
    HttpResponse r;
    r.content_type = "application/json";
    r.body = json{{"access_token", token}, {"expires_in", left.count()}, {"token_type", "Bearer"}}
                 .dump();
    return r;
  }

  HttpResponse Resolve(const std::string& path, const std::map<std::string, std::string>& query,
                       Clock::MonoTime now) {
    // path starts with '/'. Segments after it; a trailing '/' leaves an empty last one.
    std::vector<std::string> segs = Split(std::string_view(path).substr(1), '/');
    bool trailing_slash = !segs.empty() && segs.back().empty();
    if (trailing_slash) {
      segs.pop_back();
    }
    for (const std::string& s : segs) {
      if (s.empty() || s == "." || s == "..") {
        return Error(404, "Not Found\n");
      }
    }
    // instance/service-accounts/<account>/token: made up, never stored.
    size_t n = segs.size();
    if (n == 6 && segs[0] == "computeMetadata" && segs[1] == "v1" && segs[2] == "instance" &&
        segs[3] == "service-accounts" && segs[5] == "token" && !trailing_slash) {
      const json& accounts = root["computeMetadata"]["v1"]["instance"]["service-accounts"];
      if (accounts.is_object() && accounts.contains(segs[4])) {
        return Token(now);
      }
    }
    const json* node = &root;
    for (const std::string& s : segs) {
      if (!node->is_object() || !node->contains(s)) {
        return Error(404, "Not Found\n");
      }
      node = &(*node)[s];
    }
    HttpResponse r;
    if (!node->is_object()) {
      if (trailing_slash) {
        return Error(404, "Not Found\n");
      }
      if (auto it = query.find("alt"); it != query.end() && it->second == "json") {
        r.content_type = "application/json";
        r.body = json(LeafText(*node)).dump();
      } else {
        r.body = LeafText(*node);
      }
      return r;
    }
    if (IsTrue(query, "recursive")) {
      r.content_type = "application/json";
      r.body = WithoutTokens(*node).dump();
      return r;
    }
    if (!trailing_slash) {
      r.status = 301;
      r.content_type = "text/html; charset=UTF-8";
      r.location = path + "/";
      r.body = r.location + "\n";
      return r;
    }
    bool is_account = n == 5 && segs[3] == "service-accounts";
    std::vector<std::string> entries;
    for (const auto& [k, v] : node->items()) {
      entries.push_back(v.is_object() ? k + "/" : k);
    }
    if (is_account) {
      entries.push_back("token");
    }
    std::sort(entries.begin(), entries.end());
    for (const std::string& e : entries) {
      r.body += e + "\n";
    }
    return r;
  }
};

MetadataServer::MetadataServer(std::string token_seed) : impl_(std::make_unique<Impl>()) {
  impl_->token_seed = std::move(token_seed);
  impl_->root["computeMetadata"] = json::object();
}

MetadataServer::~MetadataServer() = default;

Status MetadataServer::SetDocument(std::string_view document_json) {
  json doc = json::parse(document_json, nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded() || !doc.is_object() || !doc.contains("computeMetadata") ||
      !doc["computeMetadata"].is_object()) {
    return InvalidArgumentError("metadata document has no \"computeMetadata\" object");
  }
  impl_->root = json{{"computeMetadata", std::move(doc["computeMetadata"])}};
  return Status::Ok();
}

HttpResponse MetadataServer::Render(const HttpRequest& request, Clock::MonoTime now) {
  std::string_view target = request.target;
  size_t q = target.find('?');
  std::string path = PercentDecode(target.substr(0, q), /*plus_is_space=*/false);
  std::map<std::string, std::string> query = q == std::string_view::npos
                                                 ? std::map<std::string, std::string>()
                                                 : ParseQueryString(target.substr(q + 1));
  if (request.method != "GET" && request.method != "HEAD") {
    return Error(405, "Method Not Allowed\n");
  }
  if (request.headers.count("x-forwarded-for") != 0) {
    return Error(403, "Your client does not have permission to get URL " + path +
                          " from this server. Requests with X-Forwarded-For are refused.\n");
  }
  if (request.headers.count("origin") != 0 || !IsMetadataHost(request.headers)) {
    return Error(403, "Your client does not have permission to get URL " + path +
                          " from this server. Requests from web pages are refused.\n");
  }
  HttpResponse r;
  if (path == "/") {
    r.body = "computeMetadata/\n";
  } else {
    auto flavor = request.headers.find("metadata-flavor");
    auto legacy = request.headers.find("x-google-metadata-request");
    bool ok = (flavor != request.headers.end() && flavor->second == "Google") ||
              (legacy != request.headers.end() && AsciiLower(legacy->second) == "true");
    if (!ok) {
      return Error(403, "Your client does not have permission to get URL " + path +
                            " from this server. Missing Metadata-Flavor:Google header.\n");
    }
    r = impl_->Resolve(path, query, now);
  }
  if (r.status == 200) {
    r.etag = Hex16(Fnv1a64(r.content_type + "\n" + r.body));
  }
  return r;
}

MetadataServer::Answer MetadataServer::Handle(const HttpRequest& request, Clock::MonoTime now) {
  Answer a;
  a.response = Render(request, now);
  std::string_view target = request.target;
  size_t q = target.find('?');
  if (a.response.status != 200 || q == std::string_view::npos) {
    return a;
  }
  std::map<std::string, std::string> query = ParseQueryString(target.substr(q + 1));
  if (!IsTrue(query, "wait_for_change")) {
    return a;
  }
  auto last = query.find("last_etag");
  if (last != query.end() && last->second != a.response.etag) {
    return a;  // changed since the caller last looked
  }
  a.wait = true;
  a.wait_etag = a.response.etag;
  a.wait_timeout = kDefaultWaitTimeout;
  if (auto t = query.find("timeout_sec"); t != query.end()) {
    long long secs = 0;
    if (ParseInt(t->second, &secs) && secs >= 0) {
      a.wait_timeout = std::min(std::chrono::seconds(secs), kMaxWaitTimeout);
    }
  }
  return a;
}

}  // namespace tpufleet::emulator::hosts
