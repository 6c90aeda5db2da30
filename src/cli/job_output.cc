#include "cli/job_output.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <vector>

#include "cli/exec_output.h"
#include "util/strings.h"
#include "util/text_table.h"

namespace tpufleet::cli {
namespace {

std::string Ago(int64_t from_ms, int64_t to_ms) {
  return FormatJobDuration(std::chrono::milliseconds(to_ms - from_ms));
}

// How long the job ran (or has run), or "-" before it started.
std::string RunTime(const JobView& job, int64_t now_ms) {
  if (job.started_unix_ms == 0) {
    return "-";
  }
  return Ago(job.started_unix_ms, job.ended ? job.ended_unix_ms : now_ms);
}

// A worker's column entry: its exit code or signal, "-" while it has not ended, "?"
// when it could not be asked, else its state's name.
std::string ExitToken(const JobWorker& w) {
  if (!w.known) {
    return "?";
  }
  if (!w.record.signal.empty()) {
    return w.record.signal;
  }
  if (w.record.exit_code.has_value()) {
    return std::to_string(*w.record.exit_code);
  }
  return IsEnded(w.record.state) ? std::string(api::JobStateName(w.record.state)) : "-";
}

// "0x3,1": the tokens in order, each run of equal ones folded.
std::string FoldedExits(const JobView& job) {
  std::vector<std::string> parts;
  for (size_t i = 0; i < job.workers.size();) {
    std::string token = ExitToken(job.workers[i]);
    size_t n = 1;
    while (i + n < job.workers.size() && ExitToken(job.workers[i + n]) == token) {
      ++n;
    }
    parts.push_back(n == 1 ? token : token + "x" + std::to_string(n));
    i += n;
  }
  return Join(parts, ",");
}

// Who holds the TPU a waiting worker of the job waits for, or "".
std::string Holder(const JobView& job) {
  for (const JobWorker& w : job.workers) {
    if (w.known && w.record.waiting_for.has_value()) {
      const api::TpuHolder& h = *w.record.waiting_for;
      std::string who = h.job.empty() ? "a process" : "job " + h.job;
      return "held by " + who + " (pid " + std::to_string(h.pid) + ", " + h.user + ": " +
             h.command + ")";
    }
  }
  return "";
}

std::string Note(const JobView& job) {
  if (!job.first_failure.empty()) {
    return job.first_failure;
  }
  if (job.state == JobState::kWaiting) {
    std::string holder = Holder(job);
    return holder.empty() ? "waits for the TPU" : "waits for the TPU, " + holder;
  }
  for (const JobWorker& w : job.workers) {
    if (!w.known) {
      return w.target.name + " did not answer";
    }
  }
  return "";
}

}  // namespace

int64_t NowUnixMs(const World& world) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             world.clock.Now().time_since_epoch())
      .count();
}

ExitStatus JobError(Invocation& inv, const Status& status) {
  return status.code() == StatusCode::kInvalidArgument ? UsageError(inv, status.message())
                                                       : Fail(inv, status);
}

std::string JobLogPrinter::Prefix(const std::string& worker) const {
  return prefixed_ ? worker + " | " : "";
}

void JobLogPrinter::Print(const JobWorker& worker, std::string_view stream,
                          std::string_view data) {
  bool is_err = stream == "stderr";
  std::string& held = held_[{worker.target.name, is_err}];
  PrintPrefixedLines(is_err ? err_ : out_, Prefix(worker.target.name), held, data,
                     kExecLineBytes);
}

void JobLogPrinter::Finish() {
  for (auto& [key, held] : held_) {
    if (!held.empty()) {
      (key.second ? err_ : out_) << Prefix(key.first) << held << "\n";
      held.clear();
    }
  }
  out_.flush();
  err_.flush();
}

Result<JobView> PrintLogs(Invocation& inv, World& world, const JobView& job,
                          const FollowOptions& options, const InterruptWatch& interrupt) {
  JobLogPrinter printer(inv.out, inv.err, !options.worker.has_value());
  Result<JobView> end = FollowJob(
      world, job, options,
      [&](const JobWorker& w, std::string_view stream, std::string_view data) {
        printer.Print(w, stream, data);
      },
      [&](const std::string& note) { inv.err << "tpufleet: " << note << std::endl; },
      [&] { return interrupt.Interrupted(); });
  printer.Finish();
  return end;
}

api::JobReport ToApi(const JobView& job, int64_t now_ms, const JobVerdicts& verdicts) {
  api::JobReport r;
  r.id = job.id;
  r.name = job.name;
  r.node = job.node;
  r.state = std::string(api::JobStateName(job.state));
  r.ended = job.ended;
  r.user = job.user;
  r.started_by = job.started_by;
  r.command = job.command;
  r.keep_going = job.keep_going;
  r.created_unix_ms = job.created_unix_ms;
  r.started_unix_ms = job.started_unix_ms;
  r.ended_unix_ms = job.ended_unix_ms;
  if (job.started_unix_ms != 0) {
    r.duration_ms = (job.ended ? job.ended_unix_ms : now_ms) - job.started_unix_ms;
  }
  r.first_failure = job.first_failure;
  if (auto it = verdicts.find(job.id); it != verdicts.end()) {
    r.verdict = std::string(VerdictName(it->second.verdict));
    r.verdict_detail = it->second.detail;
  }
  for (const JobWorker& w : job.workers) {
    api::JobWorkerReport wr;
    wr.worker = w.target.name;
    wr.index = w.target.worker;
    wr.state = w.known ? std::string(api::JobStateName(w.record.state)) : "unknown";
    wr.pid = w.record.pid;
    wr.exit_code = w.record.exit_code;
    wr.signal = w.record.signal;
    wr.message = w.record.message;
    wr.error = w.known ? "" : w.status.message();
    r.workers.push_back(std::move(wr));
  }
  if (job.restartable) {
    r.restart = job.restartable->restart;
    r.max_restarts = job.restartable->max_restarts;
    r.restarts = job.restarts;
    r.time_to_recover_seconds = job.time_to_recover_seconds;
  }
  return r;
}

std::string FormatSeconds(double seconds) {
  if (seconds < 60) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.1fs", seconds);
    return buf;
  }
  return FormatDuration(std::chrono::seconds(static_cast<int64_t>(seconds + 0.5)));
}

void PrintJobsTable(std::ostream& out, const JobsReport& report, int64_t now_ms,
                    const JobVerdicts& verdicts) {
  std::vector<std::string> header = {"JOB",  "NAME",    "NODE", "STATE", "EXIT",
                                     "USER", "STARTED", "TIME", "NOTE"};
  bool judged = !verdicts.empty();
  if (judged) {
    header.insert(header.begin() + 4, "VERDICT");
  }
  // RESTARTS (so far, of the limit when restartable) and TTR (the last time-to-recover)
  // only when a job was run with --restart or restarted.
  bool restarts = std::any_of(report.jobs.begin(), report.jobs.end(), [](const JobView& j) {
    return j.restartable.has_value() || j.restarts > 0;
  });
  if (restarts) {
    header.insert(header.end() - 1, {"RESTARTS", "TTR"});
  }
  TextTable table(header);
  for (const JobView& j : report.jobs) {
    std::vector<std::string> row = {
        j.id, j.name, j.node, std::string(api::JobStateName(j.state)), FoldedExits(j),
        j.started_by.empty() ? j.user : j.started_by,
        j.created_unix_ms == 0 ? "-" : Ago(j.created_unix_ms, now_ms) + " ago",
        RunTime(j, now_ms), Note(j)};
    if (judged) {
      auto it = verdicts.find(j.id);
      row.insert(row.begin() + 4,
                 it == verdicts.end() ? "-" : std::string(VerdictName(it->second.verdict)));
    }
    if (restarts) {
      std::string n = std::to_string(j.restarts);
      if (j.restartable) {
        n += "/" + std::to_string(j.restartable->max_restarts);
      }
      row.insert(row.end() - 1, {n, j.time_to_recover_seconds
                                        ? FormatSeconds(*j.time_to_recover_seconds)
                                        : "-"});
    }
    table.AddRow(std::move(row));
  }
  table.Print(out);
}

std::string DescribeJob(const JobView& job, int64_t now_ms) {
  std::string time = RunTime(job, now_ms);
  switch (job.state) {
    case JobState::kSucceeded:
      return "succeeded in " + time;
    case JobState::kFailed:
      return (job.ended ? "failed after " : "failing after ") + time + ": " + job.first_failure;
    case JobState::kCancelled:
      return "cancelled after " + time;
    case JobState::kLost:
      return "lost: " + (job.first_failure.empty() ? "no worker knows how it ended"
                                                   : job.first_failure);
    case JobState::kRunning:
      return "running for " + time;
    case JobState::kWaiting:
      return "waiting for the TPU" + (Holder(job).empty() ? "" : ": " + Holder(job));
    case JobState::kStarting:
      break;
  }
  return "starting";
}

}  // namespace tpufleet::cli
