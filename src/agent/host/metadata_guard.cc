#include "agent/host/metadata_guard.h"

#include <arpa/inet.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>

#include "agent/host/metadata_guard_iptables.h"
#include "agent/host/system_programs.h"
#include "util/file.h"
#include "util/strings.h"

namespace tpufleet::agent::host {
namespace {

// nft applies a table of a few rules in milliseconds; a hung one must not hold the loop.
constexpr std::chrono::seconds kNftTimeout{20};
// Asking whether a metadata server answers (only when nft and iptables are missing).
constexpr std::chrono::seconds kProbeTimeout{3};
// The largest /etc/hosts and saved list read.
constexpr size_t kMaxHostsBytes = 1 << 20;

void AddOnce(std::vector<std::string>& list, std::string value) {
  if (std::find(list.begin(), list.end(), value) == list.end()) {
    list.push_back(std::move(value));
  }
}

std::string Elements(const std::vector<std::string>& values) {
  return "\t\telements = { " + Join(values, ", ") + " }\n";
}

std::vector<std::string> Names(const std::vector<GuardedAccount>& accounts) {
  std::vector<std::string> names;
  for (const GuardedAccount& a : accounts) {
    names.push_back(a.name);
  }
  return names;
}

std::vector<GuardedAccount> ParseSaved(std::string_view text) {
  std::vector<GuardedAccount> out;
  for (const std::string& line : Split(text, '\n')) {
    std::vector<std::string> f = Split(line, ' ');
    long long uid = 0;
    if (f.size() == 2 && !f[0].empty() && ParseInt(f[1], &uid) && uid > 0) {
      out.push_back({f[0], static_cast<uid_t>(uid)});
    }
  }
  return out;
}

}  // namespace

std::vector<GuardedAccount> GuardedAccounts(const std::vector<AccountSpec>& users,
                                            const std::vector<AccountResult>& results,
                                            const std::vector<PasswdEntry>& passwd,
                                            uid_t agent_uid) {
  std::vector<std::string> names;
  for (const AccountSpec& u : users) {
    if (!u.sudo) {
      names.push_back(u.name);
    }
  }
  for (const AccountResult& r : results) {
    if (r.action == "removed" || r.action == "revoked") {
      names.push_back(r.name);
    }
  }
  std::vector<GuardedAccount> out;
  for (const PasswdEntry& e : passwd) {
    if (e.uid != 0 && e.uid != agent_uid &&
        std::find(names.begin(), names.end(), e.name) != names.end() &&
        std::none_of(out.begin(), out.end(), [&](const GuardedAccount& a) { return a.uid == e.uid; })) {
      out.push_back({e.name, e.uid});
    }
  }
  std::sort(out.begin(), out.end(),
            [](const GuardedAccount& a, const GuardedAccount& b) { return a.uid < b.uid; });
  return out;
}

MetadataAddresses MetadataAddressesIn(std::string_view hosts_text) {
  MetadataAddresses a{{kMetadataIpv4}, {kMetadataIpv6}};
  for (const std::string& raw : Split(hosts_text, '\n')) {
    std::string line = raw.substr(0, raw.find('#'));
    std::replace(line.begin(), line.end(), '\t', ' ');
    std::vector<std::string> fields;
    for (std::string& f : Split(line, ' ')) {
      if (!f.empty()) {
        fields.push_back(std::move(f));
      }
    }
    bool names_it = std::any_of(fields.begin() + (fields.empty() ? 0 : 1), fields.end(),
                                [](const std::string& name) {
                                  std::string n = AsciiLower(name);
                                  return n == "metadata.google.internal" ||
                                         n == "metadata.google.internal." || n == "metadata";
                                });
    if (!names_it) {
      continue;
    }
    unsigned char buf[16];
    if (::inet_pton(AF_INET, fields[0].c_str(), buf) == 1) {
      AddOnce(a.ipv4, fields[0]);
    } else if (::inet_pton(AF_INET6, fields[0].c_str(), buf) == 1) {
      AddOnce(a.ipv6, fields[0]);
    }
  }
  return a;
}

std::string GuardRuleset(const std::vector<GuardedAccount>& accounts,
                         const MetadataAddresses& addresses, int proxy_port) {
  const std::string table = std::string("inet ") + kGuardTable;
  // Made first so that the delete never fails on a table that is not there; the three
  // lines are one transaction.
  std::string s = "table " + table + "\ndelete table " + table + "\n";
  if (accounts.empty()) {
    return s;
  }
  std::vector<std::string> uids;
  for (const GuardedAccount& a : accounts) {
    uids.push_back(std::to_string(a.uid));
  }
  const std::string who = "meta skuid @guarded_uids ";
  s += "table " + table + " {\n";
  s += "\tset guarded_uids {\n\t\ttype uid\n" + Elements(uids) + "\t}\n";
  s += "\tset metadata_ipv4 {\n\t\ttype ipv4_addr\n" + Elements(addresses.ipv4) + "\t}\n";
  s += "\tset metadata_ipv6 {\n\t\ttype ipv6_addr\n" + Elements(addresses.ipv6) + "\t}\n";
  s += "\tchain to_proxy {\n\t\ttype nat hook output priority -100; policy accept;\n";
  s += "\t\t" + who + "ip daddr @metadata_ipv4 tcp dport 80 redirect to :" +
       std::to_string(proxy_port) + "\n\t}\n";
  s += "\tchain elsewhere {\n\t\ttype filter hook output priority 0; policy accept;\n";
  s += "\t\t" + who + "ip daddr @metadata_ipv4 tcp dport != 53 reject with tcp reset\n";
  s += "\t\t" + who + "ip6 daddr @metadata_ipv6 tcp dport != 53 reject with tcp reset\n\t}\n";
  return s + "}\n";
}

MetadataGuard::MetadataGuard(HostPaths host, GuardPrograms programs, std::string metadata_url,
                             HttpClient& http)
    : host_(std::move(host)),
      programs_(std::move(programs)),
      metadata_url_(std::move(metadata_url)),
      http_(http) {}

const GuardState& MetadataGuard::Apply(std::vector<GuardedAccount> accounts) {
  const std::string saved = host_.state + "/" + kGuardFile;
  state_ = GuardState{};
  state_.users = Names(accounts);
  const std::string who = Join(state_.users, ", ");
  const std::string nothing = "no account without sudo: nothing to guard";
  std::string nft = programs_.nft.empty()                         ? FindSystemProgram("nft")
                    : ::access(programs_.nft.c_str(), X_OK) == 0 ? programs_.nft
                                                                 : "";
  IptablesPrograms iptables = nft.empty() ? FindIptables(programs_.iptables) : IptablesPrograms{};
  const bool none = nft.empty() && iptables.iptables.empty();
  if (accounts.empty() && (none || ::access(saved.c_str(), F_OK) != 0)) {
    ::unlink(saved.c_str());  // and no table of ours can be there
    state_.detail = nothing;
    return state_;
  }
  if (none) {
    HttpRequest probe;
    probe.url = metadata_url_ + "/";
    probe.timeout = kProbeTimeout;
    if (!http_.Send(probe).ok()) {
      state_.detail = "no metadata server answers here: nothing to guard";
      return state_;
    }
    state_.error = "neither nft nor iptables is installed, so the metadata server's token "
                   "cannot be kept from " +
                   who + " (install one: sudo apt-get install -y nftables)";
    return state_;
  }
  Result<std::string> hosts = ReadFile(host_.etc + "/hosts", kMaxHostsBytes);
  MetadataAddresses addresses = MetadataAddressesIn(hosts.ok() ? *hosts : "");
  const std::string what = accounts.empty() ? "remove the metadata guard"
                                            : "keep the metadata server's token from " + who;
  if (!nft.empty()) {
    Result<ProgramResult> ran = RunSubprocess({nft, "-f", "-"},
                                              GuardRuleset(accounts, addresses, proxy_port_),
                                              kNftTimeout, SystemProgramOptions());
    if (!ran.ok() || ran->exit_code != 0) {
      state_.error = "nft could not " + what + ": " +
                     std::string(Trim(ran.ok() ? ran->output : ran.status().message()));
      return state_;
    }
  } else if (Status s = ApplyIptablesGuard(iptables, accounts, addresses, proxy_port_);
             !s.ok()) {
    state_.error = "iptables could not " + what + ": " + s.message();
    return state_;
  }
  if (accounts.empty()) {
    ::unlink(saved.c_str());
    state_.detail = nothing;
    return state_;
  }
  std::string lines;
  for (const GuardedAccount& a : accounts) {
    lines += a.name + " " + std::to_string(a.uid) + "\n";
  }
  if (Status s = WriteFileAtomic(saved, lines, 0600); !s.ok()) {
    state_.error = "the guard is on, but could not be saved for the next start: " + s.message();
  }
  state_.active = true;
  state_.detail = "the metadata server's token is kept from " + who + " (" +
                  (nft.empty() ? std::string("iptables chains ") + kGuardChain
                               : std::string("nft table inet ") + kGuardTable) +
                  ", proxy 127.0.0.1:" + std::to_string(proxy_port_) + ")";
  return state_;
}

const GuardState& MetadataGuard::Restore() {
  Result<std::string> saved = ReadFile(host_.state + "/" + kGuardFile, kMaxHostsBytes);
  if (!saved.ok()) {
    return state_;  // never guarded here (or the list is gone): nothing to put back
  }
  return Apply(ParseSaved(*saved));
}

}  // namespace tpufleet::agent::host
