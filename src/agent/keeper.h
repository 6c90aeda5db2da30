// The keeper of one job: `tpufleet-agent keep ID`, started by serve in a session of its
// own for every job, so the job outlives serve (a restart, an upgrade, a crash).
//
// It runs as root (as serve does) and:
//   - takes the job's keeper lock (job_dir.h) for its whole life, so serve can find it
//     again and tell when it is gone;
//   - starts `/bin/bash -lc COMMAND` in a process group of its own, as the job's user
//     (become_user.h: setgroups from /etc/group, setgid, setuid) in the job's workdir,
//     with the login environment and core/job.h's JobEnvironment, stdin /dev/null, and
//     stdout and stderr into the job's rotated log files (logs.h); a job with `pty` runs
//     instead on a pseudo-terminal (its own session, TERM=xterm-256color), whose output
//     goes to stdout.log and to whoever attaches (attach.h);
//   - records in state.json, each time atomically: running with the pid and the start;
//     then the end, the exit code or the signal, and succeeded, failed or cancelled. A
//     process that could not be started at all (setuid refused, the workdir gone) is
//     failed with a message; a command bash cannot find exits 127 like any other exit;
//   - on SIGTERM (serve's cancel, which first writes the grace into jobs/ID/cancel) sends
//     SIGTERM to the job's process group and SIGKILL `grace` seconds later, and records
//     the job as cancelled however it ends.
// After the job's process has exited it copies what is left in the pipes for at most
// kDrainAfterExit (a background child of the job may hold them open for ever), then
// records the end and exits.
//
// Thread-safety: a whole program, run on main's thread.
#pragma once

#include <chrono>
#include <string>
#include <vector>

namespace tpufleet::agent {

/// How long the keeper goes on copying output after the job's process has exited.
inline constexpr std::chrono::seconds kDrainAfterExit{2};

/// `tpufleet-agent keep ID [--state-dir DIR] [--log-bytes N] [--attach-dir DIR]`: keeps
/// job ID of the state directory DIR, rotating its logs at N bytes (default
/// kLogFileBytes), its terminal (if any) attachable below the attach DIR. Returns the exit
/// status: 0 once the job's end is recorded, 1 when the job could not be kept (its
/// lock is held, its files are unreadable: said on stderr), 2 on bad usage.
int KeepMain(const std::vector<std::string>& args);

}  // namespace tpufleet::agent
