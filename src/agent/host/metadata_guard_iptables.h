// The metadata guard through iptables, for a worker without nft (nftables): the same
// rules as the nft table (metadata_guard.h), in chains of tpufleet's own named
// TPUFLEET_METADATA, each jumped to first from OUTPUT:
//   - iptables, table nat: the guarded uids' TCP to the metadata server's IPv4 addresses
//     on port 80 is redirected to the agent's proxy (`-m owner --uid-owner UID ...
//     -j REDIRECT`);
//   - iptables, table filter: their other TCP to those addresses but DNS (port 53) is
//     reset (`-j REJECT --reject-with tcp-reset`);
//   - ip6tables, table filter: the same for the IPv6 addresses.
// Why: Ubuntu 22.04 (the TPU VMs' tpu-ubuntu2204-base) ships iptables (iptables-nft by
// default, ufw needs it) while the nft program comes with the `nftables` package, which
// an image need not have. Either iptables works: iptables-nft or iptables-legacy,
// whichever the host has (the `iptables` alternative first).
//
// Each table's chain is replaced whole by one iptables-restore --noflush (other chains'
// rules are never touched), so a table never holds half a guard; the three tables are
// three transactions. With no guarded account the chains and their jumps go.
//
// Thread-safety: stateless; the Apply function forks the programs (the agent's loop
// thread calls it). REQUIRES (ApplyIptablesGuard): root in the worker's namespace.
#pragma once

#include <string>
#include <vector>

#include "util/status.h"

namespace tpufleet::agent::host {

struct GuardedAccount;
struct MetadataAddresses;

/// The chain the guard owns in each table it uses, alone.
inline constexpr const char* kGuardChain = "TPUFLEET_METADATA";

/// One variant's programs (iptables-nft's, iptables-legacy's or the alternative's).
struct IptablesPrograms {
  std::string iptables;
  std::string iptables_restore;
  std::string ip6tables;
  std::string ip6tables_restore;
};

/// The variant whose `iptables` program is `iptables` (its three siblings named after it
/// in its directory), or, for "", the first of iptables, iptables-nft, iptables-legacy
/// in the system directories with all four; all empty when there is none.
IptablesPrograms FindIptables(const std::string& iptables);

/// The rules (iptables-save's syntax, after "-A CHAIN ") of one table of the guard.
struct IptablesRules {
  std::vector<std::string> nat4;
  std::vector<std::string> filter4;
  std::vector<std::string> filter6;
};
IptablesRules GuardIptablesRules(const std::vector<GuardedAccount>& accounts,
                                 const MetadataAddresses& addresses, int proxy_port);

/// The iptables-restore --noflush input for `table` that leaves the chain holding
/// `rules` and jumped to first from OUTPUT; with no rules, the one that removes the jump
/// and the chain. `exists`/`jumped`: whether the chain and OUTPUT's jump are there now.
/// "" when there is nothing to do.
std::string IptablesScript(const std::string& table, const std::vector<std::string>& rules,
                           bool exists, bool jumped);

/// Puts the guard of `accounts` in place (none: takes it away) with `programs`; the
/// error names the program and table that failed, and says what it said.
Status ApplyIptablesGuard(const IptablesPrograms& programs,
                          const std::vector<GuardedAccount>& accounts,
                          const MetadataAddresses& addresses, int proxy_port);

}  // namespace tpufleet::agent::host
