// The SSH files tpufleet writes so that plain `ssh NODE-w3`, scp, rsync and VS Code
// Remote-SSH reach every worker by a stable name, with host keys pinned:
//
//   STATE/ssh/config       Host blocks: NODE (worker 0) and NODE-wN for every worker,
//                          each with HostName, User, Port, IdentityFile,
//                          UserKnownHostsFile STATE/ssh/known_hosts and
//                          StrictHostKeyChecking yes; for a worker tpufleet can look
//                          up again, a ProxyCommand (`tpufleet ssh-proxy`, which finds
//                          its current address) and HostKeyAlias NODE-wN
//   STATE/ssh/known_hosts  one line per worker: its address and the pinned host key,
//                          and one per name for the proxied (HostKeyAlias) ones
//   ~/.ssh/config          one line `Include STATE/ssh/config`, added once at the top
//
// Both files are rewritten whole (atomically) from the state store whenever it changes,
// so a changed address never leaves a stale entry. Values are checked before they reach
// the files: an alias, user or address with whitespace, quotes or control characters is
// refused (InvalidArgument), so a hostile name cannot add options to ssh_config.
//
// SshFileStore is where a World (control/world.h) keeps these files: SshFileDir, the
// files above, built by src/app; tests hand in one that keeps the rendered text in memory
// (control/testing/test_world.h), so they need no HOME of their own.
//
// Thread-safety: pure functions and whole-file writes; callers serialize writers.
// SshFileDir serializes its own, within a process and (by flock on DIR/lock) across
// processes.
#pragma once

#include <chrono>
#include <cstddef>
#include <functional>
#include <mutex>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "util/status.h"

namespace tpufleet {

/// Every Host block asks for a keepalive this often: a worker that vanished (preempted,
/// deleted) is noticed after three missed answers, 45 s, not TCP's two hours.
inline constexpr std::chrono::seconds kServerAliveInterval{15};

/// One `Host` block and its known_hosts line.
struct SshHostEntry {
  std::string alias;          // "trainer", "trainer-w3"
  std::string address;        // IPv4, IPv6 or DNS name
  int port = 0;               // 0: leave to ssh (22)
  std::string user;           // "" leaves it to ssh
  std::string identity_file;  // "" leaves it to ssh (ssh-hosts machines use the user's keys)
  std::string host_key;       // "ssh-ed25519 AAAA…"; "" only with known_hosts_file set
  /// ssh-hosts machines keep the user's own known_hosts: "" means STATE/ssh/known_hosts.
  std::string known_hosts_file;
  /// When not empty, ssh reaches the host through this program and its arguments
  /// (ProxyCommand; ProxyCommandLine quotes them), not by connecting to `address`, and
  /// looks its key up under `alias` (HostKeyAlias): the pinned key stays the name's when
  /// the worker's address changes.
  std::vector<std::string> proxy_command;
  /// HostKeyAlias without a proxy: the key is looked up under `alias`, not the address
  /// (a team server's answer pins each worker's key to its name, whatever its address).
  bool key_by_alias = false;
};

/// `words` as the value of a ProxyCommand line. ssh expands %-tokens in it ('%' is
/// written "%%") and hands it to the user's login shell, which may be sh, bash, zsh,
/// fish or csh: a word of only letters, digits and "_./:=@+,-" stays bare, any other is
/// single-quoted, the one quoting all of them read alike. InvalidArgument for no words,
/// an empty word, or one with a quote, backslash, '!' or control character (no quoting
/// keeps those literal in every one of those shells).
Result<std::string> ProxyCommandLine(const std::vector<std::string>& words);

/// An alias as RenderSshConfig accepts it, and as `ssh ALIAS` may safely be given: at
/// most 255 letters, digits, '.', '_' and '-', not starting with '.' or '-' (so it can be
/// neither an option nor a Host pattern). InvalidArgument otherwise.
Status CheckSshAlias(std::string_view alias);

/// The text of the ssh_config file for `entries`. `known_hosts_path` is the file the
/// entries without their own known_hosts_file point at. InvalidArgument on a bad value.
Result<std::string> RenderSshConfig(const std::vector<SshHostEntry>& entries,
                                    const std::string& known_hosts_path);
/// The known_hosts text for the entries that carry a host key ("[addr]:port" when the
/// port is not 22), each proxied one under its alias too (what HostKeyAlias looks up;
/// the address line is for tools that read the file by address).
std::string RenderKnownHosts(const std::vector<SshHostEntry>& entries);

/// OpenSSH's fingerprint of a key blob (a key line's BASE64, decoded): "SHA256:" and the
/// unpadded base64 of its SHA-256, as `ssh-keygen -l` and ssh's own warnings show it.
std::string SshFingerprint(std::string_view blob);
/// The fingerprint of a key line "TYPE BASE64 [COMMENT]"; "" when it is not one.
std::string SshKeyLineFingerprint(std::string_view key_line);

/// Writes `dir`/config and `dir`/known_hosts (0600, atomically; `dir` made 0700).
Status WriteSshFiles(const std::string& dir, const std::vector<SshHostEntry>& entries);

/// The environment variable that decides whether tpufleet edits ~/.ssh/config: unset
/// (or "auto") for the user's own only, "force" for another user's too (root with that
/// user's HOME; the file stays theirs), "off" never.
inline constexpr std::string_view kSshIncludeEnv = "TPUFLEET_SSH_INCLUDE";

/// A ~/.ssh/config above this is not one a person wrote; it is refused, not read.
inline constexpr size_t kMaxUserSshConfigBytes = 16 << 20;

/// Whose ~/.ssh/config EnsureSshInclude may edit.
enum class SshConfigOwner {
  kMine,    // only the effective user's: the default
  kAnyone,  // root editing another user's, asked to (TPUFLEET_SSH_INCLUDE=force)
};

/// Makes `user_config` (usually ~/.ssh/config) include `include_path`: adds
/// "Include <path>" as the first line unless that exact line is already there; creates
/// the file (0600, its directory 0700) when missing. Keeps the rest byte for byte, and
/// the file's owner and mode.
///
/// The config's owner is the owner of its directory (~/.ssh), or of the nearest existing
/// directory above it (HOME) when that is missing. FailedPrecondition, naming the path
/// and the owner, and nothing written, when:
///  - that owner is not the effective user and `allowed` is kMine (root running with
///    another user's HOME would otherwise edit that user's config);
///  - the file, or what its symlink leads to, is not a regular file owned by that owner
///    (a link to root's file would get a line naming a file the user controls).
/// A symlink is written through, never replaced (dotfile managers link the config).
Status EnsureSshInclude(const std::string& user_config, const std::string& include_path,
                        SshConfigOwner allowed = SshConfigOwner::kMine);

/// The SSH files of a World.
class SshFileStore {
 public:
  /// The entries to write, read under the store's lock (so that of two writers, the
  /// last one to write also read last).
  using EntriesFn = std::function<Result<std::vector<SshHostEntry>>()>;

  SshFileStore() = default;
  SshFileStore(const SshFileStore&) = delete;
  SshFileStore& operator=(const SshFileStore&) = delete;
  virtual ~SshFileStore() = default;

  /// Rewrites the config and known_hosts whole from what `entries` returns, then makes
  /// sure the user's ~/.ssh/config includes the config (when it is to be edited). Errors
  /// of `entries` come back as they are.
  virtual Status Rewrite(const EntriesFn& entries) = 0;
  /// The config to give `ssh -F`; FailedPrecondition ("`tpufleet up` writes it") when
  /// there is none yet.
  virtual Result<std::string> Config() const = 0;
};

/// The files in `dir` (STATE/ssh), and the Include line in `user_config` (~/.ssh/config;
/// "": left alone, TPUFLEET_SSH_INCLUDE=off), which EnsureSshInclude edits as `owner`
/// allows.
class SshFileDir final : public SshFileStore {
 public:
  SshFileDir(std::string dir, std::string user_config,
             SshConfigOwner owner = SshConfigOwner::kMine)
      : dir_(std::move(dir)), user_config_(std::move(user_config)), owner_(owner) {}

  Status Rewrite(const EntriesFn& entries) override;
  Result<std::string> Config() const override;

 private:
  const std::string dir_;
  const std::string user_config_;
  const SshConfigOwner owner_;
  std::mutex mu_;  // one writer at a time in this process; the flock for the others
};

}  // namespace tpufleet
