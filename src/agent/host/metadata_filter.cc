#include "agent/host/metadata_filter.h"

#include <algorithm>

#include "util/encoding.h"
#include "util/strings.h"

namespace tpufleet::agent::host {
namespace {

// Headers past this count make a head malformed; metadata clients send under ten.
constexpr size_t kMaxHeaders = 64;

bool Printable(std::string_view text) {
  return std::all_of(text.begin(), text.end(), [](char c) {
    auto u = static_cast<unsigned char>(c);
    return u > 0x20 && u < 0x7f;
  });
}

// The leaves below one service account that hold no credential.
bool HarmlessAccountLeaf(const std::string& leaf) {
  return leaf == "email" || leaf == "aliases" || leaf == "scopes";
}

}  // namespace

Result<ProxiedHead> ParseProxiedHead(std::string_view head) {
  std::vector<std::string> lines;
  for (std::string& line : Split(head, '\n')) {
    if (!line.empty() && line.back() == '\r') {
      line.pop_back();
    }
    if (line.empty()) {
      break;
    }
    lines.push_back(std::move(line));
  }
  if (lines.empty() || lines.size() > kMaxHeaders + 1) {
    return InvalidArgumentError("not an HTTP request head");
  }
  std::vector<std::string> parts = Split(lines[0], ' ');
  if (parts.size() != 3 || parts[0].empty() || parts[1].empty() ||
      !StartsWith(parts[2], "HTTP/1.")) {
    return InvalidArgumentError("not an HTTP request line");
  }
  ProxiedHead h;
  h.method = parts[0];
  h.target = parts[1];
  for (size_t i = 1; i < lines.size(); ++i) {
    size_t colon = lines[i].find(':');
    if (colon == std::string::npos || colon == 0) {
      return InvalidArgumentError("a malformed header line");
    }
    std::string name(Trim(std::string_view(lines[i]).substr(0, colon)));
    std::string value(Trim(std::string_view(lines[i]).substr(colon + 1)));
    std::string lower = AsciiLower(name);
    if (lower == "transfer-encoding") {
      h.has_body = true;
    }
    long long length = 0;
    if (lower == "content-length" && (!ParseInt(value, &length) || length != 0)) {
      h.has_body = true;
    }
    h.headers.emplace_back(std::move(name), std::move(value));
  }
  return h;
}

Result<std::vector<std::string>> NormalizedSegments(std::string_view target) {
  if (target.empty() || target[0] != '/' || !Printable(target) ||
      target.find('#') != std::string_view::npos) {
    return InvalidArgumentError("not a plain path");
  }
  std::string path(target.substr(0, target.find('?')));
  for (int round = 0;; ++round) {
    std::string decoded = PercentDecode(path, /*plus_is_space=*/false);
    if (decoded == path) {
      break;
    }
    if (round == kMaxDecodeRounds) {
      return InvalidArgumentError("a path encoded too many times");
    }
    path = std::move(decoded);
  }
  if (!Printable(path)) {
    return InvalidArgumentError("a path with bytes outside printable ASCII");
  }
  std::replace(path.begin(), path.end(), '\\', '/');
  std::vector<std::string> segments;
  for (std::string& s : Split(path, '/')) {
    s = AsciiLower(s.substr(0, s.find(';')));
    if (s.empty() || s == ".") {
      continue;
    }
    if (s == "..") {
      if (!segments.empty()) {
        segments.pop_back();
      }
      continue;
    }
    segments.push_back(std::move(s));
  }
  return segments;
}

MetadataVerdict DecideMetadataRequest(const ProxiedHead& head) {
  if (head.method != "GET") {
    return {false, 405, head.method + " requests (only GET goes through)"};
  }
  if (head.has_body) {
    return {false, 400, "requests with a body"};
  }
  Result<std::vector<std::string>> segments = NormalizedSegments(head.target);
  if (!segments.ok()) {
    return {false, 400, "this request target (" + segments.status().message() + ")"};
  }
  auto accounts = std::find(segments->begin(), segments->end(), "service-accounts");
  if (accounts == segments->end()) {
    return {true, 200, ""};
  }
  // Below service-accounts: [], [ACCOUNT] (listings) or [ACCOUNT, harmless leaf].
  size_t below = static_cast<size_t>(segments->end() - accounts) - 1;
  if (below <= 1 || (below == 2 && HarmlessAccountLeaf(segments->back()))) {
    return {true, 200, ""};
  }
  return {false, 403, "the service account's " + *(accounts + 2)};
}

bool CarriesCredential(std::string_view body) {
  std::string lower = AsciiLower(body);
  return lower.find("access_token") != std::string::npos ||
         lower.find("ya29.") != std::string::npos;
}

std::string RefusalText(const MetadataVerdict& verdict, const std::string& user) {
  return "tpufleet: the metadata server does not give " + verdict.what + " to " + user +
         ", an account without sudo on this node (the fleet's admin can give it sudo)\n";
}

}  // namespace tpufleet::agent::host
