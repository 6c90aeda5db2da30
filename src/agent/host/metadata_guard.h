// The metadata guard: keeps the worker's cloud token from the accounts the spec gives
// without sudo, while they still read everything else of the metadata server.
//
// How: an nftables table of tpufleet's own, `inet tpufleet_metadata` (it never touches
// another table's rules), in the worker's network namespace:
//   - a nat output chain sends the guarded uids' TCP connections to the metadata server
//     (169.254.169.254 and whatever IPv4 address /etc/hosts gives metadata.google.internal
//     or metadata) on port 80 to the agent's filtering proxy on 127.0.0.1 (metadata_proxy.h),
//     which forwards all but the credentials (metadata_filter.h);
//   - a filter output chain refuses (TCP reset) their other TCP to those addresses but
//     DNS (port 53: the metadata server is the VM's resolver), and all their TCP to the
//     IPv6 metadata server (fd20:ce::254, and /etc/hosts' IPv6 addresses for the names),
//     so no other port or family slips past the proxy. UDP (DNS) is left alone.
// The uids are matched with `meta skuid` against a set; the table is replaced whole in
// one nft transaction (never half a guard), and a node with no guarded account has no
// table at all. Why a redirect and not a separate service account: the token the
// node's own service account hands out is what the admin's tools use on the worker;
// only the accounts without sudo lose it. An account with sudo can become root anyway,
// and root and the agent are never guarded.
//
// A redirect rather than a plain reject keeps worker number, endpoints and tpu-env
// readable through the same URLs frameworks use. The uid match sees a socket's owner,
// whatever the process does (a user namespace of its own maps back to its uid); a
// network namespace of its own has no route to the metadata server.
//
// Without nft (the `nftables` package, which an image need not have) the same rules go
// in through iptables, iptables-nft or iptables-legacy (metadata_guard_iptables.h).
//
// Fail closed, or loudly: when both nft and iptables are missing, or the one used fails,
// Apply says so (accounts.apply passes it to the CLI, which fails `up`). Only a host
// where both are missing and no metadata server answers (a lab machine of ssh-hosts)
// counts as having nothing to guard.
//
// The guarded accounts are saved (kGuardFile in the agent's state dir), so that serve
// installs the guard again when it starts (after a reboot the table is gone).
//
// Thread-safety: MetadataGuard runs on the agent's loop thread (it forks nft, iptables); the
// functions are pure. REQUIRES (Apply, Restore): root in the worker's namespace.
#pragma once

#include <sys/types.h>

#include <string>
#include <string_view>
#include <vector>

#include "agent/host/accounts.h"
#include "agent/host/host_paths.h"
#include "agent/host/user_db.h"
#include "util/http_client.h"

namespace tpufleet::agent::host {

/// The table (family inet) the guard owns, alone.
inline constexpr const char* kGuardTable = "tpufleet_metadata";
/// Below HostPaths::state: "<name> <uid>" a line, the accounts guarded now.
inline constexpr const char* kGuardFile = "metadata_guard";
/// The metadata server's addresses on every Compute Engine VM.
inline constexpr const char* kMetadataIpv4 = "169.254.169.254";
inline constexpr const char* kMetadataIpv6 = "fd20:ce::254";

struct GuardedAccount {
  std::string name;
  uid_t uid = 0;
  bool operator==(const GuardedAccount&) const = default;
};

/// Who is guarded after an accounts.apply of `users` that gave `results`: every listed
/// user without sudo, and every account the apply took away (action "removed" or
/// "revoked": its sudo is `!ALL` now), that has a uid in `passwd` other than 0 and
/// `agent_uid`; sorted by uid, each once.
std::vector<GuardedAccount> GuardedAccounts(const std::vector<AccountSpec>& users,
                                            const std::vector<AccountResult>& results,
                                            const std::vector<PasswdEntry>& passwd,
                                            uid_t agent_uid);

/// The metadata server's addresses: the fixed ones above, and those `hosts_text` (an
/// /etc/hosts) gives metadata.google.internal or metadata; each once.
struct MetadataAddresses {
  std::vector<std::string> ipv4;
  std::vector<std::string> ipv6;
};
MetadataAddresses MetadataAddressesIn(std::string_view hosts_text);

/// The nft script (for `nft -f -`) that leaves the table as the guard of `accounts`
/// redirecting to `proxy_port`; with no accounts, the one that deletes it.
std::string GuardRuleset(const std::vector<GuardedAccount>& accounts,
                         const MetadataAddresses& addresses, int proxy_port);

/// What the guard is doing, for the accounts.apply answer and doctor.
struct GuardState {
  bool active = false;             // the table is in place
  std::vector<std::string> users;  // whom it guards (or should, when `error` says why not)
  std::string error;               // "" when the guard is what it should be
  std::string detail;              // what it is doing, in words
};

/// The programs the guard runs: "" finds them in the system directories at each Apply;
/// a path that is missing counts as not installed.
struct GuardPrograms {
  std::string nft;
  std::string iptables;  // its variant's siblings are found next to it (FindIptables)
};

class MetadataGuard {
 public:
  /// `metadata_url`: the metadata server, asked when neither nft nor iptables is there
  /// (is there a server to guard?). REQUIRES: `http` outlives the guard.
  MetadataGuard(HostPaths host, GuardPrograms programs, std::string metadata_url,
                HttpClient& http);
  MetadataGuard(const MetadataGuard&) = delete;
  MetadataGuard& operator=(const MetadataGuard&) = delete;

  /// Where the proxy listens on 127.0.0.1 (before Apply or Restore).
  void set_proxy_port(int port) { proxy_port_ = port; }
  /// Guards exactly `accounts` from now on (none: the table goes), and saves them.
  const GuardState& Apply(std::vector<GuardedAccount> accounts);
  /// Applies the saved accounts again, when some are saved; otherwise touches nothing.
  const GuardState& Restore();
  const GuardState& state() const { return state_; }

 private:
  HostPaths host_;
  GuardPrograms programs_;
  std::string metadata_url_;
  HttpClient& http_;
  int proxy_port_ = 0;
  GuardState state_;
};

}  // namespace tpufleet::agent::host
