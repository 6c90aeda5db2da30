// How the job commands show jobs: each worker's log lines prefixed with the worker
// ("pod/w3 | …", stderr lines on stderr), the `jobs` table, and a job as the api's
// wire type for --json.
//
// Thread-safety: one thread.
#pragma once

#include <cstdint>
#include <map>
#include <ostream>
#include <string>
#include <string_view>

#include "api/workers.h"
#include "cli/command.h"
#include "cli/interrupt_watch.h"
#include "control/jobs.h"
#include "core/diagnosis.h"

namespace tpufleet::cli {

/// The world's clock now, in Unix milliseconds (what the agents' times are in).
int64_t NowUnixMs(const World& world);

/// A job command's error: bad input (InvalidArgument: a name in use, a missing workdir)
/// is a usage error (exit 2), the rest a failure (exit 1).
ExitStatus JobError(Invocation& inv, const Status& status);

/// A job's output as it arrives: each line after its worker's prefix ("pod/w3 | "), or
/// with none when `prefixed` is false (`logs --worker N`: one worker's log as it is).
/// Lines are printed whole (a line over kExecLineBytes in pieces).
class JobLogPrinter {
 public:
  JobLogPrinter(std::ostream& out, std::ostream& err, bool prefixed)
      : out_(out), err_(err), prefixed_(prefixed) {}

  /// `stream` is "stdout" or "stderr" (where the piece goes here too).
  void Print(const JobWorker& worker, std::string_view stream, std::string_view data);
  /// Prints every unfinished last line, ended with a newline.
  void Finish();

 private:
  std::string Prefix(const std::string& worker) const;

  std::ostream& out_;
  std::ostream& err_;
  const bool prefixed_;
  // The unfinished last line of each (worker name, stream), and the streams in use.
  std::map<std::pair<std::string, bool>, std::string> held_;
};

/// FollowJob printing to the invocation's streams (prefixed unless options.worker says
/// one), its notes on stderr; stops following when `interrupt` has seen Ctrl-C.
Result<JobView> PrintLogs(Invocation& inv, World& world, const JobView& job,
                          const FollowOptions& options, const InterruptWatch& interrupt);

/// The verdicts of running jobs (core/diagnosis.h), by job id: what `jobs` shows of them.
using JobVerdicts = std::map<std::string, Diagnosis>;

/// `job` as `jobs --json` and `cancel --json` write it; `now_ms` (Unix ms) ends the
/// duration of a job that has not ended; its verdict from `verdicts` when it has one.
api::JobReport ToApi(const JobView& job, int64_t now_ms, const JobVerdicts& verdicts = {});

/// The `jobs` table: JOB, NAME, NODE, STATE, VERDICT (only when `verdicts` has some: a
/// running job's verdict, "-" for the others), EXIT (each worker's exit code or signal
/// in order, runs folded: "0x3,1"), USER, STARTED (how long ago), TIME (how long it
/// ran), RESTARTS and TTR (only when a job was run with --restart or restarted: its
/// restarts, "/limit" when restartable, and its node's last time-to-recover), and NOTE
/// (which worker failed first, or who holds the TPU it waits for).
void PrintJobsTable(std::ostream& out, const JobsReport& report, int64_t now_ms,
                    const JobVerdicts& verdicts = {});

/// A time-to-recover for people: "4.2s" under a minute, else as FormatDuration ("3m12s").
std::string FormatSeconds(double seconds);

/// One line for people on how the job stands: "succeeded in 4m12s",
/// "failed after 10s: w2 failed first: exit 1", "running for 3m", "waiting for the TPU:
/// held by job j… (pid 42, bob: python3 x.py)".
std::string DescribeJob(const JobView& job, int64_t now_ms);

}  // namespace tpufleet::cli
