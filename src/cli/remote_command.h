// `tpufleet --server URL COMMAND …` (or TPUFLEET_SERVER=URL): the command runs on a team
// server (`tpufleet serve`) and prints here exactly what it prints there, since the
// server runs this very CLI (RunServedCommand) over its own state and sends back the
// output (POST /v1/command, api/remote_command.h; the transport, its pinned certificate
// and the token are remote/server_client.h's).
//
// A server is named by --server URL, else TPUFLEET_SERVER (set empty: none), else the
// one `tpufleet join` made the default (remote/joined_servers.h), which only join writes.
// Which commands go where, with a server named:
//   - served: status, jobs, events, run, logs, cancel, top, audit, cost, and the admin commands
//     up, down, users and import (ServedRemotely), each subject to the caller's role
//     (control/access.h, control/job_access.h, control/visible.h; up, down and users need
//     an admin of the fleet, import the operator). The files a command reads (its table
//     says which: FlagSpec::input_bytes, Command::positional_input_bytes) are read here
//     and sent with it; the server reads them from the request only, never from its own
//     disk. The output streams as it is printed (`logs -f` and `run` follow the job as
//     here, `up` shows its progress; Ctrl-C closes the connection, which interrupts the
//     command on the server); top's live view is refused (`top --once` works);
//   - run here with the person's own OpenSSH, to the workers the server's GET /v1/hosts
//     gives them, host keys pinned from it: exec, ssh, forward, cp, attach (ServedOverSsh,
//     cli/served_ssh.h);
//   - run here as always, needing no fleet state: catalog, estimate, plan, validate,
//     doctor, serve, emulator, join, and the commands tpufleet runs itself (hidden ones);
//   - every other: one line saying it is not served remotely yet, exit 2, nothing run
//     (never silently here against a local state).
//
// Thread-safety: RunOnServer on the command's thread; RunServedCommand from the API's
// threads, several at once (each run has its own Invocation; the App is read only).
#pragma once

#include <atomic>
#include <iosfwd>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "api/remote_command.h"
#include "cli/command.h"

namespace tpufleet::cli {

/// Whether a team server runs `command` for its clients.
bool ServedRemotely(std::string_view command);

/// With --server or TPUFLEET_SERVER: `cmd` run on the server (or refused as above), its
/// output printed, its exit status; nullopt when no server is named or `cmd` runs here.
/// `argv` is the command line as given (its --server flags are not sent).
std::optional<ExitStatus> RunOnServer(Invocation& inv, const Command& cmd,
                                      const std::vector<std::string>& argv);

/// The server's side: `request.argv` from a client, run with `app`'s commands and the
/// server's `env` (without TPUFLEET_SERVER and the token variables), as `tpufleet ARGV…`
/// would run on the server's machine, for a caller allowed `access`, reading the files
/// it names from `request.files` only (Invocation::ReadInputFile), printing to `out` and
/// `err`; `interrupt` turns true once the client went away (server/command_stream.h
/// bounds what is sent). A command not served, or a flag that would reach beyond the
/// command (--catalog FILE, --server, jobs --watch), is a usage error (2).
ExitStatus RunServedCommand(const App& app, const api::CommandRequest& request,
                            std::map<std::string, std::string> env, Access access,
                            std::ostream& out, std::ostream& err,
                            const std::atomic<bool>& interrupt);

}  // namespace tpufleet::cli
