#include "agent/host/sudo_rules.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>

#include "agent/host/system_programs.h"
#include "util/file.h"
#include "util/subprocess.h"

namespace tpufleet::agent::host {
namespace {

// visudo parses a few lines in milliseconds; a minute means it hangs.
constexpr std::chrono::seconds kVisudoTimeout{60};

}  // namespace

std::string SudoersText(const std::vector<SudoRule>& rules) {
  std::string out =
      "# Written by tpufleet-agent (accounts.apply): the sudo rights of the fleet's users.\n"
      "# sudo applies the last matching rule and reads sudoers.d in lexical order, so these\n"
      "# rules decide over google_sudoers. Edits here are replaced.\n";
  for (const SudoRule& r : rules) {
    out += r.user + (r.sudo ? " ALL=(ALL:ALL) NOPASSWD:ALL\n" : " ALL=(ALL:ALL) !ALL\n");
  }
  return out;
}

Status InstallSudoers(const std::string& sudoers_d, const std::string& text,
                      const std::string& visudo, const std::string& scratch_dir) {
  const std::string path = sudoers_d + "/" + kSudoersFileName;
  Result<std::string> have = ReadFile(path, 1u << 20);
  if (have.ok() && *have == text) {
    return Status::Ok();
  }
  if (::mkdir(sudoers_d.c_str(), 0755) != 0 && errno != EEXIST) {
    return ErrnoStatus(sudoers_d, errno);
  }
  if (!visudo.empty()) {
    // The exact text, checked where sudo never looks; then the same text moved in.
    const std::string candidate = scratch_dir + "/sudoers.check";
    TPUFLEET_TRY(WriteFileAtomic(candidate, text, 0440));
    Result<ProgramResult> check =
        RunSubprocess({visudo, "-c", "-q", "-f", candidate}, "", kVisudoTimeout,
                      SystemProgramOptions());
    ::unlink(candidate.c_str());
    TPUFLEET_TRY(check.status());
    if (check->exit_code != 0) {
      return FailedPreconditionError("visudo refused the sudo rules, so " + path +
                                     " is unchanged: " + check->output);
    }
  }
  return WriteFileAtomic(path, text, 0440);
}

}  // namespace tpufleet::agent::host
