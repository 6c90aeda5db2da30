#include "app/emulator_locator.h"

#include <vector>

#include <nlohmann/json.hpp>

#include "util/file.h"
#include "util/strings.h"

namespace tpufleet::app {

std::string EmulatorStateDir(const std::optional<std::string>& flag,
                             const std::map<std::string, std::string>& env) {
  auto get = [&](const char* k) {
    auto it = env.find(k);
    return it == env.end() ? std::string() : it->second;
  };
  if (flag) {
    return *flag;
  }
  if (!get("TPUFLEET_EMULATOR_DIR").empty()) {
    return get("TPUFLEET_EMULATOR_DIR");
  }
  std::string base = !get("XDG_STATE_HOME").empty() ? get("XDG_STATE_HOME")
                                                     : get("HOME") + "/.local/state";
  return base + "/tpufleet/emulator";
}

bool IsEmulatorDaemon(pid_t pid) {
  Result<std::string> cmdline = ReadFile("/proc/" + std::to_string(pid) + "/cmdline");
  if (!cmdline.ok()) {
    return false;
  }
  std::vector<std::string> argv = Split(*cmdline, '\0');
  return argv.size() >= 2 && argv[0] == kEmulatorDaemonName && argv[1] == "serve";
}

std::optional<EmulatorDaemon> RunningEmulator(const std::string& dir) {
  Result<std::string> text = ReadFile(dir + "/daemon.json");
  if (!text.ok()) {
    return std::nullopt;
  }
  nlohmann::json j = nlohmann::json::parse(*text, nullptr, /*allow_exceptions=*/false);
  if (!j.is_object() || !j["pid"].is_number_integer() || !j["endpoint"].is_string()) {
    return std::nullopt;
  }
  EmulatorDaemon d{j["pid"].get<pid_t>(), j["endpoint"].get<std::string>()};
  if (!IsEmulatorDaemon(d.pid)) {
    return std::nullopt;
  }
  return d;
}

}  // namespace tpufleet::app
