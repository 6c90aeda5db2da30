#include "control/world.h"

namespace tpufleet {

std::string DefaultLogin(const std::string& user) {
  return !user.empty() && CheckUserName(user).ok() ? user : "tpufleet";
}

}  // namespace tpufleet
