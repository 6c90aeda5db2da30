// Helpers for CLI tests: run tpufleet::cli::Main in-process with string streams and
// look at what it printed. Include in tests only.
#pragma once

#include <atomic>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "cli/app.h"
#include "cli/remote_command.h"
#include "util/strings.h"

namespace tpufleet::cli::cli_testing {

// No catalog override can be found under a HOME that does not exist.
constexpr const char* kNoHome = "/nonexistent/tpufleet-cli-test-home";
// Money compared to a tenth of a cent; every expected figure is worked by hand.
constexpr double kCent = 1e-3;

struct Output {
  int code = -1;
  std::string out;
  std::string err;
};

// Runs the CLI with `app` (its commands and world factory).
inline Output Tpufleet(const App& app, const std::vector<std::string>& argv,
                       std::map<std::string, std::string> env = {{"HOME", kNoHome}}) {
  std::ostringstream out;
  std::ostringstream err;
  Output o;
  o.code = static_cast<int>(Main(app, argv, out, err, env));
  o.out = out.str();
  o.err = err.str();
  return o;
}

// Runs `argv` as a team server runs it for a client allowed `access` that sent `files`
// (RunServedCommand), the client never going away.
inline Output Served(const App& app, const std::vector<std::string>& argv,
                     std::map<std::string, std::string> env, Access access,
                     std::map<std::string, std::string> files = {}) {
  std::ostringstream out;
  std::ostringstream err;
  std::atomic<bool> never{false};
  Output o;
  o.code = static_cast<int>(RunServedCommand(app, {argv, std::move(files)}, std::move(env),
                                             std::move(access), out, err, never));
  o.out = out.str();
  o.err = err.str();
  return o;
}

// Runs the CLI with an App of its own commands and no world: what a command that
// needs no fleet state sees.
inline Output Tpufleet(const std::vector<std::string>& argv,
                       std::map<std::string, std::string> env = {{"HOME", kNoHome}}) {
  return Tpufleet(App{CliCommands(), nullptr}, argv, std::move(env));
}

// Runs a command that must succeed with JSON on stdout, and parses it.
inline nlohmann::json TpufleetJson(const App& app, std::vector<std::string> argv,
                                   std::map<std::string, std::string> env = {{"HOME", kNoHome}}) {
  argv.push_back("--json");
  Output o = Tpufleet(app, argv, env);
  EXPECT_EQ(o.code, 0) << Join(argv, " ") << "\n" << o.err;
  EXPECT_EQ(o.err, "");
  nlohmann::json j = nlohmann::json::parse(o.out, nullptr, /*allow_exceptions=*/false);
  EXPECT_FALSE(j.is_discarded()) << o.out;
  return j;
}

inline nlohmann::json TpufleetJson(std::vector<std::string> argv,
                                   std::map<std::string, std::string> env = {{"HOME", kNoHome}}) {
  return TpufleetJson(App{CliCommands(), nullptr}, std::move(argv), std::move(env));
}

// The text after `label` on the line of `out` that starts with "  label ", trimmed.
inline std::string Row(const std::string& out, const std::string& label) {
  for (const std::string& line : Split(out, '\n')) {
    if (StartsWith(line, "  " + label + " ")) {
      return std::string(Trim(line.substr(label.size() + 2)));
    }
  }
  return "<no row '" + label + "'>";
}

inline bool Contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

// Whether some line of a table starts with `first_cell` followed by a space.
inline bool HasTableRow(const std::string& out, const std::string& first_cell) {
  for (const std::string& line : Split(out, '\n')) {
    if (StartsWith(line, first_cell + " ")) {
      return true;
    }
  }
  return false;
}

}  // namespace tpufleet::cli::cli_testing
