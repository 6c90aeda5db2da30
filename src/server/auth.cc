#include "server/auth.h"

#include <algorithm>

#include "control/person_tokens.h"
#include "util/secret.h"
#include "util/strings.h"

namespace tpufleet::server {
namespace {

// The Bearer token of `headers`, or "" when there is none.
std::string BearerToken(const std::map<std::string, std::string>& headers) {
  auto it = headers.find("authorization");
  if (it == headers.end()) {
    return "";
  }
  std::string_view v = Trim(it->second);
  constexpr std::string_view kScheme = "bearer ";
  if (v.size() <= kScheme.size() || AsciiLower(v.substr(0, kScheme.size())) != kScheme) {
    return "";
  }
  return std::string(Trim(v.substr(kScheme.size())));
}

}  // namespace

Result<Caller> Authenticate(const std::map<std::string, std::string>& headers,
                            const std::string& token, Store* store) {
  std::string presented = BearerToken(headers);
  if (presented.empty()) {
    return PermissionDeniedError(
        "this API needs `Authorization: Bearer TOKEN`: serve's (STATE/serve/token) or the "
        "one `tpufleet invite` gave you");
  }
  if (ConstantTimeEquals(presented, token)) {
    return Caller{"operator", Access::Everything("operator")};
  }
  if (store == nullptr) {
    return PermissionDeniedError("the token is not serve's (STATE/serve/token)");
  }
  TPUFLEET_ASSIGN_OR_RETURN(TokenRecord found, FindPersonToken(*store, presented));
  TPUFLEET_ASSIGN_OR_RETURN(std::vector<UserRecord> rows, store->Users(""));
  Access access = Access::Of(found.person, rows);
  if (std::none_of(rows.begin(), rows.end(),
                   [&](const UserRecord& u) { return u.name == found.person; })) {
    return PermissionDeniedError(found.person +
                                 " is no longer a collaborator of any fleet on this server");
  }
  return Caller{found.person, std::move(access)};
}

}  // namespace tpufleet::server
