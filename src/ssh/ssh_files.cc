#include "ssh/ssh_files.h"
#include "ssh/ssh_include_mode.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <set>

#include "core/fleet_spec.h"
#include "util/encoding.h"
#include "util/fingerprint.h"
#include "util/file.h"
#include "util/strings.h"
#include "util/unique_fd.h"

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

// The user whose ~/.ssh config is edited, and the directory that says so.
struct Owner {
  std::string dir;  // ~/.ssh, or HOME (or above) while ~/.ssh does not exist
  uid_t uid = 0;
  gid_t gid = 0;
};

Result<Owner> OwnerOfConfigDir(const std::string& user_config) {
  std::string dir = user_config;
  while (true) {
    size_t slash = dir.find_last_of('/');
    if (slash == std::string::npos) {
      dir = ".";
    } else {
      dir = slash == 0 ? "/" : dir.substr(0, slash);
    }
    struct stat st {};
    if (::stat(dir.c_str(), &st) == 0) {
      return Owner{dir, st.st_uid, st.st_gid};
    }
    if (errno != ENOENT || dir == "/" || dir == ".") {
      return ErrnoStatus(dir, errno);
    }
  }
}

// chown to the config's owner when root writes for someone else; a no-op otherwise.
Status GiveTo(const std::string& path, uid_t uid, gid_t gid) {
  if (uid == ::geteuid()) {
    return Status::Ok();
  }
  if (::lchown(path.c_str(), uid, gid) != 0) {
    return ErrnoStatus("chown " + path, errno);
  }
  return Status::Ok();
}

// ~/.ssh (0700) for `owner`, made by root when it edits another user's config.
Status MakeSshDir(const std::string& dir, const Owner& owner) {
  if (owner.uid == ::geteuid()) {
    return MakePrivateDirs(dir);
  }
  if (::mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST) {
    return ErrnoStatus("mkdir " + dir, errno);
  }
  return GiveTo(dir, owner.uid, owner.gid);
}

// Characters no shell ssh may hand a ProxyCommand to treats specially outside quotes.
bool IsBareShellChar(char c) {
  return IsAlnum(c) || std::string_view("_./:=@+,-").find(c) != std::string_view::npos;
}

}  // namespace

Result<std::string> ProxyCommandLine(const std::vector<std::string>& words) {
  if (words.empty()) {
    return InvalidArgumentError("ProxyCommand: no program");
  }
  std::string out;
  for (const std::string& w : words) {
    bool bare = !w.empty();
    for (char c : w) {
      auto u = static_cast<unsigned char>(c);
      if (u < 0x20 || u == 0x7f || c == '\'' || c == '"' || c == '\\' || c == '!') {
        return InvalidArgumentError("ProxyCommand argument " + QuoteForMessage(w) +
                                    " has a quote, backslash, '!' or control character");
      }
      bare = bare && IsBareShellChar(c);
    }
    if (w.empty()) {
      return InvalidArgumentError("ProxyCommand: an empty argument");
    }
    std::string word;
    for (char c : w) {
      word += c == '%' ? "%%" : std::string(1, c);  // ssh's token escape, then the shell's
    }
    out += (out.empty() ? "" : " ") + (bare ? word : "'" + word + "'");
  }
  return out;
}

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
    if (!e.proxy_command.empty()) {
      TPUFLEET_ASSIGN_OR_RETURN(std::string proxy, ProxyCommandLine(e.proxy_command));
      out += "  ProxyCommand " + proxy + "\n";
    }
    if (!e.proxy_command.empty() || e.key_by_alias) {
      out += "  HostKeyAlias " + e.alias + "\n";
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
    std::vector<std::string> names = {KnownHostsName(e)};
    if (!e.proxy_command.empty() || e.key_by_alias) {
      names.push_back(e.alias);  // HostKeyAlias: ssh looks the key up under the name alone
    }
    for (const std::string& name : names) {
      std::string line = name + " " + KeyTypeAndBlob(e.host_key) + "\n";
      if (seen.insert(line).second) {
        out += line;
      }
    }
  }
  return out;
}

std::string SshFingerprint(std::string_view blob) {
  return Sha256Fingerprint(blob);
}

std::string SshKeyLineFingerprint(std::string_view key_line) {
  std::string key = KeyTypeAndBlob(key_line);
  Result<std::string> blob = Base64Decode(key.substr(key.find(' ') + 1));
  return key.empty() || !blob.ok() ? "" : SshFingerprint(*blob);
}

Status WriteSshFiles(const std::string& dir, const std::vector<SshHostEntry>& entries) {
  std::string known_hosts = dir + "/known_hosts";
  TPUFLEET_ASSIGN_OR_RETURN(std::string config, RenderSshConfig(entries, known_hosts));
  TPUFLEET_TRY(MakePrivateDirs(dir));
  // known_hosts first, so the config never names a worker whose key is not pinned yet.
  TPUFLEET_TRY(WriteFileAtomic(known_hosts, RenderKnownHosts(entries), 0600));
  return WriteFileAtomic(dir + "/config", config, 0600);
}

Result<std::optional<SshConfigOwner>> ParseSshIncludeMode(std::string_view mode) {
  if (mode == "off") {
    return std::optional<SshConfigOwner>();
  }
  if (mode == "force") {
    return std::optional<SshConfigOwner>(SshConfigOwner::kAnyone);
  }
  if (!mode.empty() && mode != "auto") {
    return InvalidArgumentError(std::string(kSshIncludeEnv) + " must be auto, force or off, not " +
                                QuoteForMessage(mode));
  }
  return std::optional<SshConfigOwner>(SshConfigOwner::kMine);
}

Status EnsureSshInclude(const std::string& user_config, const std::string& include_path,
                        SshConfigOwner allowed) {
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
  // Whose config this is: the owner of ~/.ssh, or of HOME (or the nearest directory
  // above) while there is no ~/.ssh yet.
  TPUFLEET_ASSIGN_OR_RETURN(Owner owner, OwnerOfConfigDir(user_config));
  if (owner.uid != ::geteuid() && allowed != SshConfigOwner::kAnyone) {
    return FailedPreconditionError(
        "refusing to edit " + user_config + ": " + owner.dir + " belongs to " +
        DescribeUser(owner.uid) + ", not to " + DescribeUser(::geteuid()) +
        ", who runs tpufleet (root with another user's HOME?); run tpufleet as that user, "
        "or set " + std::string(kSshIncludeEnv) + "=force to edit it anyway (it stays " +
        "theirs) or =off to leave it alone");
  }
  // Write through a symlink (dotfile managers link ~/.ssh/config), never over it; but
  // only into a file of the config's owner: a link to someone else's file (root's, say)
  // must not get a line that makes ssh read a file this user controls.
  std::string path = user_config;
  if (char* real = ::realpath(user_config.c_str(), nullptr)) {
    path = real;
    std::free(real);
  }
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) {
    if (errno != ENOENT) {
      return ErrnoStatus(path, errno);
    }
    size_t slash = path.find_last_of('/');
    if (slash != std::string::npos && slash > 0 && owner.dir != path.substr(0, slash)) {
      TPUFLEET_TRY(MakeSshDir(path.substr(0, slash), owner));
    }
    TPUFLEET_TRY(WriteFileAtomic(path, line + "\n", 0600));
    return GiveTo(path, owner.uid, owner.gid);
  }
  std::string shown = path == user_config ? path : path + " (where " + user_config + " leads)";
  if (!S_ISREG(st.st_mode)) {
    return FailedPreconditionError("refusing to edit " + shown + ": not a regular file");
  }
  if (st.st_uid != owner.uid) {
    return FailedPreconditionError("refusing to edit " + shown + ": it belongs to " +
                                   DescribeUser(st.st_uid) + ", not to " +
                                   DescribeUser(owner.uid) + ", who owns " + owner.dir);
  }
  TPUFLEET_ASSIGN_OR_RETURN(std::string old, ReadFile(path, kMaxUserSshConfigBytes));
  if (HasGlobalLine(old, line)) {
    return Status::Ok();
  }
  // First: an Include after a Host line would apply only inside that Host's block.
  TPUFLEET_TRY(WriteFileAtomic(path, line + "\n" + old, static_cast<int>(st.st_mode & 07777)));
  // ssh refuses a config its user does not own; keep the owner when root edits it.
  return GiveTo(path, st.st_uid, st.st_gid);
}

Status SshFileDir::Rewrite(const EntriesFn& entries) {
  std::lock_guard<std::mutex> l(mu_);
  // Other processes write these files too (an ssh-proxy's refresh while up runs): each
  // reads its entries and writes under the lock, so the last writer read last.
  TPUFLEET_TRY(MakePrivateDirs(dir_));
  std::string lock_path = dir_ + "/lock";
  UniqueFd lock(::open(lock_path.c_str(), O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600));
  if (lock.get() < 0) {
    return ErrnoStatus(lock_path, errno);
  }
  while (::flock(lock.get(), LOCK_EX) != 0) {
    if (errno != EINTR) {
      return ErrnoStatus("flock " + lock_path, errno);
    }
  }
  TPUFLEET_ASSIGN_OR_RETURN(std::vector<SshHostEntry> written, entries());
  TPUFLEET_TRY(WriteSshFiles(dir_, written));
  if (user_config_.empty()) {
    return Status::Ok();  // TPUFLEET_SSH_INCLUDE=off
  }
  return EnsureSshInclude(user_config_, dir_ + "/config", owner_);
}

Result<std::string> SshFileDir::Config() const {
  std::string config = dir_ + "/config";
  if (::access(config.c_str(), R_OK) != 0) {
    if (errno == ENOENT) {
      return FailedPreconditionError("no SSH config at " + config +
                                     " yet; `tpufleet up` writes it");
    }
    return ErrnoStatus(config, errno);
  }
  return config;
}

}  // namespace tpufleet
