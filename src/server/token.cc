#include "server/token.h"

#include "util/file.h"
#include "util/private_file.h"
#include "util/secret.h"
#include "util/strings.h"

namespace tpufleet::server {
namespace {

// A token line is the prefix and 43 characters; anything much longer is not ours.
constexpr size_t kMaxTokenFileBytes = 256;

// The token in `path`, checked as the header says; NotFound when there is no file.
Result<std::string> ReadToken(const std::string& path) {
  TPUFLEET_ASSIGN_OR_RETURN(std::string text, ReadPrivateFile(path, kMaxTokenFileBytes));
  std::string token(Trim(text));
  if (token.rfind(kServeTokenPrefix, 0) != 0 || token.size() <= kServeTokenPrefix.size() ||
      token.find_first_of(" \t\r\n") != std::string::npos) {
    return InvalidArgumentError(path + " does not hold a serve token; remove it and serve "
                                       "makes a new one");
  }
  return token;
}

}  // namespace

std::string ServeTokenPath(const std::string& state_dir) {
  return state_dir + "/serve/token";
}

Result<std::string> LoadOrMakeServeToken(const std::string& state_dir) {
  TPUFLEET_TRY(MakePrivateDirs(state_dir + "/serve"));
  std::string path = ServeTokenPath(state_dir);
  Result<std::string> token = ReadToken(path);
  if (token.ok() || token.status().code() != StatusCode::kNotFound) {
    return token;
  }
  TPUFLEET_ASSIGN_OR_RETURN(std::string fresh, NewSecretToken(kServeTokenPrefix));
  TPUFLEET_TRY(WriteFileAtomic(path, fresh + "\n", 0600));
  return fresh;
}

}  // namespace tpufleet::server
