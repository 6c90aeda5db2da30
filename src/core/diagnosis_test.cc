// The verdicts and the sentences that say them (core/diagnosis.h), from synthetic
// samples: each verdict, the edges of its thresholds, and the window's summary.
#include "core/diagnosis.h"

#include <gtest/gtest.h>

namespace tpufleet {
namespace {

constexpr int64_t kT0 = 1764000000000;
constexpr int64_t kMinute = 60000;

// A worker whose 4 chips run job jabc1234 at `duty` % with `queue` HLOs waiting, the
// job at `cpu` % of one CPU out of `limit`, its busiest thread at `thread` %.
WorkerSample Sample(int64_t t, std::optional<double> duty, std::optional<int64_t> queue, double cpu,
                    double limit, double thread) {
  WorkerSample s;
  s.time_unix_ms = t;
  for (int i = 0; i < 4; ++i) {
    ChipSample chip;
    chip.index = i;
    chip.kind = "tpu";
    chip.device = "/dev/accel" + std::to_string(i);
    chip.holders = {{4242, "alice", "python3 train.py", "jabc1234"}};
    chip.duty_cycle_percent = duty;
    chip.hlo_queue = queue;
    s.chips.push_back(chip);
  }
  s.host.cpus = 4;
  s.jobs = {{"jabc1234", "alice", cpu, limit, thread, 1 << 30}};
  return s;
}

// A GIL-bound pipeline: the TPU at 10 %, nothing queued, one thread at 99 %.
WorkerSample Starved(int64_t t) {
  return Sample(t, 10, 0, 105, 400, 99);
}
WorkerSample Healthy(int64_t t) {
  return Sample(t, 60, 3, 120, 400, 40);
}

// A worker where nothing runs: chips without holders at 0 %.
WorkerSample Unused(int64_t t) {
  WorkerSample s = Sample(t, 0, 0, 0, 0, 0);
  for (ChipSample& chip : s.chips) {
    chip.holders.clear();
  }
  s.jobs.clear();
  return s;
}

std::vector<WorkerSample> Window(WorkerSample (*make)(int64_t), int n = 60) {
  std::vector<WorkerSample> out;
  for (int i = 0; i < n; ++i) {
    out.push_back(make(kT0 + i * 1000));
  }
  return out;
}

TEST(Diagnosis, InputBoundSample) {
  EXPECT_TRUE(IsInputBoundSample(Starved(kT0)));
  // All the job's CPUs busy (390 of 400) rather than one thread.
  EXPECT_TRUE(IsInputBoundSample(Sample(kT0, 10, 0, 390, 400, 60)));
  // A libtpu that reports no queue: duty and CPU decide.
  EXPECT_TRUE(IsInputBoundSample(Sample(kT0, 10, std::nullopt, 105, 400, 99)));

  EXPECT_FALSE(IsInputBoundSample(Sample(kT0, 25, 0, 105, 400, 99))) << "duty at the threshold";
  EXPECT_FALSE(IsInputBoundSample(Sample(kT0, 10, 1, 105, 400, 99))) << "work is queued";
  EXPECT_FALSE(IsInputBoundSample(Sample(kT0, 10, 0, 105, 400, 79))) << "the host is not busy";
  EXPECT_FALSE(IsInputBoundSample(Sample(kT0, std::nullopt, 0, 105, 400, 99)))
      << "no runtime metrics";
  WorkerSample by_hand = Starved(kT0);
  for (ChipSample& chip : by_hand.chips) {
    chip.holders.at(0).job = "";  // a process of no job holds the chips
  }
  EXPECT_FALSE(IsInputBoundSample(by_hand));
}

TEST(Diagnosis, SummarizeWindow) {
  std::vector<WorkerSample> samples = Window(Starved, 30);
  for (const WorkerSample& s : Window(Healthy, 10)) {
    samples.push_back(s);
  }
  WindowSummary w = SummarizeWindow(samples, 0);
  EXPECT_EQ(w.seconds, 60);
  EXPECT_EQ(w.samples, 40);
  EXPECT_DOUBLE_EQ(*w.duty_cycle_percent, (30 * 10 + 10 * 60) / 40.0);
  EXPECT_DOUBLE_EQ(*w.hlo_queue, (10 * 3) / 40.0);
  EXPECT_DOUBLE_EQ(w.input_bound_fraction, 0.75);
  EXPECT_EQ(w.job, "jabc1234");
  EXPECT_DOUBLE_EQ(*w.job_cpu_percent, (30 * 105 + 10 * 120) / 40.0);
  EXPECT_DOUBLE_EQ(*w.job_cpu_limit_percent, 400);
  EXPECT_DOUBLE_EQ(*w.job_busiest_thread_percent, (30 * 99 + 10 * 40) / 40.0);
  EXPECT_EQ(w.idle_since_unix_ms, 0);

  // Nothing measured stays unmeasured; the agent's idle start is kept.
  WindowSummary none = SummarizeWindow({}, kT0);
  EXPECT_EQ(none.samples, 0);
  EXPECT_FALSE(none.duty_cycle_percent.has_value());
  EXPECT_EQ(none.input_bound_fraction, 0);
  EXPECT_EQ(none.job, "");
  EXPECT_EQ(none.idle_since_unix_ms, kT0);
}

TEST(Diagnosis, WindowJobIsTheOneHoldingTheChips) {
  // A CPU-heavy job that holds no chip is not the chips' job.
  std::vector<WorkerSample> samples = Window(Healthy, 20);
  for (WorkerSample& s : samples) {
    s.jobs.push_back({"jprep000", "bob", 390, 400, 99, 0});
  }
  EXPECT_EQ(SummarizeWindow(samples, 0).job, "jabc1234");
  // Two jobs holding chips in one sample: the one with more CPU.
  for (WorkerSample& s : samples) {
    s.chips.at(3).holders.at(0).job = "jprep000";
  }
  WindowSummary both = SummarizeWindow(samples, 0);
  EXPECT_EQ(both.job, "jprep000");
  EXPECT_DOUBLE_EQ(*both.job_cpu_percent, 390);
  // Across the window: the job that held them most often; of two as often, the later.
  std::vector<WorkerSample> handover = Window(Healthy, 10);
  for (WorkerSample& s : Window(Healthy, 10)) {
    s.jobs.at(0).id = "jnew0000";
    for (ChipSample& chip : s.chips) {
      chip.holders.at(0).job = "jnew0000";
    }
    handover.push_back(s);
  }
  EXPECT_EQ(SummarizeWindow(handover, 0).job, "jnew0000");
  handover.push_back(Healthy(kT0 + 99000));
  EXPECT_EQ(SummarizeWindow(handover, 0).job, "jabc1234");
}

TEST(Diagnosis, InUse) {
  EXPECT_FALSE(IsInUse(Unused(kT0)));
  EXPECT_TRUE(IsInUse(Starved(kT0))) << "an input-bound job never starts an idle stretch";
  WorkerSample login = Unused(kT0);
  login.host.logins = 1;
  EXPECT_TRUE(IsInUse(login));
  WorkerSample holder = Unused(kT0);
  holder.chips.at(2).holders = {{77, "bob", "python3", ""}};
  EXPECT_TRUE(IsInUse(holder));
  WorkerSample working = Unused(kT0);
  working.chips.at(1).duty_cycle_percent = 0.5;
  EXPECT_TRUE(IsInUse(working));
}

TEST(Diagnosis, InputBoundSaysWhyWithTheNumbers) {
  Diagnosis d = DiagnoseWorker(SummarizeWindow(Window(Starved), 0), kT0 + kMinute);
  EXPECT_EQ(d.verdict, Verdict::kInputBound);
  EXPECT_EQ(VerdictName(d.verdict), "input-bound");
  EXPECT_EQ(d.detail,
            "input-bound: TPU duty cycle 10 %, HLO queue empty, job jabc1234 host CPU 99 % of "
            "one thread (100 % of the last 60 s)");

  std::vector<WorkerSample> all_cpus;
  for (int i = 0; i < 60; ++i) {
    all_cpus.push_back(Sample(kT0 + i * 1000, i < 30 ? 8 : 60, 0, 390, 400, 60));
  }
  EXPECT_EQ(DiagnoseWorker(SummarizeWindow(all_cpus, 0), kT0 + kMinute).detail,
            "input-bound: TPU duty cycle 34 %, HLO queue empty, job jabc1234 host CPU 98 % of "
            "its 4 CPUs (50 % of the last 60 s)");
  // A cgroup quota of 1.5 CPUs, used up.
  WindowSummary quota =
      SummarizeWindow(Window([](int64_t t) { return Sample(t, 5, 0, 140, 150, 50); }), 0);
  EXPECT_EQ(DiagnoseWorker(quota, kT0 + kMinute).detail,
            "input-bound: TPU duty cycle 5 %, HLO queue empty, job jabc1234 host CPU 93 % of "
            "its 1.5 CPUs (100 % of the last 60 s)");
  // Under half of the window starved: busy.
  all_cpus.at(0).chips.at(0).duty_cycle_percent = 90;
  all_cpus.at(0).chips.at(1).duty_cycle_percent = 90;
  Diagnosis busy = DiagnoseWorker(SummarizeWindow(all_cpus, 0), kT0 + kMinute);
  EXPECT_EQ(busy.verdict, Verdict::kBusy);
  EXPECT_EQ(busy.detail, "busy: TPU duty cycle 35 %, HLO queue empty, job jabc1234");
}

TEST(Diagnosis, CompilingIsNotInputBound) {
  // A job's first minute: XLA compiles on one thread, nothing runs on the TPU yet.
  std::vector<WorkerSample> compiling;
  for (int i = 0; i < 60; ++i) {
    compiling.push_back(Sample(kT0 + i * 1000, 0, 0, 100, 400, 100));
  }
  WindowSummary w = SummarizeWindow(compiling, 0);
  EXPECT_DOUBLE_EQ(w.input_bound_fraction, 1);
  Diagnosis d = DiagnoseWorker(w, kT0 + kMinute);
  EXPECT_EQ(d.verdict, Verdict::kBusy);
  EXPECT_EQ(d.detail,
            "busy: no step ran on the TPU in the last 60 s while job jabc1234 host CPU 100 % of "
            "one thread (compiling or loading)");
  // Once steps run, starved: input-bound.
  compiling.back().chips.at(0).duty_cycle_percent = 4;
  EXPECT_EQ(DiagnoseWorker(SummarizeWindow(compiling, 0), kT0 + kMinute).verdict,
            Verdict::kInputBound);
}

TEST(Diagnosis, IdleAfterIdleAfterNotBefore) {
  WindowSummary w = SummarizeWindow(Window(Unused), kT0);
  Diagnosis quiet = DiagnoseWorker(w, kT0 + 9 * kMinute);
  EXPECT_EQ(quiet.verdict, Verdict::kQuiet);
  EXPECT_EQ(quiet.detail, "quiet: unused for 9m00s, idle after 10m00s");
  Diagnosis idle = DiagnoseWorker(w, kT0 + 10 * kMinute);
  EXPECT_EQ(idle.verdict, Verdict::kIdle);
  EXPECT_EQ(idle.detail,
            "idle: unused for 10m00s (no job, no login, no chip holder, TPU duty cycle 0)");
  // serve's idle policy passes its own `after`.
  EXPECT_EQ(DiagnoseWorker(w, kT0 + 10 * kMinute, std::chrono::hours(2)).verdict, Verdict::kQuiet);
  // A worker clock ahead of the caller's: unused for 0, not for a negative time.
  EXPECT_EQ(DiagnoseWorker(w, kT0 - kMinute).detail, "quiet: unused for 0s, idle after 10m00s");
}

TEST(Diagnosis, InputBoundIsNeverIdle) {
  // The agent's idle stretch never starts while a job runs (IsInUse), and the verdict
  // holds however long ago anything else happened.
  WindowSummary w = SummarizeWindow(Window(Starved), 0);
  EXPECT_EQ(DiagnoseWorker(w, kT0 + 1000 * kMinute).verdict, Verdict::kInputBound);
  w.idle_since_unix_ms = kT0 - 1000 * kMinute;  // even from a confused agent
  EXPECT_EQ(DiagnoseWorker(w, kT0 + kMinute).verdict, Verdict::kInputBound);
  EXPECT_EQ(DiagnoseGroup({w, SummarizeWindow(Window(Unused), kT0 - 1000 * kMinute)}, kT0 + kMinute)
                .verdict,
            Verdict::kInputBound);
}

TEST(Diagnosis, UnknownAndBusy) {
  Diagnosis few = DiagnoseWorker(SummarizeWindow(Window(Healthy, 9), 0), kT0);
  EXPECT_EQ(few.verdict, Verdict::kUnknown);
  EXPECT_EQ(few.detail, "unknown: 9 samples in the last 60 s, fewer than the 10 a verdict needs");
  Diagnosis busy = DiagnoseWorker(SummarizeWindow(Window(Healthy, 10), 0), kT0);
  EXPECT_EQ(busy.verdict, Verdict::kBusy);
  EXPECT_EQ(busy.detail, "busy: TPU duty cycle 60 %, HLO queue 3.0, job jabc1234");

  Diagnosis none = DiagnoseGroup({std::nullopt, std::nullopt}, kT0);
  EXPECT_EQ(none.verdict, Verdict::kUnknown);
  EXPECT_EQ(none.detail, "unknown: no worker answered");
  EXPECT_EQ(DiagnoseGroup({}, kT0).detail, "unknown: no worker answered");
  Diagnosis starting = DiagnoseGroup({std::nullopt, SummarizeWindow(Window(Healthy, 3), 0)}, kT0);
  EXPECT_EQ(starting.detail,
            "unknown: no worker has enough samples yet (3 samples in the last 60 s, fewer than "
            "the 10 a verdict needs)");
}

// Worker `slow` at `slow_duty`, the others healthy at 60 %.
std::vector<std::optional<WindowSummary>> Pod(int workers, int slow, double slow_duty) {
  std::vector<std::optional<WindowSummary>> out;
  for (int i = 0; i < workers; ++i) {
    std::vector<WorkerSample> samples = Window(Healthy);
    if (i == slow) {
      for (WorkerSample& s : samples) {
        for (ChipSample& chip : s.chips) {
          chip.duty_cycle_percent = slow_duty;
        }
      }
    }
    out.push_back(SummarizeWindow(samples, 0));
  }
  return out;
}

TEST(Diagnosis, StragglerNamesTheWorkerAndBothNumbers) {
  Diagnosis d = DiagnoseGroup(Pod(4, 2, 12), kT0);
  EXPECT_EQ(d.verdict, Verdict::kStraggler);
  EXPECT_EQ(d.worker, 2);
  EXPECT_EQ(d.detail, "straggler: worker 2 at TPU duty cycle 12 %, the group's median 60 %");
  // Just above half the median: no straggler.
  EXPECT_EQ(DiagnoseGroup(Pod(4, 2, 31), kT0).verdict, Verdict::kBusy);
  // A group barely working has no stragglers (median under 20 %).
  std::vector<std::optional<WindowSummary>> resting = Pod(4, 1, 2);
  for (std::optional<WindowSummary>& w : resting) {
    if (*w->duty_cycle_percent > 50) {
      w->duty_cycle_percent = 15;
    }
  }
  EXPECT_EQ(DiagnoseGroup(resting, kT0).verdict, Verdict::kBusy);

  // The v4-32 of the issue: worker 2 input-bound makes the job a straggler, and says so.
  std::vector<std::optional<WindowSummary>> pod = Pod(4, -1, 0);
  pod[2] = SummarizeWindow(Window(Starved), 0);
  Diagnosis job = DiagnoseGroup(pod, kT0);
  EXPECT_EQ(job.verdict, Verdict::kStraggler);
  EXPECT_EQ(job.worker, 2);
  EXPECT_EQ(job.detail,
            "straggler: worker 2 at TPU duty cycle 10 %, the group's median 60 % (worker 2 is "
            "input-bound)");
  EXPECT_EQ(DiagnoseWorker(*pod[2], kT0).verdict, Verdict::kInputBound);
}

TEST(Diagnosis, GroupVerdicts) {
  // Input-bound everywhere alike: no straggler, the first input-bound worker speaks.
  WindowSummary starved = SummarizeWindow(Window(Starved), 0);
  Diagnosis bound = DiagnoseGroup({starved, starved}, kT0);
  EXPECT_EQ(bound.verdict, Verdict::kInputBound);
  EXPECT_EQ(bound.worker, 0);
  EXPECT_EQ(bound.detail,
            "input-bound: worker 0: TPU duty cycle 10 %, HLO queue empty, job jabc1234 host CPU "
            "99 % of one thread (100 % of the last 60 s)");

  WindowSummary long_unused = SummarizeWindow(Window(Unused), kT0 - 30 * kMinute);
  WindowSummary lately_unused = SummarizeWindow(Window(Unused), kT0 - 12 * kMinute);
  WindowSummary just_unused = SummarizeWindow(Window(Unused), kT0 - kMinute);
  Diagnosis idle = DiagnoseGroup({long_unused, lately_unused}, kT0);
  EXPECT_EQ(idle.verdict, Verdict::kIdle);
  EXPECT_EQ(idle.detail, "idle: every worker unused for 12m00s");
  Diagnosis quiet = DiagnoseGroup({long_unused, just_unused}, kT0);
  EXPECT_EQ(quiet.verdict, Verdict::kQuiet);
  EXPECT_EQ(quiet.detail, "quiet: no worker in use, idle after 10m00s");
  // A worker that does not answer may be working: never idle then.
  Diagnosis silent = DiagnoseGroup({long_unused, std::nullopt, lately_unused}, kT0);
  EXPECT_EQ(silent.verdict, Verdict::kUnknown);
  EXPECT_EQ(silent.worker, 1);
  EXPECT_EQ(silent.detail, "unknown: 2 of 3 workers unused, worker 1 not judged (no answer)");

  Diagnosis busy = DiagnoseGroup({SummarizeWindow(Window(Healthy), 0), long_unused}, kT0);
  EXPECT_EQ(busy.verdict, Verdict::kBusy);
  // An unused worker beside a working one is no straggler, and not in the average.
  EXPECT_EQ(busy.detail, "busy: 1 of 2 workers in use, TPU duty cycle 60 % on average");
  Diagnosis partly = DiagnoseGroup({SummarizeWindow(Window(Healthy), 0), std::nullopt}, kT0);
  EXPECT_EQ(partly.verdict, Verdict::kBusy);
  EXPECT_EQ(partly.detail, "busy: 1 of 2 workers in use, TPU duty cycle 60 % on average");
}

}  // namespace
}  // namespace tpufleet
