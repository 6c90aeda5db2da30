// What a collaborator's tpufleet gets from a team server (issue 16, docs/users.md
// "Inviting a collaborator"):
//
//   - the invite file `tpufleet invite NAME` writes and `tpufleet join FILE` reads: the
//     server's URL, the SHA-256 fingerprint of its TLS certificate (pinned before the
//     first contact, so a file with another one is refused there), the person's name and
//     their token. A credential: written 0600, never printed.
//       {"tpufleet_invite": 1, "server": "https://HOST:PORT", "fingerprint": "SHA256:…",
//        "person": "milo", "token": "tpufleet-person-…"}
//   - GET /v1/hosts's answer: the workers of the nodes the caller may use
//     (Access::MayUseNode), each with its SSH address, port and pinned host key.
//       {"hosts": [{"fleet", "node", "worker", "address", "port", "host_key"}, …]}
//
// Thread-safety: plain values and pure functions.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "util/status.h"

namespace tpufleet::api {

/// The invite file's format version; a reader refuses any other.
inline constexpr int kInviteVersion = 1;
/// An invite file is a few hundred bytes; anything past this is not one.
inline constexpr size_t kMaxInviteBytes = 4096;

struct Invite {
  std::string server;       // "https://HOST:PORT"
  std::string fingerprint;  // "SHA256:…" of the server's certificate
  std::string person;       // their Unix account and name in the users table
  std::string token;        // a person token (control/person_tokens.h)
};

/// The file's text (indented, with a final newline).
std::string ToJson(const Invite& invite);
/// The invite in `text`; InvalidArgument naming the first thing wrong: not JSON, another
/// version, a field missing or not a string, a server not https://, a fingerprint not
/// written "SHA256:…", a person or token with characters no name or token has.
Result<Invite> ParseInvite(std::string_view text);

/// One worker a caller may log in to.
struct WorkerHost {
  std::string fleet;
  std::string node;
  int worker = 0;
  std::string address;   // where its sshd listens now
  int port = 22;
  std::string host_key;  // "ssh-ed25519 AAAA…"; "" when not known yet
};

std::string ToJson(const std::vector<WorkerHost>& hosts);
/// InvalidArgument for anything but the object above (bounded by the caller's read).
Result<std::vector<WorkerHost>> ParseWorkerHosts(std::string_view text);

}  // namespace tpufleet::api
