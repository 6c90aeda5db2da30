// The worker's minimal service manager: what systemd's multi-user.target does for the
// services a TPU VM enables, enough for the node agent (`tpufleet-agent install` writes
// /etc/systemd/system/tpufleet-agent.service and its link in multi-user.target.wants)
// to come back at every boot of a worker: first boot, stop/start, maintenance.
//
// The workers do not run systemd (/run/systemd/system does not exist on them, which is
// how programs tell). At every boot the init (worker_init.h) reads every *.service
// enabled on the worker in /etc/systemd/system/multi-user.target.wants/ (a link, or a
// file; the machine's own enabled units, which show through the worker's /etc overlay,
// are not the worker's and are left alone), takes the last
// ExecStart= of its [Service] section (the first word an absolute path; arguments split
// on spaces and tabs; no shell, no quoting, no $VARIABLES, no "-@+!:" prefixes) and
// starts it as root in the worker (stdin /dev/null, output to the worker's log, PATH the
// system's), restarting it whenever it exits, after a backoff (Restart=always). Every
// other directive is ignored. At shutdown each gets SIGTERM and is not restarted.
//
// Thread-safety: a UnitSupervisor belongs to the single-threaded init.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "util/status.h"

namespace tpufleet::emulator::hosts {

/// Where enabled units are found, as systemd's multi-user.target wants them.
inline constexpr const char* kWantsDir = "/etc/systemd/system/multi-user.target.wants";
/// The most units started; a TPU VM enables a few dozen.
inline constexpr size_t kMaxBootUnits = 64;
/// A unit file larger than this is not a unit file.
inline constexpr size_t kMaxUnitFile = 64 * 1024;
/// A unit that exits is started again after this, doubled after each quick exit up to
/// kUnitRestartMaxDelay (systemd's RestartSec is 100 ms, but a crash loop would flood
/// the worker's log).
inline constexpr std::chrono::milliseconds kUnitRestartDelay{500};
inline constexpr std::chrono::milliseconds kUnitRestartMaxDelay{30'000};
/// A unit that ran this long before it exited starts over with kUnitRestartDelay.
inline constexpr std::chrono::seconds kUnitStableRun{10};

struct BootUnit {
  std::string name;               // "tpufleet-agent.service"
  std::vector<std::string> argv;  // ExecStart=, split
};

/// The ExecStart= of a unit file's [Service] section, split as above; InvalidArgument
/// naming what is wrong (none, a relative program, a prefix).
Result<std::vector<std::string>> ParseExecStart(std::string_view unit_text);

/// Every *.service named in `made_here` (the wants directory in the /etc overlay's upper
/// layer: what was enabled on the worker itself; the same as `wants_dir` where /etc is
/// the worker's alone), by name, at most kMaxBootUnits, read from `wants_dir`. Why each
/// one that cannot be started is skipped goes to `skipped`; a name gone from
/// `wants_dir` (a unit the worker disabled) is left out quietly.
std::vector<BootUnit> FindBootUnits(const std::string& wants_dir, const std::string& made_here,
                                    std::vector<std::string>* skipped);

class UnitSupervisor {
 public:
  using Mono = std::chrono::steady_clock;

  /// Starts every unit now.
  void Start(std::vector<BootUnit> units, Mono::time_point now);
  /// The init reaped `pid`: true when it was a unit's (restarted after its backoff).
  bool Exited(pid_t pid, int status, Mono::time_point now);
  /// Starts the units whose backoff has passed; the time the next one is due, if any.
  std::optional<Mono::time_point> Tick(Mono::time_point now);
  /// Shutdown: SIGTERM to every running unit, and no more restarts.
  void Stop();

 private:
  struct Running {
    BootUnit unit;
    pid_t pid = -1;
    Mono::time_point started{};
    Mono::time_point restart_at{};
    std::chrono::milliseconds delay = kUnitRestartDelay;
  };
  void Launch(Running& r, Mono::time_point now);

  std::vector<Running> units_;
  bool stopped_ = false;
};

}  // namespace tpufleet::emulator::hosts
