#include "control/world.h"

namespace tpufleet {

std::string DefaultLogin(const std::string& user, const std::string& sudo_user, bool root) {
  if (root && !sudo_user.empty() && CheckUserName(sudo_user).ok()) {
    return sudo_user;
  }
  return !user.empty() && CheckUserName(user).ok() ? user : "tpufleet";
}

}  // namespace tpufleet
