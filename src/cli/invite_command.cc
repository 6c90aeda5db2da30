// `tpufleet invite NAME` (on the server's machine, over its state) and `tpufleet join
// FILE` (on the collaborator's laptop, with no state): api/invite.h's file between them,
// docs/users.md "Inviting a collaborator".
#include <unistd.h>

#include <cerrno>
#include <iostream>
#include <iterator>

#include <nlohmann/json.hpp>

#include "api/invite.h"
#include "cli/app.h"
#include "cli/command.h"
#include "cli/invite_command.h"
#include "cli/fleet_world.h"
#include "control/person_tokens.h"
#include "control/server_ssh.h"
#include "core/fleet_spec.h"
#include "remote/joined_servers.h"
#include "remote/server_client.h"
#include "util/file.h"
#include "util/pem_fingerprint.h"
#include "util/strings.h"

namespace tpufleet::cli {
namespace {

// serve's certificate is a kilobyte or two, with its chain a few.
constexpr size_t kMaxCertificateBytes = 64 * 1024;

// The refusal to write over an invite (or any file) at `path`.
Status Taken(const std::string& path) {
  return AlreadyExistsError(path + " exists; give another --out, or remove it (an old invite "
                            "holds a token)");
}

// `text` written to the new file `path` (0600), whole or not at all; AlreadyExists when
// there is one (link(2) never replaces a file).
Status WriteNewPrivateFile(const std::string& path, const std::string& text) {
  std::string writing = path + ".writing";
  TPUFLEET_TRY(WriteFileAtomic(writing, text, 0600));
  int linked = ::link(writing.c_str(), path.c_str());
  int err = errno;
  ::unlink(writing.c_str());
  if (linked != 0) {
    return err == EEXIST ? Taken(path) : ErrnoStatus(path, err);
  }
  return Status::Ok();
}

// The fingerprint of the certificate serve keeps in STATE/serve (server/tls_identity.h).
Result<std::string> ServeFingerprint(const std::string& state_dir) {
  std::string path = state_dir + "/serve/tls.crt";
  Result<std::string> pem = ReadFile(path, kMaxCertificateBytes);
  if (!pem.ok() && pem.status().code() == StatusCode::kNotFound) {
    return FailedPreconditionError(
        "no certificate of serve's in " + path + ": start `tpufleet serve` once (it makes "
        "it), or give the one it uses with --server-fingerprint SHA256:…");
  }
  if (!pem.ok()) {
    return pem.status();
  }
  Result<std::string> fp = PemCertificateFingerprint(*pem);
  if (!fp.ok()) {
    return InvalidArgumentError(path + ": " + fp.status().message());
  }
  return fp;
}

}  // namespace

ExitStatus RunInvite(Invocation& inv) {
  const std::vector<std::string>& pos = inv.args.positional;
  if (pos.size() != 1) {
    return UsageError(inv, "invite takes one NAME: tpufleet invite milo --server-url "
                           "https://HOST:PORT");
  }
  const std::string& name = pos[0];
  if (Status s = CheckUserName(name); !s.ok()) {
    return UsageError(inv, "invite " + QuoteForMessage(name) + ": " + s.message());
  }
  std::string url = inv.args.Get("server-url").value_or("");
  if (url.empty()) {
    return UsageError(inv, "invite needs --server-url https://HOST:PORT: the address the "
                           "collaborator's laptop reaches serve at");
  }
  std::string given_fp = inv.args.Get("server-fingerprint").value_or("");
  Result<remote::ServerOptions> server = remote::ServerAt(url, given_fp, inv.env);
  if (!server.ok()) {
    return UsageError(inv, server.status().message());
  }
  if (!server->tls) {
    return UsageError(inv, "--server-url " + url + ": an invite is for another machine; give "
                           "serve's https:// address");
  }
  std::string out = inv.args.Get("out").value_or(name + ".tpufleet-invite");
  Result<std::unique_ptr<WorldHandle>> handle = OpenWorld(inv, false);
  if (!handle.ok()) {
    return Fail(inv, handle.status());
  }
  World& world = (*handle)->world();
  Result<std::vector<UserRecord>> users = world.store.Users("");
  if (!users.ok()) {
    return Fail(inv, users.status());
  }
  bool collaborator = false;
  for (const UserRecord& u : *users) {
    collaborator = collaborator || u.name == name;
  }
  if (!collaborator) {
    return Fail(inv, FailedPreconditionError(
                         name + " is no collaborator of any fleet here: `tpufleet users add " +
                         name + " --key FILE --spec FLEET.yaml` first"));
  }
  std::string fingerprint = given_fp;
  if (fingerprint.empty()) {
    Result<std::string> fp = ServeFingerprint(world.paths.state_dir);
    if (!fp.ok()) {
      return Fail(inv, fp.status());
    }
    fingerprint = *fp;
  }
  if (::access(out.c_str(), F_OK) == 0) {  // before a token is made; the link checks again
    return Fail(inv, Taken(out));
  }
  bool replace = inv.args.Has("replace");
  Result<std::string> token =
      IssuePersonToken(world.store, name, "invite", world.clock.Now(), replace);
  if (!token.ok()) {
    return Fail(inv, token.status());
  }
  Status written = WriteNewPrivateFile(out, api::ToJson(api::Invite{server->url, fingerprint,
                                                                    name, *token}));
  if (!written.ok()) {
    return Fail(inv, written);
  }
  if (inv.json) {
    inv.out << nlohmann::json({{"file", out},
                               {"person", name},
                               {"server", server->url},
                               {"fingerprint", fingerprint}})
                   .dump(2)
            << "\n";
    return ExitStatus::kOk;
  }
  std::string base = out.substr(out.rfind('/') + 1);
  inv.out << "Wrote " << out << " (mode 0600): " << name << "'s invite to " << server->url
          << (replace ? ", their older tokens forgotten" : "") << ".\n"
          << "It is a credential: whoever holds it acts as " << name
          << " on the team server. Send it to " << name
          << " privately (not in a shared channel), then delete your copy.\n"
          << "On their laptop, " << name << " runs:\n\n"
          << "  tpufleet join " << base << "\n\n"
          << "It pins the server's certificate " << fingerprint << ".\n"
          << "To revoke it: `tpufleet invite " << name << " --replace` (a new invite, the old "
          << "one refused) or `tpufleet users remove " << name << "`.\n";
  return ExitStatus::kOk;
}

ExitStatus RunJoin(Invocation& inv) {
  const std::vector<std::string>& pos = inv.args.positional;
  if (pos.size() != 1) {
    return UsageError(inv, "join takes the invite file (or - for stdin): tpufleet join "
                           "milo.tpufleet-invite");
  }
  const std::string& path = pos[0];
  std::string text;
  if (path == "-") {
    std::istreambuf_iterator<char> in(std::cin), end;
    for (; in != end && text.size() <= api::kMaxInviteBytes; ++in) {
      text.push_back(*in);
    }
  } else {
    Result<std::string> read = ReadFile(path, api::kMaxInviteBytes + 1);
    if (!read.ok()) {
      return Fail(inv, read.status());
    }
    text = *std::move(read);
  }
  std::string where = path == "-" ? "the invite on stdin" : path;
  Result<api::Invite> invite = api::ParseInvite(text);
  if (invite.ok() && !StartsWith(invite->token, kPersonTokenPrefix)) {
    invite = InvalidArgumentError("its \"token\" is not a person's token");
  }
  if (!invite.ok()) {
    return Fail(inv, InvalidArgumentError(where + ": " + invite.status().message()));
  }
  Result<remote::ServerOptions> options =
      remote::ServerAt(invite->server, invite->fingerprint, inv.env);
  if (!options.ok()) {
    return Fail(inv, InvalidArgumentError(where + ": " + options.status().message()));
  }
  options->fingerprint_source = "the invite " + where;
  options->token = invite->token;
  options->token_source = "the invite " + where;
  if (inv.app.server_http == nullptr) {
    return Fail(inv, InternalError("this build of tpufleet has no HTTP client for a server"));
  }
  remote::JoinedServer joined{options->url, options->server, invite->person, invite->token};
  remote::ServerClient client(inv.app.server_http, *options);
  std::string notice;
  Result<std::vector<api::WorkerHost>> hosts = client.Hosts(&notice);
  if (!hosts.ok()) {
    return Fail(inv, hosts.status());
  }
  if (Status s = remote::SaveJoinedServer(inv.env, joined); !s.ok()) {
    return Fail(inv, s);
  }
  Result<std::string> program = ThisProgram();
  Result<std::string> dir = ServerSshDir(inv.env, joined.server);
  if (!program.ok() || !dir.ok()) {
    return Fail(inv, !program.ok() ? program.status() : dir.status());
  }
  if (Result<bool> w = WriteServerSshFiles(*dir, joined.url, joined.person, *hosts, *program);
      !w.ok()) {
    return Fail(inv, w.status());
  }
  Result<std::string> user_config = IncludeServerSshNames(inv.env, *dir);
  if (!user_config.ok()) {
    return Fail(inv, user_config.status());
  }
  if (inv.json) {
    nlohmann::json names = nlohmann::json::array();
    for (const api::WorkerHost& h : *hosts) {
      names.push_back(h.node + "-w" + std::to_string(h.worker));
    }
    inv.out << nlohmann::json({{"server", joined.url},
                               {"person", joined.person},
                               {"ssh_config", *dir + "/config"},
                               {"hosts", names}})
                   .dump(2)
            << "\n";
    return ExitStatus::kOk;
  }
  inv.out << "Joined " << joined.url << " as " << joined.person << " (its certificate "
          << invite->fingerprint << " pinned).\n"
          << "It is now your default team server: `tpufleet status`, `jobs`, … go to it "
          << "without --server (TPUFLEET_SERVER or --server name another).\n";
  if (hosts->empty()) {
    inv.out << "No node of theirs is yours to log in to yet; join again when one is.\n";
  } else {
    std::string first;
    inv.out << "SSH names, in " << *dir << "/config"
            << (user_config->empty() ? "" : " (included by " + *user_config + ")") << ":\n";
    for (const api::WorkerHost& h : *hosts) {
      if (h.worker == 0) {
        inv.out << "  " << h.node << " (worker 0)\n";
        first = first.empty() ? h.node : first;
      }
      inv.out << "  " << h.node << "-w" << h.worker << "\n";
    }
    inv.out << "e.g. ssh " << (first.empty() ? hosts->front().node : first) << "\n";
  }
  (void)notice;  // join says what it pinned above
  return ExitStatus::kOk;
}

}  // namespace tpufleet::cli
