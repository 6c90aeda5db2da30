// HttpRequest and HttpResponse: the emulator's transport-agnostic view of one HTTP
// exchange. ApiServer::Handle maps one to the other, so unit tests drive the whole API
// without sockets and the HTTP binding (http_server.h) only copies fields across.
//
// Thread-safety: plain values.
#pragma once

#include <iterator>
#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace tpufleet::emulator {

struct HttpRequest {
  std::string method;  // "GET", "POST", "PATCH", "DELETE"
  std::string path;    // percent-decoded, without the query: "/v2/projects/p/locations/z/nodes"
  // Decoded, every value of a repeated name in the order sent.
  std::multimap<std::string, std::string> query;
  std::map<std::string, std::string> headers;  // names in lower case
  std::string body;

  /// The query parameter `name`, or "" when absent. Sent more than once, the last value
  /// counts, as at Google's front end.
  std::string Query(std::string_view name) const {
    auto [begin, end] = query.equal_range(std::string(name));
    return begin == end ? std::string() : std::prev(end)->second;
  }
  /// Every value of `name`, in the order sent (a repeated field: updateMask=a&updateMask=b).
  std::vector<std::string> QueryAll(std::string_view name) const {
    std::vector<std::string> out;
    auto [begin, end] = query.equal_range(std::string(name));
    for (auto it = begin; it != end; ++it) {
      out.push_back(it->second);
    }
    return out;
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
