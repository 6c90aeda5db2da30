#include "util/http_client.h"

#include <curl/curl.h>
#include <dlfcn.h>

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <mutex>

#include "util/log.h"
#include "util/strings.h"

namespace tpufleet {
namespace {

// What the write and header callbacks fill, and where they stop.
struct Receiving {
  HttpResponse* resp;
  size_t max_body;
  size_t header_bytes = 0;
  bool body_too_large = false;
  bool headers_too_large = false;
};

// Returning less than given makes curl abort the transfer (CURLE_WRITE_ERROR).
size_t AppendBody(char* data, size_t size, size_t n, void* out) {
  auto* r = static_cast<Receiving*>(out);
  if (size * n > r->max_body - r->resp->body.size()) {
    r->body_too_large = true;
    return 0;
  }
  r->resp->body.append(data, size * n);
  return size * n;
}

size_t AppendHeader(char* data, size_t size, size_t n, void* out) {
  auto* r = static_cast<Receiving*>(out);
  r->header_bytes += size * n;
  if (r->header_bytes > kMaxHttpHeaderBytes) {
    r->headers_too_large = true;
    return 0;
  }
  std::string line(data, size * n);
  size_t colon = line.find(':');
  if (colon != std::string::npos) {
    std::string name = line.substr(0, colon);
    std::transform(name.begin(), name.end(), name.begin(),
                   [](unsigned char c) { return std::tolower(c); });
    size_t b = line.find_first_not_of(" \t", colon + 1);
    size_t e = line.find_last_not_of(" \t\r\n");
    r->resp->headers[name] =
        b == std::string::npos || e < b ? "" : line.substr(b, e - b + 1);
  }
  return size * n;
}

// libcurl, loaded on first use. Linking it would load ~30 libraries (TLS, LDAP,
// Kerberos…) into every tpufleet process, ~4 ms of CPU before main, which commands
// answered from local state (`status`, `catalog`) must not pay.
struct Curl {
  decltype(&curl_global_init) global_init;
  decltype(&curl_easy_init) easy_init;
  decltype(&curl_easy_setopt) easy_setopt;
  decltype(&curl_easy_perform) easy_perform;
  decltype(&curl_easy_getinfo) easy_getinfo;
  decltype(&curl_easy_cleanup) easy_cleanup;
  decltype(&curl_easy_strerror) easy_strerror;
  decltype(&curl_slist_append) slist_append;
  decltype(&curl_slist_free_all) slist_free_all;
};

template <typename F>
bool Resolve(void* lib, const char* name, F& f) {
  f = reinterpret_cast<F>(dlsym(lib, name));
  return f != nullptr;
}

// The loaded library, or the error saying why not.
const Result<Curl>& LoadCurl() {
  static const Result<Curl> curl = []() -> Result<Curl> {
    void* lib = dlopen("libcurl.so.4", RTLD_NOW | RTLD_LOCAL);
    if (lib == nullptr) {
      return FailedPreconditionError(std::string("cannot load libcurl (install libcurl4): ") +
                                     dlerror());
    }
    Curl c{};
    if (!Resolve(lib, "curl_global_init", c.global_init) ||
        !Resolve(lib, "curl_easy_init", c.easy_init) ||
        !Resolve(lib, "curl_easy_setopt", c.easy_setopt) ||
        !Resolve(lib, "curl_easy_perform", c.easy_perform) ||
        !Resolve(lib, "curl_easy_getinfo", c.easy_getinfo) ||
        !Resolve(lib, "curl_easy_cleanup", c.easy_cleanup) ||
        !Resolve(lib, "curl_easy_strerror", c.easy_strerror) ||
        !Resolve(lib, "curl_slist_append", c.slist_append) ||
        !Resolve(lib, "curl_slist_free_all", c.slist_free_all)) {
      return FailedPreconditionError("libcurl.so.4 lacks a function tpufleet needs");
    }
    // Not thread-safe, so once, here, before any Send.
    c.global_init(CURL_GLOBAL_DEFAULT);
    return c;
  }();
  return curl;
}

}  // namespace

CurlHttpClient::CurlHttpClient() = default;

Result<HttpResponse> CurlHttpClient::Send(const HttpRequest& req) {
  TPUFLEET_ASSIGN_OR_RETURN(const Curl& lib, LoadCurl());
  CURL* curl = lib.easy_init();
  if (curl == nullptr) {
    return InternalError("could not create an HTTP handle");
  }
  HttpResponse resp;
  curl_slist* headers = nullptr;
  for (const auto& [name, value] : req.headers) {
    headers = lib.slist_append(headers, (name + ": " + value).c_str());
  }
  // Without this, curl adds "Expect: 100-continue" to large POSTs and waits a second.
  headers = lib.slist_append(headers, "Expect:");
  lib.easy_setopt(curl, CURLOPT_URL, req.url.c_str());
  lib.easy_setopt(curl, CURLOPT_CUSTOMREQUEST, req.method.c_str());
  lib.easy_setopt(curl, CURLOPT_HTTPHEADER, headers);
  if (!req.body.empty() || req.method == "POST" || req.method == "PATCH" ||
      req.method == "PUT") {
    lib.easy_setopt(curl, CURLOPT_POSTFIELDS, req.body.data());
    lib.easy_setopt(curl, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(req.body.size()));
  }
  lib.easy_setopt(curl, CURLOPT_TIMEOUT_MS, static_cast<long>(req.timeout.count()));
  lib.easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);  // no SIGALRM in a threaded program
  Receiving receiving{&resp, req.max_response_bytes};
  // A Content-Length over the cap is refused before any of the body comes.
  lib.easy_setopt(curl, CURLOPT_MAXFILESIZE_LARGE,
                  static_cast<curl_off_t>(std::min<size_t>(req.max_response_bytes, INT64_MAX)));
  lib.easy_setopt(curl, CURLOPT_WRITEFUNCTION, AppendBody);
  lib.easy_setopt(curl, CURLOPT_WRITEDATA, &receiving);
  lib.easy_setopt(curl, CURLOPT_HEADERFUNCTION, AppendHeader);
  lib.easy_setopt(curl, CURLOPT_HEADERDATA, &receiving);
  CURLcode rc = lib.easy_perform(curl);
  long status = 0;
  lib.easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &status);
  lib.slist_free_all(headers);
  lib.easy_cleanup(curl);
  if (rc != CURLE_OK) {
    // The URL may carry a token in its query; Redact before it reaches a message.
    std::string what = req.method + " " + Redact(req.url) + ": ";
    if (receiving.body_too_large || rc == CURLE_FILESIZE_EXCEEDED) {
      return InternalError(what + "the response is larger than " +
                           FormatBytes(req.max_response_bytes) +
                           ", the most tpufleet accepts; the transfer was stopped");
    }
    if (receiving.headers_too_large) {
      return InternalError(what + "the response's headers pass " +
                           FormatBytes(kMaxHttpHeaderBytes) + "; the transfer was stopped");
    }
    what += lib.easy_strerror(rc);
    if (rc == CURLE_OPERATION_TIMEDOUT) {
      return TimeoutError(what);
    }
    return UnavailableError(what);
  }
  resp.status = static_cast<int>(status);
  return resp;
}

}  // namespace tpufleet
