// `tpufleet invite` and `tpufleet join` (invite_command.cc): the handlers of their rows
// in command_table.cc.
#pragma once

#include "cli/command.h"

namespace tpufleet::cli {

ExitStatus RunInvite(Invocation& inv);
ExitStatus RunJoin(Invocation& inv);

}  // namespace tpufleet::cli
