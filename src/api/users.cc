#include "api/users.h"

#include "api/json_internal.h"

namespace tpufleet::api {
namespace {

using internal::ArrayOf;
using internal::Dump;
using internal::kDocumentIndent;
using internal::WithError;
using nlohmann::json;

json UserJson(const UserEntry& u) {
  return {{"fleet", u.fleet}, {"name", u.name},   {"source", u.source}, {"keys", u.keys},
          {"sudo", u.sudo},   {"nodes", u.nodes}, {"role", u.role}};
}

json UserNodeJson(const UserNodeReport& n) {
  json j = {{"node", n.node}, {"workers", n.workers}, {"ok", !n.error}};
  if (!n.skipped.empty()) {
    j["skipped"] = n.skipped;
  }
  return WithError(std::move(j), n.error);
}

}  // namespace

std::string ToJson(const std::vector<UserEntry>& users) {
  return Dump({{"users", ArrayOf(users, UserJson)}}, kDocumentIndent);
}

std::string ToJson(const UserChangeReport& report) {
  return Dump({{"user", UserJson(report.user)}, {"nodes", ArrayOf(report.nodes, UserNodeJson)}},
              kDocumentIndent);
}

}  // namespace tpufleet::api
