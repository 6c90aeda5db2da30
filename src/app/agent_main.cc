// tpufleet-agent: the node agent on every worker (docs/agent-protocol.md). Wiring only:
// each subcommand is a row of the table below, its work in src/agent.
#include <string>
#include <string_view>
#include <vector>

#include "agent/attach.h"
#include "agent/flags.h"
#include "agent/installer.h"
#include "agent/keeper.h"
#include "agent/serve.h"

namespace {

struct Subcommand {
  std::string_view name;
  std::string_view summary;
  int (*run)(const std::vector<std::string>& args);
};

constexpr Subcommand kSubcommands[] = {
    {"serve", "run the agent: its socket, the jobs and their keepers",
     tpufleet::agent::ServeMain},
    {"call", "send one request line from stdin to the agent, answers to stdout",
     tpufleet::agent::CallMain},
    {"sample", "print this worker's sample (host, jobs, chips), --json for the metrics op's",
     tpufleet::agent::SampleMain},
    {"version", "print the version and the SHA-256 of this binary",
     tpufleet::agent::VersionMain},
    {"attach", "connect this terminal to a job's (Ctrl-] detaches)",
     tpufleet::agent::AttachMain},
    {"install", "(as root, from a copy) install this binary and start it as a service",
     tpufleet::agent::InstallMain},
    {"supervise", "run serve, starting it again when it dies (where systemd does not)",
     tpufleet::agent::SuperviseMain},
    {"keep", "(internal) keep one job: started by serve", tpufleet::agent::KeepMain},
};

int Usage() {
  std::string text = "usage: tpufleet-agent COMMAND [ARGS]\n";
  for (const Subcommand& s : kSubcommands) {
    text += "  " + std::string(s.name) + std::string(10 - s.name.size(), ' ') +
            std::string(s.summary) + "\n";
  }
  return tpufleet::agent::Complain(tpufleet::agent::kExitUsage, text);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    return Usage();
  }
  std::vector<std::string> args(argv + 2, argv + argc);
  for (const Subcommand& s : kSubcommands) {
    if (s.name == argv[1]) {
      return s.run(args);
    }
  }
  return Usage();
}
