#include "api/invite.h"

#include <cctype>

#include "api/json_internal.h"
#include "core/fleet_spec.h"
#include "util/fingerprint.h"
#include "util/strings.h"

namespace tpufleet::api {
namespace {

using internal::ArrayOf;
using internal::Dump;
using internal::kDocumentIndent;
using nlohmann::json;

// Tokens are a prefix and base64url; a few hundred characters is far beyond any.
constexpr size_t kMaxTokenChars = 256;

bool IsTokenText(std::string_view token) {
  if (token.empty() || token.size() > kMaxTokenChars) {
    return false;
  }
  for (char c : token) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '-' && c != '_') {
      return false;
    }
  }
  return true;
}

// The string field `name` of `j`, or "" when it is missing or not a string.
std::string Text(const json& j, const char* name) {
  auto it = j.find(name);
  return it != j.end() && it->is_string() ? it->get<std::string>() : std::string();
}

json HostJson(const WorkerHost& h) {
  return {{"fleet", h.fleet},     {"node", h.node}, {"worker", h.worker},
          {"address", h.address}, {"port", h.port}, {"host_key", h.host_key}};
}

}  // namespace

std::string ToJson(const Invite& invite) {
  return Dump({{"tpufleet_invite", kInviteVersion},
               {"server", invite.server},
               {"fingerprint", invite.fingerprint},
               {"person", invite.person},
               {"token", invite.token}},
              kDocumentIndent) +
         "\n";
}

Result<Invite> ParseInvite(std::string_view text) {
  if (text.size() > kMaxInviteBytes) {
    return InvalidArgumentError("it is larger than an invite file can be (" +
                                std::to_string(kMaxInviteBytes) + " bytes)");
  }
  json j = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (!j.is_object() || !j.contains("tpufleet_invite")) {
    return InvalidArgumentError("it is not a tpufleet invite (a JSON object with "
                                "\"tpufleet_invite\", as `tpufleet invite` writes it)");
  }
  if (j["tpufleet_invite"] != kInviteVersion) {
    return InvalidArgumentError("it is an invite of another format version than this "
                                "tpufleet reads (" + std::to_string(kInviteVersion) +
                                "): update tpufleet, or ask for a new invite");
  }
  Invite invite{Text(j, "server"), Text(j, "fingerprint"), Text(j, "person"), Text(j, "token")};
  if (!StartsWith(invite.server, "https://") || invite.server.size() > 300) {
    return InvalidArgumentError("its \"server\" is not an https:// URL");
  }
  if (!IsSha256Fingerprint(invite.fingerprint)) {
    return InvalidArgumentError("its \"fingerprint\" is not a certificate's SHA256:…");
  }
  if (!CheckUserName(invite.person).ok()) {
    return InvalidArgumentError("its \"person\" is not a collaborator's login name");
  }
  if (!IsTokenText(invite.token)) {
    return InvalidArgumentError("its \"token\" is not a token");
  }
  return invite;
}

std::string ToJson(const std::vector<WorkerHost>& hosts) {
  return Dump({{"hosts", ArrayOf(hosts, HostJson)}}, kDocumentIndent);
}

Result<std::vector<WorkerHost>> ParseWorkerHosts(std::string_view text) {
  json j = json::parse(text, nullptr, /*allow_exceptions=*/false);
  auto bad = [] {
    return InvalidArgumentError("the server's hosts are not {\"hosts\": [{\"fleet\", \"node\", "
                                "\"worker\", \"address\", \"port\", \"host_key\"}, …]}");
  };
  if (!j.is_object() || !j.contains("hosts") || !j["hosts"].is_array()) {
    return bad();
  }
  std::vector<WorkerHost> out;
  for (const json& h : j["hosts"]) {
    if (!h.is_object() || !h.contains("worker") || !h["worker"].is_number_integer() ||
        !h.contains("port") || !h["port"].is_number_integer()) {
      return bad();
    }
    WorkerHost w{Text(h, "fleet"), Text(h, "node"), h["worker"].get<int>(), Text(h, "address"),
                 h["port"].get<int>(), Text(h, "host_key")};
    if (w.node.empty() || w.address.empty()) {
      return bad();
    }
    out.push_back(std::move(w));
  }
  return out;
}

}  // namespace tpufleet::api
