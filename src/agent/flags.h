// The command line of tpufleet-agent's subcommands: positional words and `--name VALUE`
// options, nothing more (the agent's callers are programs: `up`, systemd, serve itself).
//
// Thread-safety: pure functions.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "util/status.h"

namespace tpufleet::agent {

struct Flags {
  std::vector<std::string> positional;
  std::map<std::string, std::string> values;  // by name without "--"

  /// The value of --name, or `otherwise`.
  std::string Get(const std::string& name, const std::string& otherwise) const;
};

/// `args` read as positional words and `--name VALUE` (or `--name=VALUE`) options, each
/// name one of `known`. InvalidArgument naming an unknown option or one without a value.
Result<Flags> ParseFlags(const std::vector<std::string>& args,
                         const std::vector<std::string>& known);

/// Exits of the subcommands: 0 done, 1 failed, 2 bad usage.
inline constexpr int kExitOk = 0;
inline constexpr int kExitFailed = 1;
inline constexpr int kExitUsage = 2;

/// The directory part of `path`: "/run/x" for "/run/x/agent.sock", "." for "agent.sock".
std::string DirOf(const std::string& path);

/// Prints "tpufleet-agent: MESSAGE" to stderr and returns `code`.
int Complain(int code, const std::string& message);

}  // namespace tpufleet::agent
