#include "emulator/hosts/boot_units.h"

#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include <algorithm>
#include <cstring>

#include "emulator/hosts/system_programs.h"
#include "emulator/hosts/worker_setup.h"
#include "util/file.h"
#include "util/strings.h"

namespace tpufleet::emulator::hosts {
namespace {

std::vector<std::string> Words(std::string_view text) {
  std::vector<std::string> out;
  std::string word;
  for (char c : text) {
    if (c == ' ' || c == '\t') {
      if (!word.empty()) {
        out.push_back(std::move(word));
        word.clear();
      }
    } else {
      word += c;
    }
  }
  if (!word.empty()) {
    out.push_back(std::move(word));
  }
  return out;
}

std::string Describe(int status) {
  if (WIFSIGNALED(status)) {
    return std::string("killed by ") + ::strsignal(WTERMSIG(status));
  }
  return "exited with status " + std::to_string(WEXITSTATUS(status));
}

}  // namespace

Result<std::vector<std::string>> ParseExecStart(std::string_view unit_text) {
  std::string section;
  std::string exec;
  for (const std::string& raw : Split(unit_text, '\n')) {
    std::string line(Trim(raw));
    if (line.empty() || line[0] == '#' || line[0] == ';') {
      continue;
    }
    if (line.front() == '[' && line.back() == ']') {
      section = line;
      continue;
    }
    size_t eq = line.find('=');
    if (section == "[Service]" && eq != std::string::npos && Trim(line.substr(0, eq)) == "ExecStart") {
      exec = std::string(Trim(line.substr(eq + 1)));  // the last one wins; "" resets
    }
  }
  std::vector<std::string> argv = Words(exec);
  if (argv.empty()) {
    return InvalidArgumentError("no ExecStart= in its [Service] section");
  }
  if (argv[0][0] != '/') {
    return InvalidArgumentError("ExecStart=" + exec +
                                ": the program must be an absolute path (prefixes such as - "
                                "or @ are not supported here)");
  }
  return argv;
}

std::vector<BootUnit> FindBootUnits(const std::string& wants_dir, const std::string& made_here,
                                    std::vector<std::string>* skipped) {
  std::vector<std::string> names = ListDirectory(made_here);
  std::sort(names.begin(), names.end());
  std::vector<BootUnit> units;
  for (const std::string& name : names) {
    if (name.size() <= 8 || name.substr(name.size() - 8) != ".service") {
      continue;
    }
    struct stat st;
    if (::lstat((wants_dir + "/" + name).c_str(), &st) != 0) {
      continue;  // disabled on the worker: the upper layer holds its whiteout
    }
    if (units.size() >= kMaxBootUnits) {
      skipped->push_back(name + ": more than " + std::to_string(kMaxBootUnits) + " units");
      continue;
    }
    Result<std::string> text = ReadFile(wants_dir + "/" + name, kMaxUnitFile);
    Result<std::vector<std::string>> argv =
        text.ok() ? ParseExecStart(*text) : Result<std::vector<std::string>>(text.status());
    if (!argv.ok()) {
      skipped->push_back(name + ": " + argv.status().message());
      continue;
    }
    units.push_back({name, std::move(*argv)});
  }
  return units;
}

void UnitSupervisor::Start(std::vector<BootUnit> units, Mono::time_point now) {
  for (BootUnit& u : units) {
    units_.push_back({std::move(u)});
    Launch(units_.back(), now);
  }
}

void UnitSupervisor::Launch(Running& r, Mono::time_point now) {
  Result<pid_t> pid = SpawnProgram(r.unit.argv, {});
  r.started = now;
  if (!pid.ok()) {
    Say("unit " + r.unit.name + ": " + pid.status().message() + "; trying again in " +
        std::to_string(r.delay.count()) + " ms");
    r.restart_at = now + r.delay;
    r.delay = std::min(r.delay * 2, kUnitRestartMaxDelay);
    return;
  }
  r.pid = *pid;
  Say("unit " + r.unit.name + ": started pid " + std::to_string(r.pid) + ": " +
      Join(r.unit.argv, " "));
}

bool UnitSupervisor::Exited(pid_t pid, int status, Mono::time_point now) {
  for (Running& r : units_) {
    if (r.pid != pid) {
      continue;
    }
    r.pid = -1;
    if (stopped_) {
      return true;
    }
    if (now - r.started >= kUnitStableRun) {
      r.delay = kUnitRestartDelay;
    }
    Say("unit " + r.unit.name + ": " + Describe(status) + "; restarting in " +
        std::to_string(r.delay.count()) + " ms");
    r.restart_at = now + r.delay;
    r.delay = std::min(r.delay * 2, kUnitRestartMaxDelay);
    return true;
  }
  return false;
}

std::optional<UnitSupervisor::Mono::time_point> UnitSupervisor::Tick(Mono::time_point now) {
  std::optional<Mono::time_point> next;
  if (stopped_) {
    return next;
  }
  for (Running& r : units_) {
    if (r.pid > 0) {
      continue;
    }
    if (now >= r.restart_at) {
      Launch(r, now);
    }
    if (r.pid < 0 && (!next || r.restart_at < *next)) {
      next = r.restart_at;
    }
  }
  return next;
}

void UnitSupervisor::Stop() {
  stopped_ = true;
  for (const Running& r : units_) {
    if (r.pid > 0) {
      ::kill(r.pid, SIGTERM);
    }
  }
}

}  // namespace tpufleet::emulator::hosts
