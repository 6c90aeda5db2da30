#include "cli/exec_beside.h"

#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <ostream>
#include <string>
#include <vector>

#include "util/file.h"

namespace tpufleet::cli {

ExitStatus ExecBeside(Invocation& inv, const char* program) {
  Result<std::string> path = BesideThisProgram(program);
  if (!path.ok()) {
    return Fail(inv, path.status());
  }
  // Flags first, each as --flag=value so that a value starting with '-' stays a value;
  // then the positional words as they came, `--` included (the words before it cannot
  // look like flags: the parse took those as flags).
  std::vector<std::string> argv = {*path};  // its path, as ps and scripts looking for it see it
  for (const auto& [flag, last] : inv.args.values) {
    auto all = inv.args.all_values.find(flag);
    if (all == inv.args.all_values.end()) {  // a boolean flag
      argv.push_back("--" + flag);
      continue;
    }
    for (const std::string& value : all->second) {
      argv.push_back("--" + flag + "=" + value);
    }
  }
  const std::vector<std::string>& words = inv.args.positional;
  for (size_t i = 0; i < words.size(); ++i) {
    if (i == inv.args.after_dashdash) {
      argv.push_back("--");
    }
    argv.push_back(words[i]);
  }
  std::vector<char*> cargv;
  for (std::string& a : argv) {
    cargv.push_back(a.data());
  }
  cargv.push_back(nullptr);
  inv.out.flush();
  ::execv(path->c_str(), cargv.data());
  return Fail(inv, NotFoundError("cannot run " + *path + ": " + std::strerror(errno) +
                                 " (it is installed next to tpufleet)"));
}

}  // namespace tpufleet::cli
