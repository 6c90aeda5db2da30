#include "remote/joined_servers.h"

#include <nlohmann/json.hpp>

#include "remote/known_servers.h"
#include "util/file.h"
#include "util/private_file.h"
#include "util/strings.h"

namespace tpufleet::remote {
namespace {

// A joined server's file is a few hundred bytes.
constexpr size_t kMaxJoinedBytes = 4096;

// CONFIG/tpufleet: where known_servers is.
Result<std::string> ConfigDir(const std::map<std::string, std::string>& env) {
  TPUFLEET_ASSIGN_OR_RETURN(std::string known, KnownServersPath(env));
  return known.substr(0, known.rfind('/'));
}

// The private file `path`'s text; nullopt when it does not exist.
Result<std::optional<std::string>> ReadIfThere(const std::string& path) {
  Result<std::string> text = ReadPrivateFile(path, kMaxJoinedBytes);
  if (!text.ok() && text.status().code() == StatusCode::kNotFound) {
    return std::optional<std::string>();
  }
  if (!text.ok()) {
    return text.status();
  }
  return std::optional<std::string>(*std::move(text));
}

}  // namespace

Status SaveJoinedServer(const std::map<std::string, std::string>& env,
                        const JoinedServer& joined) {
  TPUFLEET_ASSIGN_OR_RETURN(std::string dir, ConfigDir(env));
  TPUFLEET_TRY(MakePrivateDirs(dir + "/servers"));
  nlohmann::json j = {{"url", joined.url}, {"person", joined.person}, {"token", joined.token}};
  TPUFLEET_TRY(WriteFileAtomic(dir + "/servers/" + joined.server, j.dump(2) + "\n", 0600));
  return WriteFileAtomic(dir + "/server", joined.url + "\n", 0600);
}

Result<std::optional<JoinedServer>> FindJoinedServer(const std::map<std::string, std::string>& env,
                                                     const std::string& server) {
  TPUFLEET_ASSIGN_OR_RETURN(std::string dir, ConfigDir(env));
  std::string path = dir + "/servers/" + server;
  TPUFLEET_ASSIGN_OR_RETURN(std::optional<std::string> text, ReadIfThere(path));
  if (!text) {
    return std::optional<JoinedServer>();
  }
  nlohmann::json j = nlohmann::json::parse(*text, nullptr, /*allow_exceptions=*/false);
  auto field = [&j](const char* name) {
    return j.is_object() && j.contains(name) && j[name].is_string() ? j[name].get<std::string>()
                                                                    : std::string();
  };
  JoinedServer joined{field("url"), server, field("person"), field("token")};
  if (joined.url.empty() || joined.person.empty() || joined.token.empty()) {
    return InvalidArgumentError(path + " is not a joined server's file ({\"url\", \"person\", "
                                "\"token\"}, as `tpufleet join` writes it); join again");
  }
  return std::optional<JoinedServer>(std::move(joined));
}

Result<std::optional<std::string>> DefaultServerUrl(const std::map<std::string, std::string>& env) {
  TPUFLEET_ASSIGN_OR_RETURN(std::string dir, ConfigDir(env));
  TPUFLEET_ASSIGN_OR_RETURN(std::optional<std::string> text, ReadIfThere(dir + "/server"));
  if (!text || Trim(*text).empty()) {
    return std::optional<std::string>();
  }
  return std::optional<std::string>(std::string(Trim(*text)));
}

}  // namespace tpufleet::remote
