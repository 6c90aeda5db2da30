// HttpRequest and HttpResponse: the emulator's transport-agnostic view of one HTTP
// exchange. ApiServer::Handle maps one to the other, so unit tests drive the whole API
// without sockets and the HTTP binding (http_server.h) only copies fields across.
//
// Thread-safety: plain values.
#pragma once

#include <map>
#include <string>
#include <string_view>

namespace tpufleet::emulator {

struct HttpRequest {
  std::string method;  // "GET", "POST", "PATCH", "DELETE"
  std::string path;    // percent-decoded, without the query: "/v2/projects/p/locations/z/nodes"
  std::map<std::string, std::string> query;    // decoded; a repeated name keeps its last value
  std::map<std::string, std::string> headers;  // names in lower case
  std::string body;

  /// The query parameter `name`, or "" when absent.
  std::string Query(std::string_view name) const {
    auto it = query.find(std::string(name));
    return it == query.end() ? std::string() : it->second;
  }
  bool HasQuery(std::string_view name) const { return query.count(std::string(name)) > 0; }
  /// The header `lower_case_name`, or "" when absent.
  std::string Header(std::string_view lower_case_name) const {
    auto it = headers.find(std::string(lower_case_name));
    return it == headers.end() ? std::string() : it->second;
  }
};

struct HttpResponse {
  int status = 200;
  std::string body;
  std::string content_type = "application/json; charset=UTF-8";
  std::map<std::string, std::string> headers;  // extra headers
};

}  // namespace tpufleet::emulator
