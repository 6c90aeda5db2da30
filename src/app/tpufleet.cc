// tpufleet: the command-line entry point. Wiring only: the CLI's logic is in src/cli.
#include <iostream>
#include <map>
#include <string>
#include <vector>

#include "cli/command.h"

extern char** environ;

int main(int argc, char** argv) {
  std::ios::sync_with_stdio(false);
  std::vector<std::string> args(argv + 1, argv + argc);
  std::map<std::string, std::string> env;
  for (char** e = environ; *e != nullptr; ++e) {
    std::string kv(*e);
    size_t eq = kv.find('=');
    if (eq != std::string::npos) {
      env.emplace(kv.substr(0, eq), kv.substr(eq + 1));
    }
  }
  auto status = tpufleet::cli::Main(args, std::cout, std::cerr, env);
  std::cout.flush();
  return static_cast<int>(status);
}
