// `tpufleet holder serve|status|stop`: the connection holder (ssh/holder.h) that keeps
// exec's SSH connections warm. `exec` starts it by itself; these are for looking at it,
// ending it early, and for the process it runs in.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "cli/command.h"

namespace tpufleet::app {

/// STATE/holder.sock: one holder per state directory (per user, unless shared).
std::string HolderSocketPath(const std::map<std::string, std::string>& env);

/// The CLI's program, installed beside tpufleet-serve and the others: what a detached
/// helper process and the ssh config's ProxyCommand run, whichever program asks.
inline constexpr const char* kCliProgram = "tpufleet";

/// Starts `tpufleet ARGS…` (kCliProgram, beside this program) as a process of its own session,
/// detached from the caller's terminal and process group (so Ctrl-C on the command that
/// started it does not end it), stdin /dev/null, stdout and stderr appended to `log`
/// (made 0600). Not waited for: it outlives the caller, and init reaps it.
Status StartCliDetached(const std::vector<std::string>& args, const std::string& log);

/// Starts `tpufleet holder serve` for `socket_path` (StartCliDetached), output to
/// STATE/holder.log.
Status StartHolderProcess(const std::string& socket_path);

cli::Command HolderCommandRow();

}  // namespace tpufleet::app
