#include "agent/host/metadata_guard_iptables.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>

#include "agent/host/metadata_guard.h"
#include "agent/host/system_programs.h"
#include "util/strings.h"
#include "util/subprocess.h"

namespace tpufleet::agent::host {
namespace {

// iptables applies a chain of a few rules in milliseconds; a hung one must not hold the
// agent's loop (-w waits for another iptables' lock at most this long too).
constexpr std::chrono::seconds kIptablesTimeout{20};
constexpr const char* kWaitSeconds = "10";

bool Executable(const std::string& path) {
  return !path.empty() && ::access(path.c_str(), X_OK) == 0;
}

// The variant of `dir`/`name` (name: iptables, iptables-nft or iptables-legacy).
IptablesPrograms Variant(const std::string& dir, const std::string& name) {
  const std::string suffix = name.substr(std::string("iptables").size());  // "", "-nft"…
  IptablesPrograms p{dir + "/iptables" + suffix, dir + "/iptables" + suffix + "-restore",
                     dir + "/ip6tables" + suffix, dir + "/ip6tables" + suffix + "-restore"};
  if (!Executable(p.iptables) || !Executable(p.iptables_restore) || !Executable(p.ip6tables) ||
      !Executable(p.ip6tables_restore)) {
    return {};
  }
  return p;
}

// Whether `program -t table ARGS` succeeds (a check, -C or -S).
bool Holds(const std::string& program, const std::string& table,
           std::vector<std::string> args) {
  std::vector<std::string> argv = {program, "-w", kWaitSeconds, "-t", table};
  argv.insert(argv.end(), args.begin(), args.end());
  Result<ProgramResult> r = RunSubprocess(argv, "", kIptablesTimeout, SystemProgramOptions());
  return r.ok() && r->exit_code == 0;
}

// Leaves `table` of `program` (restore: `restore`) as the rules say.
Status ApplyTable(const std::string& program, const std::string& restore,
                  const std::string& table, const std::vector<std::string>& rules) {
  bool exists = Holds(program, table, {"-S", kGuardChain});
  bool jumped = exists && Holds(program, table, {"-C", "OUTPUT", "-j", kGuardChain});
  std::string script = IptablesScript(table, rules, exists, jumped);
  if (script.empty()) {
    return Status::Ok();
  }
  Result<ProgramResult> ran = RunSubprocess({restore, "-w", kWaitSeconds, "--noflush"}, script,
                                            kIptablesTimeout, SystemProgramOptions());
  if (!ran.ok() || ran->exit_code != 0) {
    return InternalError(program + " (table " + table + "): " +
                         std::string(Trim(ran.ok() ? ran->output : ran.status().message())));
  }
  return Status::Ok();
}

}  // namespace

IptablesPrograms FindIptables(const std::string& iptables) {
  if (!iptables.empty()) {
    size_t slash = iptables.rfind('/');
    if (slash == std::string::npos) {
      return {};
    }
    std::string name = iptables.substr(slash + 1);
    if (name != "iptables" && name != "iptables-nft" && name != "iptables-legacy") {
      return {};
    }
    return Variant(iptables.substr(0, slash), name);
  }
  for (const char* name : {"iptables", "iptables-nft", "iptables-legacy"}) {
    std::string found = FindSystemProgram(name);
    if (!found.empty()) {
      if (IptablesPrograms p = FindIptables(found); !p.iptables.empty()) {
        return p;
      }
    }
  }
  return {};
}

IptablesRules GuardIptablesRules(const std::vector<GuardedAccount>& accounts,
                                 const MetadataAddresses& addresses, int proxy_port) {
  IptablesRules r;
  for (const GuardedAccount& a : accounts) {
    const std::string who = " -m owner --uid-owner " + std::to_string(a.uid);
    for (const std::string& ip : addresses.ipv4) {
      r.nat4.push_back("-d " + ip + "/32 -p tcp -m tcp --dport 80" + who +
                       " -j REDIRECT --to-ports " + std::to_string(proxy_port));
      r.filter4.push_back("-d " + ip + "/32 -p tcp -m tcp ! --dport 53" + who +
                          " -j REJECT --reject-with tcp-reset");
    }
    for (const std::string& ip : addresses.ipv6) {
      r.filter6.push_back("-d " + ip + "/128 -p tcp -m tcp ! --dport 53" + who +
                          " -j REJECT --reject-with tcp-reset");
    }
  }
  return r;
}

std::string IptablesScript(const std::string& table, const std::vector<std::string>& rules,
                           bool exists, bool jumped) {
  const std::string chain = kGuardChain;
  if (rules.empty() && !exists) {
    return "";
  }
  std::string s = "*" + table + "\n";
  if (rules.empty()) {
    if (jumped) {
      s += "-D OUTPUT -j " + chain + "\n";
    }
    return s + "-F " + chain + "\n-X " + chain + "\nCOMMIT\n";
  }
  s += ":" + chain + " - [0:0]\n";  // made, or emptied when there (--noflush)
  for (const std::string& rule : rules) {
    s += "-A " + chain + " " + rule + "\n";
  }
  if (!jumped) {
    s += "-I OUTPUT 1 -j " + chain + "\n";
  }
  return s + "COMMIT\n";
}

Status ApplyIptablesGuard(const IptablesPrograms& programs,
                          const std::vector<GuardedAccount>& accounts,
                          const MetadataAddresses& addresses, int proxy_port) {
  IptablesRules rules = GuardIptablesRules(accounts, addresses, proxy_port);
  // The resets go in before the redirect and out after it: alone they refuse port 80
  // too (closed), while the redirect alone would let the other ports through.
  struct Step {
    const std::string* program;
    const std::string* restore;
    const char* table;
    const std::vector<std::string>* rules;
  };
  std::vector<Step> steps = {
      {&programs.ip6tables, &programs.ip6tables_restore, "filter", &rules.filter6},
      {&programs.iptables, &programs.iptables_restore, "filter", &rules.filter4},
      {&programs.iptables, &programs.iptables_restore, "nat", &rules.nat4}};
  if (accounts.empty()) {
    std::reverse(steps.begin(), steps.end());
  }
  for (const Step& step : steps) {
    if (Status s = ApplyTable(*step.program, *step.restore, step.table, *step.rules); !s.ok()) {
      return s;
    }
  }
  return Status::Ok();
}

}  // namespace tpufleet::agent::host
