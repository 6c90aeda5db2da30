#include "agent/flags.h"

#include <unistd.h>

#include <algorithm>

#include "util/strings.h"

namespace tpufleet::agent {

std::string Flags::Get(const std::string& name, const std::string& otherwise) const {
  auto it = values.find(name);
  return it == values.end() ? otherwise : it->second;
}

Result<Flags> ParseFlags(const std::vector<std::string>& args,
                         const std::vector<std::string>& known) {
  Flags flags;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& arg = args[i];
    if (!StartsWith(arg, "--")) {
      flags.positional.push_back(arg);
      continue;
    }
    std::string name = arg.substr(2);
    std::string value;
    size_t eq = name.find('=');
    if (eq != std::string::npos) {
      value = name.substr(eq + 1);
      name.resize(eq);
    } else if (i + 1 < args.size()) {
      value = args[++i];
    } else {
      return InvalidArgumentError("--" + name + " needs a value");
    }
    if (std::find(known.begin(), known.end(), name) == known.end()) {
      return InvalidArgumentError("unknown option --" + name);
    }
    flags.values[name] = value;
  }
  return flags;
}

std::string DirOf(const std::string& path) {
  size_t slash = path.rfind('/');
  return slash == std::string::npos ? "." : slash == 0 ? "/" : path.substr(0, slash);
}

int Complain(int code, const std::string& message) {
  std::string line = "tpufleet-agent: " + message + "\n";
  (void)!write(STDERR_FILENO, line.data(), line.size());
  return code;
}

}  // namespace tpufleet::agent
