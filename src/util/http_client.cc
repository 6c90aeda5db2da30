#include "util/http_client.h"

#include <curl/curl.h>

#include <algorithm>
#include <cctype>
#include <mutex>

#include "util/log.h"

namespace tpufleet {
namespace {

size_t AppendBody(char* data, size_t size, size_t n, void* out) {
  static_cast<std::string*>(out)->append(data, size * n);
  return size * n;
}

size_t AppendHeader(char* data, size_t size, size_t n, void* out) {
  std::string line(data, size * n);
  size_t colon = line.find(':');
  if (colon != std::string::npos) {
    std::string name = line.substr(0, colon);
    std::transform(name.begin(), name.end(), name.begin(),
                   [](unsigned char c) { return std::tolower(c); });
    size_t b = line.find_first_not_of(" \t", colon + 1);
    size_t e = line.find_last_not_of(" \t\r\n");
    (*static_cast<std::map<std::string, std::string>*>(out))[name] =
        b == std::string::npos || e < b ? "" : line.substr(b, e - b + 1);
  }
  return size * n;
}

}  // namespace

CurlHttpClient::CurlHttpClient() {
  // curl_global_init is not thread-safe; do it once, before any Send.
  static std::once_flag once;
  std::call_once(once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
}

Result<HttpResponse> CurlHttpClient::Send(const HttpRequest& req) {
  CURL* curl = curl_easy_init();
  if (curl == nullptr) {
    return InternalError("could not create an HTTP handle");
  }
  HttpResponse resp;
  curl_slist* headers = nullptr;
  for (const auto& [name, value] : req.headers) {
    headers = curl_slist_append(headers, (name + ": " + value).c_str());
  }
  // Without this, curl adds "Expect: 100-continue" to large POSTs and waits a second.
  headers = curl_slist_append(headers, "Expect:");
  curl_easy_setopt(curl, CURLOPT_URL, req.url.c_str());
  curl_easy_setopt(curl, CURLOPT_CUSTOMREQUEST, req.method.c_str());
  curl_easy_setopt(curl, CURLOPT_HTTPHEADER, headers);
  if (!req.body.empty() || req.method == "POST" || req.method == "PATCH" ||
      req.method == "PUT") {
    curl_easy_setopt(curl, CURLOPT_POSTFIELDS, req.body.data());
    curl_easy_setopt(curl, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(req.body.size()));
  }
  curl_easy_setopt(curl, CURLOPT_TIMEOUT_MS, static_cast<long>(req.timeout.count()));
  curl_easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);  // no SIGALRM in a threaded program
  curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, AppendBody);
  curl_easy_setopt(curl, CURLOPT_WRITEDATA, &resp.body);
  curl_easy_setopt(curl, CURLOPT_HEADERFUNCTION, AppendHeader);
  curl_easy_setopt(curl, CURLOPT_HEADERDATA, &resp.headers);
  CURLcode rc = curl_easy_perform(curl);
  long status = 0;
  curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &status);
  curl_slist_free_all(headers);
  curl_easy_cleanup(curl);
  if (rc != CURLE_OK) {
    // The URL may carry a token in its query; Redact before it reaches a message.
    std::string what = req.method + " " + Redact(req.url) + ": " + curl_easy_strerror(rc);
    if (rc == CURLE_OPERATION_TIMEDOUT) {
      return TimeoutError(what);
    }
    return UnavailableError(what);
  }
  resp.status = static_cast<int>(status);
  return resp;
}

}  // namespace tpufleet
