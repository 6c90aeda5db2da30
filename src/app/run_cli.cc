#include "app/run_cli.h"

#include <unistd.h>

#include <iostream>
#include <map>


extern char** environ;

namespace tpufleet::app {

int RunCli(const cli::App& app, const std::vector<std::string>& args) {
  std::ios::sync_with_stdio(false);
  std::map<std::string, std::string> env;
  for (char** e = environ; *e != nullptr; ++e) {
    std::string kv(*e);
    size_t eq = kv.find('=');
    if (eq != std::string::npos) {
      env.emplace(kv.substr(0, eq), kv.substr(eq + 1));
    }
  }
  cli::Terminal terminal{isatty(STDOUT_FILENO) == 1,
                         isatty(STDIN_FILENO) == 1 ? &std::cin : nullptr};
  cli::ExitStatus status = cli::Main(app, args, std::cout, std::cerr, env, terminal);
  std::cout.flush();
  return static_cast<int>(status);
}

}  // namespace tpufleet::app
