#include "core/diagnosis.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>

#include "core/job.h"
#include "util/enum_names.h"

namespace tpufleet {
namespace {

constexpr EnumName<Verdict> kVerdicts[] = {
    {Verdict::kBusy, "busy"},           {Verdict::kInputBound, "input-bound"},
    {Verdict::kStraggler, "straggler"}, {Verdict::kIdle, "idle"},
    {Verdict::kQuiet, "quiet"},         {Verdict::kUnknown, "unknown"},
};

struct Mean {
  double sum = 0;
  int n = 0;
  void Add(double v) {
    sum += v;
    ++n;
  }
  std::optional<double> Get() const {
    return n == 0 ? std::nullopt : std::optional<double>(sum / n);
  }
};

// Adds each chip's duty cycle and HLO queue that the sample has.
void AddChips(const WorkerSample& s, Mean& duty, Mean& queue) {
  for (const ChipSample& chip : s.chips) {
    if (chip.duty_cycle_percent) {
      duty.Add(*chip.duty_cycle_percent);
    }
    if (chip.hlo_queue) {
      queue.Add(static_cast<double>(*chip.hlo_queue));
    }
  }
}

bool HoldsAChip(const WorkerSample& s, const std::string& job) {
  return std::any_of(s.chips.begin(), s.chips.end(), [&](const ChipSample& chip) {
    return std::any_of(chip.holders.begin(), chip.holders.end(),
                       [&](const ChipHolder& h) { return h.job == job; });
  });
}

// The running job that holds the sample's chips (the one with most CPU when several
// do), or nullptr.
const JobSample* HoldingJob(const WorkerSample& s) {
  const JobSample* best = nullptr;
  for (const JobSample& job : s.jobs) {
    if (HoldsAChip(s, job.id) && (best == nullptr || job.cpu_percent > best->cpu_percent)) {
      best = &job;
    }
  }
  return best;
}

bool AllCpusSaturated(double cpu, double limit) {
  return limit > 0 && cpu >= kSaturatedCpuPercent / 100 * limit;
}

std::string Percent(double v) {
  return std::to_string(std::lround(v)) + " %";
}

// "1 CPU", "4 CPUs", "1.5 CPUs" (a cgroup quota) for a limit in percent of one CPU.
std::string Cpus(double limit_percent) {
  double cpus = limit_percent / 100;
  long whole = std::lround(cpus);
  if (std::fabs(cpus - static_cast<double>(whole)) < 0.05) {
    return std::to_string(whole) + (whole == 1 ? " CPU" : " CPUs");
  }
  char text[32];
  std::snprintf(text, sizeof text, "%.1f CPUs", cpus);
  return text;
}

// "TPU duty cycle 9 %, HLO queue empty": what the window says of the chips.
std::string ChipsText(const WindowSummary& w) {
  std::string out =
      w.duty_cycle_percent ? "TPU duty cycle " + Percent(*w.duty_cycle_percent) : "no TPU metrics";
  if (w.hlo_queue) {
    if (*w.hlo_queue < kEmptyHloQueue) {
      out += ", HLO queue empty";
    } else {
      char mean[32];
      std::snprintf(mean, sizeof mean, "%.1f", *w.hlo_queue);
      out += ", HLO queue " + std::string(mean);
    }
  }
  return out;
}

// "job j7x… host CPU 98 % of its 4 CPUs", or "… 99 % of one thread" when one saturated
// thread (a GIL) is the limit rather than the job's CPUs.
std::string JobCpuText(const WindowSummary& w) {
  if (w.job.empty() || !w.job_cpu_percent) {
    return "";
  }
  double cpu = *w.job_cpu_percent;
  double limit = w.job_cpu_limit_percent.value_or(0);
  double thread = w.job_busiest_thread_percent.value_or(0);
  std::string out = "job " + w.job + " host CPU ";
  if (!AllCpusSaturated(cpu, limit) && thread >= kSaturatedCpuPercent) {
    return out + Percent(thread) + " of one thread";
  }
  if (limit > 0) {
    return out + Percent(100 * cpu / limit) + " of its " + Cpus(limit);
  }
  return out + Percent(cpu) + " of one CPU";
}

std::string InputBoundText(const WindowSummary& w) {
  std::string out = ChipsText(w);
  if (std::string job = JobCpuText(w); !job.empty()) {
    out += ", " + job;
  }
  return out + " (" + Percent(100 * w.input_bound_fraction) + " of the last " +
         std::to_string(w.seconds) + " s)";
}

// A worker's detail without its verdict's name: what a group's detail quotes.
std::string Reason(const Diagnosis& d) {
  std::string_view name = NameIn(kVerdicts, d.verdict);
  return d.detail.substr(std::min(d.detail.size(), name.size() + 2));
}

}  // namespace

std::string_view VerdictName(Verdict v) {
  return NameIn(kVerdicts, v);
}

bool IsInputBoundSample(const WorkerSample& sample) {
  Mean duty;
  Mean queue;
  AddChips(sample, duty, queue);
  // A libtpu that does not report the queue leaves duty and CPU to decide.
  if (!duty.Get() || *duty.Get() >= kStarvedDutyPercent ||
      (queue.Get() && *queue.Get() >= kEmptyHloQueue)) {
    return false;
  }
  const JobSample* job = HoldingJob(sample);
  return job != nullptr && (AllCpusSaturated(job->cpu_percent, job->cpu_limit_percent) ||
                            job->busiest_thread_percent >= kSaturatedCpuPercent);
}

WindowSummary SummarizeWindow(const std::vector<WorkerSample>& samples,
                              int64_t idle_since_unix_ms) {
  WindowSummary w;
  w.seconds = static_cast<int>(kDiagnosisWindow.count());
  w.samples = static_cast<int>(samples.size());
  w.idle_since_unix_ms = idle_since_unix_ms;
  Mean duty;
  Mean queue;
  int starved = 0;
  // Per job holding the chips: in how many samples, and the last one.
  std::map<std::string, std::pair<int, size_t>> held;
  for (size_t i = 0; i < samples.size(); ++i) {
    AddChips(samples[i], duty, queue);
    starved += IsInputBoundSample(samples[i]) ? 1 : 0;
    if (const JobSample* job = HoldingJob(samples[i]); job != nullptr) {
      auto& [count, last] = held[job->id];
      ++count;
      last = i;
    }
  }
  w.duty_cycle_percent = duty.Get();
  w.hlo_queue = queue.Get();
  w.input_bound_fraction = samples.empty() ? 0 : static_cast<double>(starved) / samples.size();
  // The job that held the chips most often; of two as often, the later.
  auto chosen = std::max_element(held.begin(), held.end(),
                                 [](const auto& a, const auto& b) { return a.second < b.second; });
  if (chosen == held.end()) {
    return w;
  }
  w.job = chosen->first;
  Mean cpu;
  Mean limit;
  Mean thread;
  for (const WorkerSample& s : samples) {
    for (const JobSample& job : s.jobs) {
      if (job.id == w.job) {
        cpu.Add(job.cpu_percent);
        limit.Add(job.cpu_limit_percent);
        thread.Add(job.busiest_thread_percent);
      }
    }
  }
  w.job_cpu_percent = cpu.Get();
  w.job_cpu_limit_percent = limit.Get();
  w.job_busiest_thread_percent = thread.Get();
  return w;
}

bool IsInUse(const WorkerSample& sample) {
  if (!sample.jobs.empty() || sample.host.logins > 0) {
    return true;
  }
  return std::any_of(sample.chips.begin(), sample.chips.end(), [](const ChipSample& chip) {
    return !chip.holders.empty() || chip.duty_cycle_percent.value_or(0) > 0;
  });
}

Diagnosis DiagnoseWorker(const WindowSummary& window, int64_t now_unix_ms,
                         std::chrono::milliseconds idle_after) {
  if (window.samples < kMinSamples) {
    return {Verdict::kUnknown,
            "unknown: " + std::to_string(window.samples) + " samples in the last " +
                std::to_string(window.seconds) + " s, fewer than the " +
                std::to_string(kMinSamples) + " a verdict needs",
            std::nullopt};
  }
  if (window.input_bound_fraction >= kInputBoundFraction) {
    if (window.duty_cycle_percent.value_or(0) > 0) {
      return {Verdict::kInputBound, "input-bound: " + InputBoundText(window), std::nullopt};
    }
    // Not one step ran: a job compiling its program (one busy thread, an idle TPU, an
    // empty queue) looks starved sample by sample, but is not.
    return {Verdict::kBusy,
            "busy: no step ran on the TPU in the last " + std::to_string(window.seconds) +
                " s while " + JobCpuText(window) + " (compiling or loading)",
            std::nullopt};
  }
  if (window.idle_since_unix_ms > 0) {
    std::chrono::milliseconds unused{std::max<int64_t>(0, now_unix_ms - window.idle_since_unix_ms)};
    if (unused >= idle_after) {
      return {Verdict::kIdle,
              "idle: unused for " + FormatJobDuration(unused) +
                  " (no job, no login, no chip holder, TPU duty cycle 0)",
              std::nullopt};
    }
    return {Verdict::kQuiet,
            "quiet: unused for " + FormatJobDuration(unused) + ", idle after " +
                FormatJobDuration(idle_after),
            std::nullopt};
  }
  std::string detail = "busy: " + ChipsText(window);
  if (!window.job.empty()) {
    detail += ", job " + window.job;
  }
  return {Verdict::kBusy, detail, std::nullopt};
}

Diagnosis DiagnoseGroup(const std::vector<std::optional<WindowSummary>>& workers,
                        int64_t now_unix_ms, std::chrono::milliseconds idle_after) {
  std::vector<Diagnosis> verdicts(workers.size());
  std::vector<std::pair<double, int>> duty;  // (mean duty cycle, worker) of those working
  int silent = -1;                           // a worker that did not answer or could not be judged
  int judged = 0;
  for (size_t i = 0; i < workers.size(); ++i) {
    if (!workers[i]) {
      verdicts[i] = {Verdict::kUnknown, "unknown: no answer", std::nullopt};
    } else {
      verdicts[i] = DiagnoseWorker(*workers[i], now_unix_ms, idle_after);
    }
    if (verdicts[i].verdict == Verdict::kUnknown) {
      silent = silent < 0 ? static_cast<int>(i) : silent;
      continue;
    }
    ++judged;
    // Only working workers can straggle: an unused one is just unused.
    bool working =
        verdicts[i].verdict == Verdict::kBusy || verdicts[i].verdict == Verdict::kInputBound;
    if (working && workers[i]->duty_cycle_percent) {
      duty.emplace_back(*workers[i]->duty_cycle_percent, static_cast<int>(i));
    }
  }
  if (judged == 0) {
    auto answered =
        std::find_if(workers.begin(), workers.end(),
                     [](const std::optional<WindowSummary>& w) { return w.has_value(); });
    if (answered == workers.end()) {
      return {Verdict::kUnknown, "unknown: no worker answered", std::nullopt};
    }
    return {Verdict::kUnknown,
            "unknown: no worker has enough samples yet (" +
                Reason(verdicts[answered - workers.begin()]) + ")",
            std::nullopt};
  }
  if (duty.size() >= 2) {
    std::sort(duty.begin(), duty.end());
    size_t n = duty.size();
    double median =
        n % 2 == 1 ? duty[n / 2].first : (duty[n / 2 - 1].first + duty[n / 2].first) / 2;
    auto [slowest, worker] = duty.front();
    if (median >= kStragglerMinMedianPercent && slowest < kStragglerShare * median) {
      std::string detail = "straggler: worker " + std::to_string(worker) + " at TPU duty cycle " +
                           Percent(slowest) + ", the group's median " + Percent(median);
      if (verdicts[worker].verdict == Verdict::kInputBound) {
        detail += " (worker " + std::to_string(worker) + " is input-bound)";
      }
      return {Verdict::kStraggler, detail, worker};
    }
  }
  auto count = [&](Verdict v) {
    return std::count_if(verdicts.begin(), verdicts.end(),
                         [&](const Diagnosis& d) { return d.verdict == v; });
  };
  for (size_t i = 0; i < verdicts.size(); ++i) {
    if (verdicts[i].verdict == Verdict::kInputBound) {
      return {Verdict::kInputBound,
              "input-bound: worker " + std::to_string(i) + ": " + Reason(verdicts[i]),
              static_cast<int>(i)};
    }
  }
  long unused = count(Verdict::kIdle) + count(Verdict::kQuiet);
  if (unused == judged && silent >= 0) {
    return {Verdict::kUnknown,
            "unknown: " + std::to_string(unused) + " of " + std::to_string(workers.size()) +
                " workers unused, worker " + std::to_string(silent) + " not judged (" +
                Reason(verdicts[silent]) + ")",
            silent};
  }
  if (count(Verdict::kIdle) == judged) {
    // The group has been unused as long as its most recently used worker.
    int64_t since = 0;
    for (const std::optional<WindowSummary>& w : workers) {
      since = std::max(since, w->idle_since_unix_ms);
    }
    return {Verdict::kIdle,
            "idle: every worker unused for " + FormatJobDuration(std::chrono::milliseconds(
                                                   std::max<int64_t>(0, now_unix_ms - since))),
            std::nullopt};
  }
  if (unused == judged) {
    return {Verdict::kQuiet, "quiet: no worker in use, idle after " + FormatJobDuration(idle_after),
            std::nullopt};
  }
  Mean all;
  for (const auto& [d, worker] : duty) {
    all.Add(d);
  }
  std::string detail = "busy: " + std::to_string(count(Verdict::kBusy)) + " of " +
                       std::to_string(workers.size()) + " workers in use";
  if (all.Get()) {
    detail += ", TPU duty cycle " + Percent(*all.Get()) + " on average";
  }
  return {Verdict::kBusy, detail, std::nullopt};
}

}  // namespace tpufleet
