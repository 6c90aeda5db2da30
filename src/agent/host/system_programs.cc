#include "agent/host/system_programs.h"

#include <unistd.h>

namespace tpufleet::agent::host {

std::string FindSystemProgram(const std::string& name) {
  for (const char* dir : {"/usr/sbin", "/usr/bin", "/sbin", "/bin"}) {
    std::string path = std::string(dir) + "/" + name;
    if (::access(path.c_str(), X_OK) == 0) {
      return path;
    }
  }
  return "";
}

SpawnOptions SystemProgramOptions() {
  SpawnOptions o;
  o.env = {"PATH=/usr/sbin:/usr/bin:/sbin:/bin"};
  o.output_cap = 4096;  // the end of what it said is the reason it failed
  return o;
}

}  // namespace tpufleet::agent::host
