#include "control/agent_install.h"

#include <algorithm>
#include <functional>

#include "api/agent.h"
#include "util/encoding.h"
#include "util/file.h"
#include "util/strings.h"

namespace tpufleet {
namespace {

// The check script's lines start with these; anything else (a banner) is skipped.
constexpr std::string_view kInstalledTag = "tpufleet-check installed ";
constexpr std::string_view kSudoTag = "tpufleet-check sudo ";
constexpr std::string_view kPrometheusTag = "tpufleet-check prometheus ";
constexpr std::string_view kHelloTag = "tpufleet-check hello ";
// The agent's own answer to hello is a line of a few hundred bytes; more is not it.
constexpr size_t kHelloOutputCap = 64 * 1024;

bool IsSha256Hex(std::string_view s) {
  return s.size() == 64 && s.find_first_not_of("0123456789abcdef") == std::string_view::npos;
}

// The output's non-empty lines, trimmed.
std::vector<std::string> Lines(std::string_view output) {
  std::vector<std::string> out;
  for (const std::string& line : Split(std::string(output), '\n')) {
    if (!Trim(line).empty()) {
      out.emplace_back(Trim(line));
    }
  }
  return out;
}

}  // namespace

Result<LocalAgent> LoadLocalAgent(const std::string& path) {
  Result<std::string> bytes = ReadFile(path, kMaxLocalAgent);
  if (!bytes.ok()) {
    return FailedPreconditionError(
        "the node agent to install on the workers, " + path + ", cannot be read (" +
        bytes.status().message() + "): tpufleet looks for tpufleet-agent next to itself, or " +
        "where $" + std::string(kAgentBinaryEnv) + " says");
  }
  return LocalAgent{path, HexEncode(Sha256(*bytes))};
}

std::string AgentRecord(const std::string& sha256, int prometheus_port) {
  return prometheus_port == 0 ? sha256
                              : sha256 + " prometheus=" + std::to_string(prometheus_port);
}

std::string AgentCheckScript() {
  api::AgentRequest hello;
  hello.op = api::AgentOp::kHello;
  std::string a(api::kAgentBinaryPath);
  return "a=" + a + "\n" +
         "if [ -f \"$a\" ]; then echo \"" + std::string(kInstalledTag) +
         "$(sha256sum < \"$a\" | cut -c1-64)\"; else echo \"" + std::string(kInstalledTag) +
         "none\"; fi\n"
         // The port of ExecStart's `serve --prometheus ADDR:PORT`, when there is one.
         "p=$(sed -n 's/^ExecStart=.* --prometheus [^ ]*:\\([0-9]*\\).*$/\\1/p' " +
         std::string(kAgentUnitPath) + " 2>/dev/null | head -n 1)\n"
         "echo \"" + std::string(kPrometheusTag) + "${p:-none}\"\n"
         "if sudo -n true >/dev/null 2>&1; then echo '" + std::string(kSudoTag) +
         "yes'; else echo '" + std::string(kSudoTag) + "no'; fi\n"
         "if [ -x \"$a\" ]; then printf '%s\\n' " + ShellQuote(api::ToLine(hello)) +
         " | timeout 10 \"$a\" call 2>&1 | head -c " + std::to_string(kHelloOutputCap) +
         " | sed 's/^/" + std::string(kHelloTag) + "/'; fi\n"
         "true\n";
}

Result<AgentCheck> ParseAgentCheck(std::string_view output) {
  AgentCheck check;
  bool installed_seen = false;
  bool sudo_seen = false;
  std::vector<std::string> said;  // hello's lines that were not its answer
  for (const std::string& line : Lines(output)) {
    if (StartsWith(line, kInstalledTag)) {
      std::string hash = line.substr(kInstalledTag.size());
      installed_seen = hash == "none" || IsSha256Hex(hash);
      check.installed_sha256 = hash == "none" ? "" : hash;
    } else if (StartsWith(line, kPrometheusTag)) {
      long long port = 0;
      check.prometheus_port =
          ParseInt(line.substr(kPrometheusTag.size()), &port) && port > 0 && port <= 65535
              ? static_cast<int>(port)
              : 0;
    } else if (StartsWith(line, kSudoTag)) {
      sudo_seen = true;
      check.sudo = line.substr(kSudoTag.size()) == "yes";
    } else if (StartsWith(line, kHelloTag)) {
      std::string text = line.substr(kHelloTag.size());
      Result<api::AgentLine> got = api::ParseAgentLine(text, api::AgentOp::kHello);
      if (got.ok() && got->answer.status.ok() &&
          std::holds_alternative<api::AgentHello>(got->answer.body)) {
        check.answers = true;
        check.running_sha256 = std::get<api::AgentHello>(got->answer.body).binary_sha256;
      } else {
        said.push_back(got.ok() && !got->answer.status.ok() ? got->answer.status.message()
                                                             : text);
      }
    }
  }
  if (!installed_seen || !sudo_seen) {
    std::vector<std::string> lines = Lines(output);
    return InvalidArgumentError("the agent check printed " +
                                (lines.empty() ? std::string("nothing")
                                               : "\"" + lines.back() + "\"") +
                                " instead of its answer");
  }
  if (!check.answers) {
    check.why_not = check.installed_sha256.empty() ? "not installed"
                    : said.empty()                 ? "no answer"
                                                   : Join(said, "; ");
  }
  return check;
}

std::string AgentInstallCommand(const std::string& sha256, int prometheus_port) {
  // The hash is the CLI's own hex digest; anything else would not be safe on this line.
  std::string want = IsSha256Hex(sha256) ? sha256 : "invalid";
  return "t=$(mktemp /tmp/tpufleet-agent.XXXXXXXX) || exit 1; trap 'rm -f \"$t\"' EXIT; "
         "cat > \"$t\" || exit 1; got=$(sha256sum < \"$t\" | cut -c1-64); "
         "if [ \"$got\" != " + want + " ]; then echo \"the uploaded agent's SHA-256 is $got, "
         "not " + want + ": the copy broke on the way\" >&2; exit 1; fi; "
         "chmod 0755 \"$t\" && sudo -n \"$t\" install" +
         (prometheus_port > 0 ? " --prometheus " + std::to_string(prometheus_port) : "");
}

std::string AgentRootCallCommand() { return "sudo -n " + std::string(api::kAgentBinaryPath) + " call"; }

api::AgentRequest AccountsRequest(const std::vector<UserSpec>& users) {
  api::AgentRequest r;
  r.op = api::AgentOp::kAccountsApply;
  for (const UserSpec& u : users) {
    r.users.push_back({u.name, u.keys, u.sudo});
  }
  return r;
}

std::string AccountsRequestLine(const std::vector<UserSpec>& users) {
  return api::ToLine(AccountsRequest(users)) + "\n";
}

namespace {

// The answer of a one-shot op whose body is a `Body` in `output` (a login banner or
// sudo's complaint around it is skipped): OK, or FailedPrecondition with "the agent
// refused to DOING: why" or "the agent could not WHAT: " and what `failures` finds in
// the body ("" for nothing).
template <typename Body>
Status ParseResults(std::string_view output, api::AgentOp op, const std::string& doing,
                    const std::string& what,
                    const std::function<std::string(const Body&)>& failures) {
  std::vector<std::string> lines = Lines(output);
  for (const std::string& line : lines) {
    Result<api::AgentLine> got = api::ParseAgentLine(line, op);
    if (!got.ok()) {
      continue;
    }
    if (!got->answer.status.ok()) {
      return FailedPreconditionError("the agent refused to " + doing + ": " +
                                     got->answer.status.message());
    }
    const auto* body = std::get_if<Body>(&got->answer.body);
    std::string failed = body != nullptr ? failures(*body) : "";
    if (failed.empty()) {
      return Status::Ok();
    }
    return FailedPreconditionError("the agent could not " + what + ": " + failed);
  }
  return FailedPreconditionError("the agent did not answer " + std::string(api::AgentOpName(op)) +
                                 ": " + (lines.empty() ? std::string("no output") : lines.back()));
}

}  // namespace

std::string AccountFailure(const api::AccountResult& r) {
  if (r.error.empty() && r.action != "refused") {
    return "";
  }
  return r.name + ": " + (r.error.empty() ? r.action : r.error);
}

std::string AccountsReportFailures(const api::AccountsReport& report,
                                   const std::vector<api::AccountRemoval>& remove) {
  std::vector<std::string> failed;
  for (const api::AccountResult& r : report.results) {
    if (std::string f = AccountFailure(r); !f.empty()) {
      failed.push_back(std::move(f));
    }
  }
  // A guard that could not be put in place leaves the token to those without sudo.
  if (!report.metadata_guard.error.empty()) {
    failed.push_back("metadata guard: " + report.metadata_guard.error);
  }
  for (const api::AccountRemoval& x : remove) {
    if (std::none_of(report.results.begin(), report.results.end(),
                     [&](const api::AccountResult& r) {
                       return r.name == x.name && (r.action == "revoked" ||
                                                   r.action == "purged" || r.action == "refused");
                     })) {
      failed.push_back(x.name + ": this agent does not take accounts away; run `tpufleet up` to "
                       "update it, then remove again");
    }
  }
  return Join(failed, "; ");
}

Status ParseAccountsAnswer(std::string_view output,
                           const std::vector<api::AccountRemoval>& remove) {
  return ParseResults<api::AccountsReport>(
      output, api::AgentOp::kAccountsApply, "make the accounts", "make every account",
      [&](const api::AccountsReport& b) { return AccountsReportFailures(b, remove); });
}

std::vector<DataDiskSpec> MountsOf(const NodeSpec& node) {
  std::vector<DataDiskSpec> out;
  for (const DataDiskSpec& d : node.data_disks) {
    if (!d.mount.empty()) {
      out.push_back(d);
    }
  }
  return out;
}

std::string MountsRequestLine(const std::vector<DataDiskSpec>& disks) {
  api::AgentRequest r;
  r.op = api::AgentOp::kDisksMount;
  for (const DataDiskSpec& d : disks) {
    r.mounts.push_back({d.name, d.mount, d.mode == DiskMode::kReadOnly});
  }
  return api::ToLine(r) + "\n";
}

Status ParseMountsAnswer(std::string_view output) {
  return ParseResults<std::vector<api::MountResult>>(
      output, api::AgentOp::kDisksMount, "mount the disks", "mount every disk",
      [](const std::vector<api::MountResult>& mounts) {
        std::vector<std::string> failed;
        for (const api::MountResult& r : mounts) {
          if (!r.error.empty() || r.action == "refused") {
            failed.push_back(r.disk + " at " + r.path + ": " +
                             (r.error.empty() ? r.action : r.error));
          }
        }
        return Join(failed, "; ");
      });
}

}  // namespace tpufleet
