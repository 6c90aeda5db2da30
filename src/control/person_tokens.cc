#include "control/person_tokens.h"

#include "util/encoding.h"
#include "util/secret.h"

namespace tpufleet {

std::string PersonTokenDigest(std::string_view token) {
  return HexEncode(Sha256(token));
}

Result<std::string> IssuePersonToken(Store& store, const std::string& person,
                                     const std::string& label, Clock::WallTime now,
                                     bool replace) {
  TPUFLEET_ASSIGN_OR_RETURN(std::string token, NewSecretToken(kPersonTokenPrefix));
  TPUFLEET_TRY(store.Transaction([&]() -> Status {
    if (replace) {
      TPUFLEET_TRY(store.DeleteTokens(person));
    }
    return store.PutToken({PersonTokenDigest(token), person, label, now});
  }));
  return token;
}

Result<TokenRecord> FindPersonToken(Store& store, std::string_view token) {
  // Looked up by digest: the comparison is of hashes, so its timing tells nothing of
  // the token.
  TPUFLEET_ASSIGN_OR_RETURN(std::optional<TokenRecord> found,
                            store.FindToken(PersonTokenDigest(token)));
  if (!found) {
    return PermissionDeniedError("the token is neither serve's nor a person's of this server");
  }
  return *std::move(found);
}

}  // namespace tpufleet
