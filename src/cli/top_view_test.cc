// What `tpufleet top` draws from a metrics round (cli/top_view.h, top_json.h): the bars
// and sparklines, the rows of workers and of folded nodes, sorting and filtering, the row
// of a worker that did not answer, widths, the verdict lines, and the --json document.
#include "cli/top_view.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "cli/top_json.h"

namespace tpufleet::cli {
namespace {

constexpr int64_t kGib = int64_t{1} << 30;
constexpr int64_t kViewNow = 1'767'225'600'000;

// A worker of `node` that answered: `chips` chips at `duty` %, 8 of 32 GiB HBM each,
// held by pid 100+worker of job j1 run by alice; host CPU `cpu` %.
WorkerMetrics Answered(const std::string& node, int worker, double duty, double cpu,
                       Verdict verdict = Verdict::kBusy, int chips = 4) {
  WorkerMetrics w;
  w.target.node = node;
  w.target.worker = worker;
  w.target.name = node + "/w" + std::to_string(worker);
  MetricsReport r;
  r.sample.time_unix_ms = kViewNow;
  for (int c = 0; c < chips; ++c) {
    ChipSample chip;
    chip.index = c;
    chip.kind = "tpu";
    chip.device = "/dev/accel" + std::to_string(c);
    chip.duty_cycle_percent = duty;
    chip.hbm_used_bytes = 8 * kGib;
    chip.hbm_total_bytes = 32 * kGib;
    chip.holders.push_back({100 + worker, "alice", "python3 train.py", "j1"});
    r.sample.chips.push_back(chip);
  }
  r.sample.host.cpus = 240;
  r.sample.host.cpu_percent = cpu;
  r.sample.host.memory_used_bytes = 100 * kGib;
  r.sample.host.memory_total_bytes = 400 * kGib;
  r.sample.jobs.push_back({"j1", "alice", cpu, 24000, 50, kGib});
  for (int i = 0; i < 40; ++i) {
    HistoryPoint p;
    p.time_unix_ms = kViewNow - (40 - i) * 1000;
    p.duty_cycle_percent = i < 20 ? 0 : duty;
    p.cpu_percent = cpu;
    r.history.push_back(p);
  }
  w.report = r;
  w.diagnosis.verdict = verdict;
  w.diagnosis.detail = std::string(VerdictName(verdict)) + ": the numbers";
  return w;
}

WorkerMetrics Unanswered(const std::string& node, int worker) {
  WorkerMetrics w;
  w.target.node = node;
  w.target.worker = worker;
  w.target.name = node + "/w" + std::to_string(worker);
  w.status = UnavailableError(w.target.name + ": connect to 198.18.0.5 port 22: No route to host");
  w.diagnosis = {Verdict::kUnknown, w.status.message(), std::nullopt};
  return w;
}

// A round: the workers, grouped by node in order (as JudgeFleet groups them), with one
// job j1 on pod; the node's and job's verdicts given.
FleetMetrics Fleet(std::vector<WorkerMetrics> workers, Verdict pod = Verdict::kBusy) {
  FleetMetrics f;
  f.now_unix_ms = kViewNow;
  f.workers = std::move(workers);
  for (size_t i = 0; i < f.workers.size(); ++i) {
    const std::string& node = f.workers[i].target.node;
    if (f.nodes.empty() || f.nodes.back().name != node) {
      f.nodes.push_back({node, node, "", {}, {}});
    }
    f.nodes.back().workers.push_back(i);
    if (node == "pod") {
      if (f.jobs.empty()) {
        f.jobs.push_back({"j1", "pod", "alice", {}, {}});
      }
      f.jobs[0].workers.push_back(i);
    }
  }
  for (GroupMetrics& g : f.nodes) {
    g.diagnosis.verdict = g.name == "pod" ? pod : Verdict::kBusy;
  }
  if (!f.jobs.empty()) {
    f.jobs[0].diagnosis = {pod, std::string(VerdictName(pod)) + ": w2 at 10 %", 2};
  }
  return f;
}

std::vector<std::string> Names(const std::vector<TopRow>& rows) {
  std::vector<std::string> out;
  for (const TopRow& r : rows) {
    out.push_back(r.node + "/" + r.worker);
  }
  return out;
}

TEST(TopBlocks, EightLevelsFromZeroToFullAndAMarkForNoNumber) {
  EXPECT_EQ(Blocks({0.0, 1.0, 12.5, 50.0, 60.0, 100.0, 250.0, std::nullopt}), " ▁▁▄▅██?");
  EXPECT_EQ(Blocks({std::nullopt}, " "), " ");
  EXPECT_EQ(DisplayWidth(Blocks({10.0, 20.0, 30.0})), 3u);
}

TEST(TopBlocks, ResampleAveragesEachShareAndKeepsGaps) {
  std::vector<std::optional<double>> v = {0.0, 100.0, std::nullopt, std::nullopt, 50.0, 70.0};
  std::vector<std::optional<double>> r = Resample(v, 3);
  ASSERT_EQ(r.size(), 3u);
  EXPECT_EQ(r[0], 50.0);
  EXPECT_EQ(r[1], std::nullopt);
  EXPECT_EQ(r[2], 60.0);
  EXPECT_EQ(Resample(v, 10).size(), v.size());  // fewer values than points: as they are
}

TEST(TopWidth, FitCutsWholeCodePointsAndMarksTheCut) {
  EXPECT_EQ(FitWidth("abcdef", 6), "abcdef");
  EXPECT_EQ(FitWidth("abcdef", 4), "abc…");
  EXPECT_EQ(FitWidth("▁▂▃▄▅", 3), "▁▂…");
  EXPECT_EQ(DisplayWidth(FitWidth("▁▂▃▄▅", 3)), 3u);
}

TEST(TopRows, OneRowPerWorkerWithBarsHolderAndHost) {
  FleetMetrics f = Fleet({Answered("pod", 0, 60, 12), Answered("pod", 1, 60, 12)});
  TopViewOptions o;
  std::vector<TopRow> rows = TopRows(f, o);
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[0].holder, "pid 100 alice j1 python3 train.py");
  std::vector<std::string> lines = RenderTopTable(rows, o);
  ASSERT_EQ(lines.size(), 3u);
  EXPECT_EQ(lines[0].substr(0, 4), "NODE");
  EXPECT_NE(lines[1].find("pod   w0"), std::string::npos) << lines[1];
  EXPECT_NE(lines[1].find("busy"), std::string::npos);
  EXPECT_NE(lines[1].find("▅▅▅▅ 60%"), std::string::npos) << lines[1];      // 4 chips at 60 %
  EXPECT_NE(lines[1].find("▂▂▂▂ 32/128G"), std::string::npos) << lines[1];  // HBM 25 %
  EXPECT_NE(lines[1].find("12%"), std::string::npos);
  EXPECT_NE(lines[1].find("100/400G"), std::string::npos);
  EXPECT_EQ(lines[0].find("DUTY~"), std::string::npos);  // no history asked: no sparklines
}

TEST(TopRows, ChipsWithoutRuntimeMetricsShowAQuestionMark) {
  WorkerMetrics w = Answered("pod", 0, 60, 12);
  w.report->sample.chips[3].duty_cycle_percent.reset();
  std::vector<std::string> lines = RenderTopTable(TopRows(Fleet({w}), {}), {});
  EXPECT_NE(lines[1].find("▅▅▅? 60%"), std::string::npos) << lines[1];
}

TEST(TopRows, AWorkerThatDidNotAnswerKeepsItsRowSayingWhy) {
  FleetMetrics f = Fleet({Answered("pod", 0, 60, 12), Unanswered("pod", 1)});
  std::vector<std::string> lines = RenderTopTable(TopRows(f, {}), {});
  ASSERT_EQ(lines.size(), 3u);
  EXPECT_NE(lines[2].find("pod   w1"), std::string::npos) << lines[2];
  EXPECT_NE(lines[2].find("unknown"), std::string::npos);
  EXPECT_NE(lines[2].find("no answer: pod/w1: connect to 198.18.0.5 port 22: No route to host"),
            std::string::npos)
      << lines[2];
  std::vector<std::string> verdicts = RenderVerdictLines(f);
  ASSERT_FALSE(verdicts.empty());
  EXPECT_EQ(verdicts.back(),
            "pod/w1: no answer: pod/w1: connect to 198.18.0.5 port 22: No route to host");
}

TEST(TopRows, SortsByEachKeyHighestOrWorstFirst) {
  FleetMetrics f = Fleet({Answered("a", 0, 10, 90, Verdict::kInputBound), Answered("b", 0, 90, 10),
                          Unanswered("c", 0), Answered("d", 0, 50, 50, Verdict::kIdle)});
  f.workers[3].report->sample.chips[0].hbm_used_bytes = 30 * kGib;
  TopViewOptions o;
  EXPECT_EQ(Names(TopRows(f, o)), (std::vector<std::string>{"a/w0", "b/w0", "c/w0", "d/w0"}));
  o.sort = TopSort::kDuty;
  EXPECT_EQ(Names(TopRows(f, o)), (std::vector<std::string>{"b/w0", "d/w0", "a/w0", "c/w0"}));
  o.sort = TopSort::kCpu;
  EXPECT_EQ(Names(TopRows(f, o)), (std::vector<std::string>{"a/w0", "d/w0", "b/w0", "c/w0"}));
  o.sort = TopSort::kHbm;
  EXPECT_EQ(Names(TopRows(f, o))[0], "d/w0");
  o.sort = TopSort::kVerdict;
  EXPECT_EQ(Names(TopRows(f, o)), (std::vector<std::string>{"a/w0", "c/w0", "d/w0", "b/w0"}));
}

TEST(TopRows, SortNamesRoundTripAndCycle) {
  for (TopSort s :
       {TopSort::kName, TopSort::kDuty, TopSort::kHbm, TopSort::kCpu, TopSort::kVerdict}) {
    EXPECT_EQ(TopSortFromName(TopSortName(s)), s);
  }
  EXPECT_EQ(TopSortFromName("memory"), std::nullopt);
  EXPECT_EQ(NextSort(TopSort::kVerdict), TopSort::kName);
}

TEST(TopRows, FilterKeepsRowsWhoseTextHasItInAnyCase) {
  FleetMetrics f =
      Fleet({Answered("pod", 0, 60, 12), Answered("lab", 0, 5, 99, Verdict::kInputBound)});
  TopViewOptions o;
  o.filter = "INPUT";
  EXPECT_EQ(Names(TopRows(f, o)), std::vector<std::string>{"lab/w0"});
  o.filter = "pod/w0";
  EXPECT_EQ(Names(TopRows(f, o)), std::vector<std::string>{"pod/w0"});
  o.filter = "train.py";
  EXPECT_EQ(TopRows(f, o).size(), 2u);
  o.filter = "nothing like it";
  EXPECT_TRUE(TopRows(f, o).empty());
}

TEST(TopRows, FoldingMakesOneRowPerNodeAndTheLiveViewFoldsOnlyLargeNodes) {
  std::vector<WorkerMetrics> ws;
  for (int i = 0; i < 4; ++i) {
    ws.push_back(Answered("pod", i, i == 2 ? 10 : 60, 20));
  }
  for (int i = 0; i < 16; ++i) {
    ws.push_back(Answered("big", i, 80, 40));
  }
  ws.push_back(Unanswered("big", 16));
  FleetMetrics f = Fleet(ws, Verdict::kStraggler);
  TopViewOptions o;
  o.fold = TopFold::kAll;
  std::vector<TopRow> rows = TopRows(f, o);
  ASSERT_EQ(Names(rows), (std::vector<std::string>{"big/17 wkrs", "pod/4 wkrs"}));
  EXPECT_EQ(rows[1].verdict, Verdict::kStraggler);
  EXPECT_EQ(Blocks(rows[1].duty), "▅▅▁▅");  // one cell per worker: its mean duty
  EXPECT_EQ(rows[1].hbm_total_bytes, 16 * 32 * kGib);
  EXPECT_EQ(rows[1].holder, "jobs: j1 (alice)");
  EXPECT_EQ(rows[0].holder, "1 not answering; -");
  o.fold = TopFold::kLarge;
  EXPECT_EQ(TopRows(f, o).size(), 1u + 4u);  // big folded (17 > kFoldAbove), pod not
}

TEST(TopRows, SparklinesShowTheHistoryAndGoFirstWhenTheScreenIsNarrow) {
  FleetMetrics f = Fleet({Answered("pod", 0, 100, 50)});
  TopViewOptions o;
  o.sparklines = true;
  std::vector<std::string> lines = RenderTopTable(TopRows(f, o), o);
  EXPECT_NE(lines[0].find("DUTY~"), std::string::npos);
  // 40 points in 20 cells: the first half idle (blank), the second at 100 %.
  EXPECT_NE(lines[1].find(std::string(10, ' ') + "██████████"), std::string::npos) << lines[1];
  o.width = 80;
  lines = RenderTopTable(TopRows(f, o), o);
  EXPECT_EQ(lines[0].find("DUTY~"), std::string::npos) << lines[0];
  for (const std::string& l : lines) {
    EXPECT_LE(DisplayWidth(l), 80u) << l;
  }
  o.width = 200;
  lines = RenderTopTable(TopRows(f, o), o);
  EXPECT_NE(lines[0].find("DUTY~"), std::string::npos);
  EXPECT_NE(lines[1].find(std::string(10, ' ') + "██████████  "), std::string::npos) << lines[1];
  // 110 columns: the sparklines give up 5 points each (15 cells) so the holder has 12.
  o.width = 110;
  lines = RenderTopTable(TopRows(f, o), o);
  EXPECT_NE(lines[0].find("DUTY~"), std::string::npos) << lines[0];
  EXPECT_NE(lines[1].find(std::string(10, ' ') + "███████  "), std::string::npos) << lines[1];
  EXPECT_EQ(lines[1].find("████████"), std::string::npos) << lines[1];
  EXPECT_EQ(DisplayWidth(lines[1]), 110u) << lines[1];
}

TEST(TopRows, ANarrowScreenCutsTheHolderNotTheNumbers) {
  WorkerMetrics w = Answered("pod", 0, 60, 12);
  w.report->sample.chips[0].holders[0].command = "python3 " + std::string(200, 'x');
  TopViewOptions o;
  o.width = 100;
  std::vector<std::string> lines = RenderTopTable(TopRows(Fleet({w}), o), o);
  EXPECT_EQ(DisplayWidth(lines[1]), 100u);
  EXPECT_NE(lines[1].find("pid 100 alice j1 python3 xx"), std::string::npos);
  EXPECT_EQ(lines[1].substr(lines[1].size() - 3), "…");
}

TEST(TopRows, WhatAWorkerSentCannotDrawOnTheTerminal) {
  WorkerMetrics w = Answered("pod", 0, 60, 12);
  w.report->sample.chips[0].holders[0].command = "evil\x1b]0;title\x07";
  std::vector<std::string> lines = RenderTopTable(TopRows(Fleet({w}), {}), {});
  EXPECT_EQ(lines[1].find('\x1b'), std::string::npos) << lines[1];
}

TEST(TopVerdicts, SaysWhatNeedsAttentionInWords) {
  FleetMetrics f = Fleet({Answered("pod", 0, 60, 12), Answered("pod", 1, 60, 12),
                          Answered("pod", 2, 5, 99, Verdict::kInputBound),
                          Answered("pod", 3, 60, 12), Answered("lab", 0, 0, 1, Verdict::kIdle)},
                         Verdict::kStraggler);
  f.nodes[1].diagnosis = {Verdict::kIdle, "idle: nothing used it for 12m", std::nullopt};
  EXPECT_EQ(RenderVerdictLines(f),
            (std::vector<std::string>{"job j1 (pod): straggler: w2 at 10 %",
                                      "node lab: idle: nothing used it for 12m",
                                      "pod/w2: input-bound: the numbers"}));
}

TEST(TopJson, NodesWorkersReportsVerdictsJobsAndErrors) {
  FleetMetrics f = Fleet({Answered("pod", 0, 60, 12), Unanswered("pod", 1)}, Verdict::kStraggler);
  nlohmann::json doc = nlohmann::json::parse(TopJson(f));
  EXPECT_EQ(doc["time_unix_ms"], kViewNow);
  ASSERT_EQ(doc["nodes"].size(), 1u);
  const nlohmann::json& node = doc["nodes"][0];
  EXPECT_EQ(node["name"], "pod");
  EXPECT_EQ(node["verdict"], "straggler");
  ASSERT_EQ(node["workers"].size(), 2u);
  EXPECT_EQ(node["workers"][0]["verdict"], "busy");
  EXPECT_EQ(node["workers"][0]["report"]["sample"]["chips"][0]["duty_cycle_percent"], 60.0);
  EXPECT_EQ(node["workers"][0]["report"]["sample"]["chips"][0]["holders"][0]["pid"], 100);
  EXPECT_FALSE(node["workers"][0].contains("error"));
  EXPECT_EQ(node["workers"][1]["verdict"], "unknown");
  EXPECT_FALSE(node["workers"][1].contains("report"));
  EXPECT_EQ(node["workers"][1]["error"], "pod/w1: connect to 198.18.0.5 port 22: No route to host");
  ASSERT_EQ(doc["jobs"].size(), 1u);
  EXPECT_EQ(doc["jobs"][0]["id"], "j1");
  EXPECT_EQ(doc["jobs"][0]["verdict"], "straggler");
  EXPECT_EQ(doc["jobs"][0]["worker"], 2);
  EXPECT_EQ(doc["jobs"][0]["workers"], nlohmann::json::array({0, 1}));
}

}  // namespace
}  // namespace tpufleet::cli
