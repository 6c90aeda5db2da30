// RunCli: what both mains do once their command table is complete: read the
// environment, run the CLI on `args`, flush, and return the exit code.
#pragma once

#include <string>
#include <vector>

namespace tpufleet::app {

int RunCli(const std::vector<std::string>& args);

}  // namespace tpufleet::app
