#include "util/http_client.h"

#include <curl/curl.h>
#include <dlfcn.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <mutex>

#include "util/fingerprint.h"
#include "util/log.h"
#include "util/strings.h"

namespace tpufleet {
namespace {

// What the write, header and progress callbacks fill, and where they stop.
struct Receiving {
  HttpResponse* resp;
  const HttpRequest* req;
  size_t header_bytes = 0;
  bool body_too_large = false;
  bool headers_too_large = false;
  bool stopped = false;  // by req->on_body or req->stop
  bool idle = false;     // req->idle_timeout passed without a byte
  std::chrono::steady_clock::time_point last_byte = std::chrono::steady_clock::now();
  int status = 0;        // the last status line's (a 100 Continue's comes first)
};

// Returning less than given makes curl abort the transfer (CURLE_WRITE_ERROR).
size_t AppendBody(char* data, size_t size, size_t n, void* out) {
  auto* r = static_cast<Receiving*>(out);
  r->last_byte = std::chrono::steady_clock::now();
  if (r->req->on_body && r->status >= 200 && r->status < 300) {
    if (!r->req->on_body(std::string_view(data, size * n))) {
      r->stopped = true;
      return 0;
    }
    return size * n;
  }
  if (size * n > r->req->max_response_bytes - r->resp->body.size()) {
    r->body_too_large = true;
    return 0;
  }
  r->resp->body.append(data, size * n);
  return size * n;
}

size_t AppendHeader(char* data, size_t size, size_t n, void* out) {
  auto* r = static_cast<Receiving*>(out);
  r->last_byte = std::chrono::steady_clock::now();
  r->header_bytes += size * n;
  if (r->header_bytes > kMaxHttpHeaderBytes) {
    r->headers_too_large = true;
    return 0;
  }
  std::string line(data, size * n);
  if (StartsWith(line, "HTTP/")) {  // "HTTP/1.1 200 OK"
    long long code = 0;
    size_t space = line.find(' ');
    if (space != std::string::npos && ParseInt(line.substr(space + 1, 3), &code)) {
      r->status = static_cast<int>(code);
    }
  }
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

// Non-zero aborts the transfer (CURLE_ABORTED_BY_CALLBACK).
int CheckProgress(void* out, curl_off_t, curl_off_t, curl_off_t, curl_off_t) {
  auto* r = static_cast<Receiving*>(out);
  if (r->req->stop && r->req->stop()) {
    r->stopped = true;
    return 1;
  }
  if (r->req->idle_timeout.count() > 0 &&
      std::chrono::steady_clock::now() - r->last_byte > r->req->idle_timeout) {
    r->idle = true;
    return 1;
  }
  return 0;
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
  // libssl's, which libcurl (its OpenSSL build) loads: for pinning (Pin below). Null
  // with a libcurl built on another TLS library, which then cannot pin.
  decltype(&SSL_CTX_set_verify) ssl_ctx_set_verify;
  decltype(&SSL_CTX_set_cert_verify_callback) ssl_ctx_set_cert_verify_callback;
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
    if (void* ssl = dlopen("libssl.so.3", RTLD_NOW | RTLD_NOLOAD)) {
      if (!Resolve(ssl, "SSL_CTX_set_verify", c.ssl_ctx_set_verify) ||
          !Resolve(ssl, "SSL_CTX_set_cert_verify_callback", c.ssl_ctx_set_cert_verify_callback)) {
        c.ssl_ctx_set_verify = nullptr;
      }
    }
    // Not thread-safe, so once, here, before any Send.
    c.global_init(CURL_GLOBAL_DEFAULT);
    return c;
  }();
  return curl;
}

// A pinned certificate, checked in the handshake: OpenSSL asks CheckPin instead of
// verifying the chain against CAs (the certificate is its own issuer).
struct Pin {
  const Curl* lib;
  std::string want;  // a fingerprint, or kAnyCertificate
  std::string seen;  // the server's, once the handshake got that far
  bool refused = false;
};

int CheckPin(X509_STORE_CTX* store, void* arg) {
  auto* pin = static_cast<Pin*>(arg);
  X509* cert = X509_STORE_CTX_get0_cert(store);
  int n = cert != nullptr ? i2d_X509(cert, nullptr) : 0;
  if (n <= 0) {
    pin->refused = true;
    return 0;
  }
  std::string der(static_cast<size_t>(n), '\0');
  auto* out = reinterpret_cast<unsigned char*>(der.data());
  i2d_X509(cert, &out);
  pin->seen = Sha256Fingerprint(der);
  pin->refused = pin->want != kAnyCertificate && pin->seen != pin->want;
  return pin->refused ? 0 : 1;
}

CURLcode SetUpPin(CURL*, void* ssl_ctx, void* arg) {
  auto* pin = static_cast<Pin*>(arg);
  auto* ctx = static_cast<SSL_CTX*>(ssl_ctx);
  pin->lib->ssl_ctx_set_verify(ctx, SSL_VERIFY_PEER, nullptr);
  pin->lib->ssl_ctx_set_cert_verify_callback(ctx, CheckPin, pin);
  return CURLE_OK;
}

}  // namespace

CurlHttpClient::CurlHttpClient() = default;

Result<HttpResponse> CurlHttpClient::Send(const HttpRequest& req) {
  TPUFLEET_ASSIGN_OR_RETURN(const Curl& lib, LoadCurl());
  Pin pin{&lib, req.pinned_cert, "", false};
  if (!pin.want.empty() && (!StartsWith(req.url, "https://") || !lib.ssl_ctx_set_verify)) {
    return InvalidArgumentError(
        "a pinned certificate needs an https URL and a libcurl built with OpenSSL, not " +
        Redact(req.url));
  }
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
  if (!pin.want.empty()) {
    // The pin stands for the CAs and the name: the certificate is checked in SetUpPin's
    // callback, in the handshake, before the request (and its token) is sent.
    lib.easy_setopt(curl, CURLOPT_SSL_VERIFYPEER, 0L);
    lib.easy_setopt(curl, CURLOPT_SSL_VERIFYHOST, 0L);
    lib.easy_setopt(curl, CURLOPT_SSL_SESSIONID_CACHE, 0L);
    lib.easy_setopt(curl, CURLOPT_SSL_CTX_FUNCTION, SetUpPin);
    lib.easy_setopt(curl, CURLOPT_SSL_CTX_DATA, &pin);
  }
  Receiving receiving{&resp, &req};
  if (!req.on_body) {
    // A Content-Length over the cap is refused before any of the body comes.
    lib.easy_setopt(curl, CURLOPT_MAXFILESIZE_LARGE,
                    static_cast<curl_off_t>(std::min<size_t>(req.max_response_bytes, INT64_MAX)));
  }
  if (req.stop || req.idle_timeout.count() > 0) {
    lib.easy_setopt(curl, CURLOPT_NOPROGRESS, 0L);
    lib.easy_setopt(curl, CURLOPT_XFERINFOFUNCTION, CheckProgress);
    lib.easy_setopt(curl, CURLOPT_XFERINFODATA, &receiving);
  }
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
    if (receiving.stopped) {
      return FailedPreconditionError(what + "stopped");
    }
    if (receiving.idle) {
      return TimeoutError(what + "the server sent nothing for " +
                          std::to_string(req.idle_timeout.count() / 1000) + " s");
    }
    if (pin.refused) {
      return PermissionDeniedError(what + "the server's TLS certificate is " +
                                   (pin.seen.empty() ? "unreadable" : pin.seen) +
                                   ", not the pinned " + pin.want);
    }
    what += lib.easy_strerror(rc);
    if (rc == CURLE_OPERATION_TIMEDOUT) {
      return TimeoutError(what);
    }
    return UnavailableError(what);
  }
  resp.status = static_cast<int>(status);
  resp.cert_fingerprint = pin.seen;
  return resp;
}

}  // namespace tpufleet
