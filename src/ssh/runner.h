// SshRunner: runs a script on one worker and waits for it; the seam `up` uses for the
// login check on ssh-hosts machines, which take the user's own keys until it has put
// the fleet key in (everything else goes through the libssh2 fan-out engine, fanout.h).
//
// OpenSshRunner spawns the system `ssh` (posix_spawn, no shell, arguments as a vector)
// with tpufleet's config file: `ssh -F CONFIG -o BatchMode=yes -o ConnectTimeout=N
// ALIAS bash -s`, the script fed on stdin, so no part of it is ever parsed by a local
// shell and the remote shell sees it exactly once. Host keys are checked against the
// pinned known_hosts (StrictHostKeyChecking yes comes from the config).
//
// Also here, for the machines tpufleet reaches with OpenSSH or plain TCP: ProbeSsh (is
// an SSH server answering?), ConnectTcp (what ssh-proxy hands to ssh), and the host
// keys of ssh-hosts machines (KnownHostKeys from the user's known_hosts, ScanHostKeys).
//
// Thread-safety: Run may be called from several threads at once; the functions are
// stateless.
#pragma once

#include <chrono>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "util/event_loop.h"
#include "util/status.h"
#include "util/subprocess.h"
#include "util/unique_fd.h"

namespace tpufleet {

/// The longest ssh waits for a worker to accept the connection (ConnectTimeout): one
/// that has not answered in 10 s is down, not slow, and without it ssh would wait for
/// the kernel's TCP timeout (about two minutes). Shorter when the Run timeout is.
inline constexpr std::chrono::seconds kSshConnectTimeout{10};

class SshRunner {
 public:
  SshRunner() = default;
  SshRunner(const SshRunner&) = delete;
  SshRunner& operator=(const SshRunner&) = delete;
  virtual ~SshRunner() = default;

  /// Runs `script` with bash on the host `alias` of the config. A non-zero exit is a
  /// ProgramResult (the remote command's exit status, 255 when ssh itself failed; its
  /// output, the last kMaxProgramOutput bytes), not an error; Unavailable when ssh could
  /// not connect or authenticate (with ssh's own message), Timeout when `timeout` passed
  /// (the process is killed), FailedPrecondition when the server's host key is not the
  /// pinned one ("Host key verification failed", with the offered key's fingerprint): no
  /// retry mends that.
  virtual Result<ProgramResult> Run(std::string_view alias, std::string_view script,
                                    std::chrono::milliseconds timeout) = 0;

  /// What Run returns, handed to Start's caller.
  using Done = std::function<void(Result<ProgramResult>)>;
  /// Run without blocking: starts the script and returns at once; `done` gets what Run
  /// would have returned, on the loop's thread (never from inside Start). Several may
  /// run at once. This default runs Run on a turn of the loop, which waits for it (for
  /// runners with nothing to watch: tests' fakes). REQUIRES: the loop turns until
  /// `done` has run.
  virtual void Start(EventLoop& loop, std::string_view alias, std::string_view script,
                     std::chrono::milliseconds timeout, Done done);
};

class OpenSshRunner final : public SshRunner {
 public:
  /// `config_path`: tpufleet's ssh config (ssh_files.h). `ssh_binary`: "ssh" (PATH).
  explicit OpenSshRunner(std::string config_path, std::string ssh_binary = "ssh");
  Result<ProgramResult> Run(std::string_view alias, std::string_view script,
                            std::chrono::milliseconds timeout) override;
  /// ssh runs as a child process whose output the loop watches; its stdin is fed as the
  /// pipe takes it, and `timeout` kills its process group.
  void Start(EventLoop& loop, std::string_view alias, std::string_view script,
             std::chrono::milliseconds timeout, Done done) override;

 private:
  std::vector<std::string> Argv(std::string_view alias, std::chrono::milliseconds timeout) const;

  const std::string config_path_;
  const std::string ssh_binary_;
};

/// Connects to address:port and reads the SSH identification line ("SSH-2.0-…"): OK when
/// an SSH server answers within `timeout`, Unavailable (refused, unreachable, not SSH) or
/// Timeout otherwise. Nothing is authenticated.
Status ProbeSsh(const std::string& address, int port, std::chrono::milliseconds timeout);

/// A TCP connection to address:port (port 0: 22) within `timeout`, in blocking mode:
/// what ssh-proxy hands to ssh. Unavailable (refused, unreachable, unresolvable) or
/// Timeout, the message naming "address:port".
Result<UniqueFd> ConnectTcp(const std::string& address, int port,
                            std::chrono::milliseconds timeout);

/// The key line(s) the user's known_hosts holds for `host` (`ssh-keygen -F`), for
/// ssh-hosts machines whose keys the user pinned when first connecting. NotFound when
/// there are none. `known_hosts`: "" means ~/.ssh/known_hosts.
Result<std::vector<std::string>> KnownHostKeys(const std::string& host, int port,
                                               const std::string& known_hosts);

/// The host keys `host` offers on `port` ("TYPE BASE64" each, from ssh-keyscan), NOT
/// verified: only for showing the user a fingerprint to confirm before it is pinned.
/// Unavailable when the host offers none in time.
Result<std::vector<std::string>> ScanHostKeys(const std::string& host, int port);

/// The key to pin of several a host has: ssh-ed25519 when there is one, else the first
/// ("" for none).
std::string PreferredHostKey(const std::vector<std::string>& keys);

}  // namespace tpufleet
