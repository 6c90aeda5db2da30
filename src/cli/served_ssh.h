// `tpufleet --server URL exec|ssh|forward|cp|attach …` (or TPUFLEET_SERVER, or the server
// `join` made the default): the commands that reach workers over SSH, for a
// collaborator who has no fleet state and no cloud credential.
//
// They run on this machine, with the system's OpenSSH, as the person themself: their
// own keys and ssh-agent, User their name on the server (`join`'s, remote/
// joined_servers.h; without a join, ssh's default, the local user's name). Never with
// tpufleet's fleet key, which a collaborator does not have. The workers are the ones
// GET /v1/hosts gives this person's token (api::WorkerHost): a node or worker not in
// that answer is "no node 'X'" as for the local commands. Each worker's host key is
// pinned from the same answer (control/server_ssh.h DirectServerSshEntries:
// StrictHostKeyChecking yes, HostKeyAlias, a known_hosts of those keys alone): the trust
// chain is the server's pinned TLS certificate, and a worker presenting another key is
// refused by ssh, never trusted on first use.
//
// The config and known_hosts are files in memory that live as long as this process
// (util/file.h MemoryFile: nothing is left in TMPDIR, whatever ends it); so `ssh` and
// `attach` wait for ssh (instead of replacing tpufleet with it, as locally) and exit
// with its status. Label selectors (team=a) are refused
// in one line: the server's answer has no labels.
//
// Thread-safety: one command at a time, on its thread.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "api/workers.h"
#include "cli/command.h"
#include "control/server_ssh.h"
#include "control/targets.h"
#include "util/status.h"

namespace tpufleet::cli {

/// Whether `command` runs here over SSH when a team server is named.
bool ServedOverSsh(std::string_view command);

/// What the commands below get: the person's workers on the server and the ssh config
/// to reach them, valid while this lives.
struct ServerLogins {
  std::string url;                 // the server's, for messages
  std::string person;              // their name there; "" when not joined
  std::vector<NodeRecord> nodes;   // GET /v1/hosts as records (control/server_ssh.h)
  DirectServerSshFiles ssh;        // the config (-F ssh.config.path()) and its known_hosts
};

/// Runs `inv`'s command (ServedOverSsh) against the team server `url`.
ExitStatus RunOverSsh(Invocation& inv, const std::string& url);

/// InvalidArgument, in one line, when a word of `targets` is a label selector.
Status RefuseLabelSelectors(const std::vector<std::string>& targets);

/// The commands, each defined beside its local form. REQUIRES: `logins` from RunOverSsh.
ExitStatus RunExecOverSsh(Invocation& inv, const ServerLogins& logins);
ExitStatus RunCopyOverSsh(Invocation& inv, const ServerLogins& logins);
ExitStatus RunSshOverSsh(Invocation& inv, const ServerLogins& logins);
ExitStatus RunForwardOverSsh(Invocation& inv, const ServerLogins& logins);
ExitStatus RunAttachOverSsh(Invocation& inv, const ServerLogins& logins);

/// The jobs the person may see on the server (its `jobs --json`), to find a job's node.
Result<std::vector<api::JobPlace>> JobsOnServer(Invocation& inv, const ServerLogins& logins);

/// Runs `argv` (an `ssh` of the config) on this terminal and waits for it, ignoring
/// SIGINT and SIGQUIT meanwhile as system(3) does (ssh gets them): ssh's exit status as
/// ours (255 when it failed, 128+N when a signal ended it).
ExitStatus RunSshHere(Invocation& inv, const std::vector<std::string>& argv);

}  // namespace tpufleet::cli
