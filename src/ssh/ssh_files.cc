#include "ssh/ssh_files.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <set>

#include "core/fleet_spec.h"
#include "ssh/os.h"
#include "util/file.h"
#include "util/strings.h"

namespace tpufleet {
namespace {

constexpr std::string_view kGeneratedNote =
    "# Written by tpufleet from its state; edits here are lost at the next change.\n";

bool IsAlnum(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
}

// Letters, digits, '.', '_', '-', not starting with '.' or '-': nothing ssh_config or
// ssh's command line could read as a quote, comment, pattern, token or option.
bool IsPlainWord(std::string_view s) {
  if (s.empty() || s.size() > 255 || !(IsAlnum(s[0]) || s[0] == '_')) {
    return false;
  }
  for (char c : s) {
    if (!IsAlnum(c) && c != '.' && c != '_' && c != '-') {
      return false;
    }
  }
  return true;
}

// A path as an ssh_config argument. Quotes, backslashes and control characters are
// refused (ssh_config has no escape that survives every version); a space is quoted.
// `tokens`: the keyword expands %-tokens, so a literal '%' is written "%%".
Result<std::string> ConfigPath(std::string_view what, std::string_view path, bool tokens) {
  if (path.empty()) {
    return InvalidArgumentError(std::string(what) + " is empty");
  }
  std::string out;
  bool space = false;
  for (char c : path) {
    auto u = static_cast<unsigned char>(c);
    if (u < 0x20 || u == 0x7f || c == '"' || c == '\\') {
      return InvalidArgumentError(std::string(what) + " " + QuoteForMessage(path) +
                                  " has a quote, backslash or control character");
    }
    space = space || c == ' ';
    out += (tokens && c == '%') ? "%%" : std::string(1, c);
  }
  return space ? "\"" + out + "\"" : out;
}

// The host key's "TYPE BASE64", without its comment.
std::string KeyTypeAndBlob(std::string_view key) {
  std::vector<std::string> words;
  for (std::string& w : Split(Trim(key), ' ')) {
    if (!w.empty()) {
      words.push_back(std::move(w));
    }
  }
  return words.size() >= 2 ? words[0] + " " + words[1] : std::string();
}

Status CheckEntry(const SshHostEntry& e) {
  TPUFLEET_TRY(CheckSshAlias(e.alias));
  auto in = [&e](std::string_view what) { return "host " + e.alias + ": " + std::string(what); };
  if (Status s = CheckHostAddress(e.address); !s.ok()) {
    return InvalidArgumentError(in("address " + s.message()));
  }
  if (e.port < 0 || e.port > 65535) {
    return InvalidArgumentError(in("port " + std::to_string(e.port) + " is out of range"));
  }
  if (!e.user.empty() && !IsPlainWord(e.user)) {
    return InvalidArgumentError(
        in("user " + QuoteForMessage(e.user) + " is not a plain login name"));
  }
  if (!e.host_key.empty()) {
    if (Status s = CheckSshPublicKey(e.host_key); !s.ok()) {
      return InvalidArgumentError(in("host key: " + s.message()));
    }
  }
  return Status::Ok();
}

std::string KnownHostsName(const SshHostEntry& e) {
  if (e.port == 0 || e.port == 22) {
    return e.address;
  }
  return "[" + e.address + "]:" + std::to_string(e.port);
}

// True when `line` (before any Host or Match line of `text`) is already in `text`.
bool HasGlobalLine(std::string_view text, std::string_view line) {
  for (const std::string& raw : Split(text, '\n')) {
    std::string_view l = Trim(raw);
    if (l == line) {
      return true;
    }
    std::string keyword(l.substr(0, l.find_first_of(" \t=")));
    for (char& c : keyword) {
      c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    }
    if (keyword == "host" || keyword == "match") {
      return false;  // from here on, a line applies only inside that block
    }
  }
  return false;
}

}  // namespace

Status CheckSshAlias(std::string_view alias) {
  if (!IsPlainWord(alias)) {
    return InvalidArgumentError("ssh alias " + QuoteForMessage(alias) +
                                " must be letters, digits, '.', '_' and '-', not starting "
                                "with '.' or '-'");
  }
  return Status::Ok();
}

Result<std::string> RenderSshConfig(const std::vector<SshHostEntry>& entries,
                                    const std::string& known_hosts_path) {
  std::string out(kGeneratedNote);
  std::set<std::string> seen;
  for (const SshHostEntry& e : entries) {
    TPUFLEET_TRY(CheckEntry(e));
    std::string lower = e.alias;
    for (char& c : lower) {
      c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    }
    if (!seen.insert(lower).second) {
      return InvalidArgumentError("ssh alias " + e.alias + " appears twice");
    }
    const std::string& kh = e.known_hosts_file.empty() ? known_hosts_path : e.known_hosts_file;
    TPUFLEET_ASSIGN_OR_RETURN(std::string known_hosts,
                              ConfigPath("host " + e.alias + ": known_hosts file", kh, true));
    out += "\nHost " + e.alias + "\n";
    out += "  HostName " + e.address + "\n";
    if (e.port != 0) {
      out += "  Port " + std::to_string(e.port) + "\n";
    }
    if (!e.user.empty()) {
      out += "  User " + e.user + "\n";
    }
    if (!e.identity_file.empty()) {
      TPUFLEET_ASSIGN_OR_RETURN(
          std::string identity,
          ConfigPath("host " + e.alias + ": identity file", e.identity_file, true));
      out += "  IdentityFile " + identity + "\n";
      out += "  IdentitiesOnly yes\n";
    }
    out += "  UserKnownHostsFile " + known_hosts + "\n";
    out += "  StrictHostKeyChecking yes\n";
    out += "  ServerAliveInterval " + std::to_string(kServerAliveInterval.count()) + "\n";
  }
  return out;
}

std::string RenderKnownHosts(const std::vector<SshHostEntry>& entries) {
  std::string out(kGeneratedNote);
  std::set<std::string> seen;
  for (const SshHostEntry& e : entries) {
    // Checked again here: a newline in a key would pin a second, foreign key.
    if (e.host_key.empty() || !CheckEntry(e).ok()) {
      continue;
    }
    std::string line = KnownHostsName(e) + " " + KeyTypeAndBlob(e.host_key) + "\n";
    if (seen.insert(line).second) {
      out += line;
    }
  }
  return out;
}

Status WriteSshFiles(const std::string& dir, const std::vector<SshHostEntry>& entries) {
  std::string known_hosts = dir + "/known_hosts";
  TPUFLEET_ASSIGN_OR_RETURN(std::string config, RenderSshConfig(entries, known_hosts));
  TPUFLEET_TRY(MakePrivateDirs(dir));
  // known_hosts first, so the config never names a worker whose key is not pinned yet.
  TPUFLEET_TRY(WriteFileAtomic(known_hosts, RenderKnownHosts(entries), 0600));
  return WriteFileAtomic(dir + "/config", config, 0600);
}

Status EnsureSshInclude(const std::string& user_config, const std::string& include_path) {
  std::string arg;
  {
    // Include globs its argument (and newer OpenSSH expands tokens): no such characters.
    if (include_path.find_first_of("*?[%") != std::string::npos) {
      return InvalidArgumentError("cannot include " + QuoteForMessage(include_path) +
                                  ": the path has a glob or % character");
    }
    TPUFLEET_ASSIGN_OR_RETURN(arg, ConfigPath("include path", include_path, false));
  }
  std::string line = "Include " + arg;
  // Write through a symlink (dotfile managers link ~/.ssh/config), never over it.
  std::string path = user_config;
  if (char* real = ::realpath(user_config.c_str(), nullptr)) {
    path = real;
    std::free(real);
  }
  Result<std::string> old = ReadFile(path);
  if (!old.ok() && old.status().code() == StatusCode::kNotFound) {
    size_t slash = path.find_last_of('/');
    if (slash != std::string::npos && slash > 0) {
      TPUFLEET_TRY(MakePrivateDirs(path.substr(0, slash)));
    }
    return WriteFileAtomic(path, line + "\n", 0600);
  }
  TPUFLEET_TRY(old.status());
  if (HasGlobalLine(*old, line)) {
    return Status::Ok();
  }
  struct stat st;
  if (::stat(path.c_str(), &st) != 0) {
    return ErrnoStatus(path, errno);
  }
  // First: an Include after a Host line would apply only inside that Host's block.
  TPUFLEET_TRY(WriteFileAtomic(path, line + "\n" + *old, static_cast<int>(st.st_mode & 07777)));
  // ssh refuses a config its user does not own; keep the owner when root edits it.
  if (::chown(path.c_str(), st.st_uid, st.st_gid) != 0 && errno != EPERM) {
    return ErrnoStatus("chown " + path, errno);
  }
  return Status::Ok();
}

}  // namespace tpufleet
