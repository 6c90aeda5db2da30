// validate: placeholder until the fleet spec lands.
#include "cli/command.h"

namespace tpufleet::cli {

ExitStatus RunValidate(Invocation& inv) { return Fail(inv, InternalError("not yet built")); }

}  // namespace tpufleet::cli
