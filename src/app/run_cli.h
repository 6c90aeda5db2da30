// RunCli: what both mains do once their App is built: read the environment, run the
// CLI on `args` with the App's commands, flush, and return the exit code.
#pragma once

#include <string>
#include <vector>

#include "cli/app.h"

namespace tpufleet::app {

int RunCli(const cli::App& app, const std::vector<std::string>& args);

}  // namespace tpufleet::app
