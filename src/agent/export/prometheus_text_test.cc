#include "agent/export/prometheus_text.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <map>
#include <set>

#include "util/subprocess.h"

namespace tpufleet::agent::exporter {
namespace {

// A reader of the text format's rules (exposition_formats.md), stricter than a
// Prometheus where the agent should be: every family has one HELP and one TYPE line
// before its samples, its samples are together, no series twice, every line ends in \n.
struct Exposition {
  std::map<std::string, std::string> series;  // name{a="x",…} (values unescaped) -> value
  std::map<std::string, std::string> types;   // family -> its TYPE
  std::vector<std::string> errors;
};

bool IsName(std::string_view s, bool colon_ok) {
  if (s.empty() || (s[0] >= '0' && s[0] <= '9')) {
    return false;
  }
  for (char c : s) {
    bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '_' || (colon_ok && c == ':');
    if (!ok) {
      return false;
    }
  }
  return true;
}

bool IsNumber(const std::string& s) {
  if (s == "NaN" || s == "+Inf" || s == "-Inf") {
    return true;
  }
  char* end = nullptr;
  std::strtod(s.c_str(), &end);
  return !s.empty() && end == s.c_str() + s.size();
}

Exposition Check(std::string_view text) {
  Exposition e;
  auto error = [&](const std::string& line, const std::string& what) {
    e.errors.push_back(what + ": " + line);
  };
  if (!text.empty() && text.back() != '\n') {
    e.errors.push_back("the last line does not end in \\n");
  }
  std::set<std::string> helped, closed;
  std::string current;  // the family whose lines come now
  auto enter = [&](const std::string& family, const std::string& line) {
    if (family != current) {
      if (closed.count(family) != 0) {
        error(line, "family " + family + " is split");
      }
      closed.insert(current);
      current = family;
    }
  };
  size_t start = 0;
  while (start < text.size()) {
    size_t nl = text.find('\n', start);
    std::string line(text.substr(start, nl == std::string_view::npos ? nl : nl - start));
    start = nl == std::string_view::npos ? text.size() : nl + 1;
    if (line.empty()) {
      continue;
    }
    if (line.rfind("# HELP ", 0) == 0 || line.rfind("# TYPE ", 0) == 0) {
      std::string rest = line.substr(7);
      std::string name = rest.substr(0, rest.find(' '));
      std::string arg = rest.find(' ') == std::string::npos ? "" : rest.substr(rest.find(' ') + 1);
      if (!IsName(name, true)) {
        error(line, "bad metric name");
      }
      enter(name, line);
      bool help = line[2] == 'H';
      if (help && !helped.insert(name).second) {
        error(line, "second HELP");
      }
      if (help) {
        for (size_t i = 0; i < arg.size(); ++i) {
          if (arg[i] == '\\' && (i + 1 == arg.size() || (arg[i + 1] != '\\' && arg[i + 1] != 'n'))) {
            error(line, "bad escape in HELP");
          }
          i += arg[i] == '\\' ? 1 : 0;
        }
      } else {
        if (e.types.count(name) != 0) {
          error(line, "second TYPE");
        }
        if (arg != "gauge" && arg != "counter" && arg != "untyped" && arg != "summary" &&
            arg != "histogram") {
          error(line, "bad TYPE");
        }
        e.types[name] = arg;
      }
      continue;
    }
    if (line[0] == '#') {
      continue;
    }
    size_t i = 0;
    while (i < line.size() && line[i] != '{' && line[i] != ' ') {
      ++i;
    }
    std::string name = line.substr(0, i);
    if (!IsName(name, true)) {
      error(line, "bad metric name");
    }
    enter(name, line);
    if (e.types.count(name) == 0) {
      error(line, "sample before its TYPE");
    }
    std::string key = name + "{";
    if (i < line.size() && line[i] == '{') {
      ++i;
      bool first = true;
      while (i < line.size() && line[i] != '}') {
        size_t eq = line.find('=', i);
        if (eq == std::string::npos || !IsName(line.substr(i, eq - i), false) ||
            eq + 1 >= line.size() || line[eq + 1] != '"') {
          error(line, "bad label");
          break;
        }
        std::string label = line.substr(i, eq - i), value;
        size_t j = eq + 2;
        for (; j < line.size() && line[j] != '"'; ++j) {
          if (line[j] == '\\') {
            char n = j + 1 < line.size() ? line[j + 1] : '\0';
            if (n != '\\' && n != '"' && n != 'n') {
              error(line, "bad escape in a label value");
            }
            value += n == 'n' ? '\n' : n;
            ++j;
          } else {
            value += line[j];
          }
        }
        if (j >= line.size()) {
          error(line, "unterminated label value");
          break;
        }
        key += (first ? "" : ",") + label + "=\"" + value + "\"";
        first = false;
        i = j + 1;
        if (i < line.size() && line[i] == ',') {
          ++i;
        }
      }
      ++i;  // the }
    }
    key += "}";
    if (i >= line.size() || line[i] != ' ') {
      error(line, "no value");
      continue;
    }
    std::string value = line.substr(i + 1);
    if (size_t sp = value.find(' '); sp != std::string::npos) {
      value = value.substr(0, sp);  // a timestamp may follow
    }
    if (!IsNumber(value)) {
      error(line, "bad value");
    }
    if (!e.series.emplace(key, value).second) {
      error(line, "series written twice");
    }
  }
  return e;
}

MetricsReport Report() {
  MetricsReport r;
  r.sample.time_unix_ms = 1'700'000'100'000;
  ChipSample busy;
  busy.kind = "tpu";
  busy.device = "/dev/accel0";
  busy.holders = {{4242, "alice", "python3 train.py", "j-1"}};
  busy.duty_cycle_percent = 60.5;
  busy.hbm_used_bytes = 17'179'869'184;
  busy.hbm_total_bytes = 34'359'738'368;
  busy.hbm_bandwidth_percent = 12.25;
  busy.idle_seconds = 0.001;
  busy.hlo_queue = 3;
  busy.port = 8431;
  ChipSample quiet;
  quiet.index = 1;
  quiet.kind = "tpu";
  quiet.device = "/dev/accel1";
  quiet.hbm_total_bytes = 34'359'738'368;  // no job serves its runtime metrics
  r.sample.chips = {busy, quiet};
  r.sample.host.cpus = 96;
  r.sample.host.cpu_percent = 87.5;
  r.sample.host.memory_used_bytes = 100'000'000'000;
  r.sample.host.memory_total_bytes = 400'000'000'000;
  r.sample.host.logins = 2;
  r.sample.host.net_rx_bytes_per_second = 1.5e6;
  r.sample.jobs = {{"j-1", "alice", 750, 800, 99.5, 5'000'000'000},
                   {"weird\"job\\\n", "bob", 0, 100, 0, 1}};
  r.window.idle_since_unix_ms = 1'700'000'040'000;
  return r;
}

TEST(PrometheusText, EveryMeasurementUnderItsNameAndLabels) {
  std::string text = PrometheusText(Report());
  Exposition e = Check(text);
  EXPECT_TRUE(e.errors.empty()) << ::testing::PrintToString(e.errors) << "\n" << text;
  const std::string chip0 = R"({chip="0",kind="tpu",device="/dev/accel0",job_id="j-1",user="alice"})";
  const std::string chip1 = R"({chip="1",kind="tpu",device="/dev/accel1",job_id="",user=""})";
  std::map<std::string, std::string> want = {
      {"tpufleet_chip_duty_cycle_percent" + chip0, "60.5"},
      {"tpufleet_chip_hbm_used_bytes" + chip0, "17179869184"},
      {"tpufleet_chip_hbm_total_bytes" + chip0, "34359738368"},
      {"tpufleet_chip_hbm_total_bytes" + chip1, "34359738368"},
      {"tpufleet_chip_hbm_bandwidth_percent" + chip0, "12.25"},
      {"tpufleet_chip_idle_seconds" + chip0, "0.001"},
      {"tpufleet_chip_hlo_queue" + chip0, "3"},
      {"tpufleet_host_cpus{}", "96"},
      {"tpufleet_host_cpu_percent{}", "87.5"},
      {"tpufleet_host_memory_used_bytes{}", "100000000000"},
      {"tpufleet_host_memory_total_bytes{}", "400000000000"},
      {"tpufleet_host_logins{}", "2"},
      {"tpufleet_host_net_rx_bytes_per_second{}", "1500000"},
      {R"(tpufleet_job_cpu_percent{job_id="j-1",user="alice"})", "750"},
      {R"(tpufleet_job_cpu_limit_percent{job_id="j-1",user="alice"})", "800"},
      {R"(tpufleet_job_busiest_thread_percent{job_id="j-1",user="alice"})", "99.5"},
      {R"(tpufleet_job_memory_bytes{job_id="j-1",user="alice"})", "5000000000"},
      {"tpufleet_job_cpu_percent{job_id=\"weird\"job\\\n\",user=\"bob\"}", "0"},
      {"tpufleet_job_cpu_limit_percent{job_id=\"weird\"job\\\n\",user=\"bob\"}", "100"},
      {"tpufleet_job_busiest_thread_percent{job_id=\"weird\"job\\\n\",user=\"bob\"}", "0"},
      {"tpufleet_job_memory_bytes{job_id=\"weird\"job\\\n\",user=\"bob\"}", "1"},
      {"tpufleet_worker_idle_seconds{}", "60"},
  };
  EXPECT_EQ(e.series, want);
  for (const auto& [family, type] : e.types) {
    EXPECT_EQ(type, "gauge") << family;
  }
  // What was not measured is not written, not even its HELP: chip 1 has no duty cycle,
  // no chip a disk rate.
  EXPECT_EQ(text.find("tpufleet_host_disk_read_bytes_per_second"), std::string::npos);
  EXPECT_NE(text.find("# HELP tpufleet_chip_duty_cycle_percent Share of the last period"),
            std::string::npos);
  EXPECT_NE(text.find("# TYPE tpufleet_chip_duty_cycle_percent gauge\n"), std::string::npos);
  // The raw line, escapes and all.
  EXPECT_NE(text.find("tpufleet_job_memory_bytes{job_id=\"weird\\\"job\\\\\\n\",user=\"bob\"} 1\n"),
            std::string::npos)
      << text;
}

TEST(PrometheusText, NothingBeforeTheFirstSampleAndNoIdleWhileInUse) {
  EXPECT_EQ(PrometheusText(MetricsReport{}), "");
  MetricsReport r = Report();
  r.window.idle_since_unix_ms = 0;
  r.sample.chips.clear();
  r.sample.jobs.clear();
  Exposition e = Check(PrometheusText(r));
  EXPECT_TRUE(e.errors.empty()) << ::testing::PrintToString(e.errors);
  EXPECT_EQ(e.series.at("tpufleet_worker_idle_seconds{}"), "0");
  EXPECT_EQ(e.series.count(R"(tpufleet_job_cpu_percent{job_id="j-1",user="alice"})"), 0u);
  EXPECT_EQ(e.types.count("tpufleet_chip_hbm_total_bytes"), 0u);
}

TEST(PrometheusText, NumbersReadBackExactly) {
  MetricsReport r = Report();
  r.sample.chips.resize(1);
  r.sample.chips[0].duty_cycle_percent = 1.0 / 3;
  r.sample.chips[0].hbm_bandwidth_percent = std::numeric_limits<double>::quiet_NaN();
  r.sample.chips[0].idle_seconds = std::numeric_limits<double>::infinity();
  r.sample.chips[0].hbm_used_bytes = std::numeric_limits<int64_t>::max();
  Exposition e = Check(PrometheusText(r));
  EXPECT_TRUE(e.errors.empty()) << ::testing::PrintToString(e.errors);
  const std::string chip0 = R"({chip="0",kind="tpu",device="/dev/accel0",job_id="j-1",user="alice"})";
  EXPECT_EQ(std::strtod(e.series.at("tpufleet_chip_duty_cycle_percent" + chip0).c_str(), nullptr),
            1.0 / 3);
  EXPECT_EQ(e.series.at("tpufleet_chip_hbm_bandwidth_percent" + chip0), "NaN");
  EXPECT_EQ(e.series.at("tpufleet_chip_idle_seconds" + chip0), "+Inf");
  EXPECT_EQ(e.series.at("tpufleet_chip_hbm_used_bytes" + chip0), "9223372036854775807");
}

TEST(PrometheusText, LabelValuesAreEscapedAsTheFormatSays) {
  EXPECT_EQ(EscapeLabelValue("plain /dev/accel0"), "plain /dev/accel0");
  EXPECT_EQ(EscapeLabelValue("a\\b\"c\nd"), "a\\\\b\\\"c\\nd");
  EXPECT_EQ(EscapeLabelValue("tab\tand ünïcode"), "tab\tand ünïcode");  // kept as UTF-8
}

// The checker itself refuses what breaks the rules (a checker that passes all is no test).
TEST(PrometheusText, TheCheckerRefusesBrokenText) {
  EXPECT_TRUE(Check("# TYPE a gauge\na 1\n").errors.empty());
  EXPECT_FALSE(Check("a 1\n").errors.empty());                                 // no TYPE
  EXPECT_FALSE(Check("# TYPE a gauge\na 1").errors.empty());                   // no \n
  EXPECT_FALSE(Check("# TYPE a gauge\na{x=\"\\t\"} 1\n").errors.empty());      // bad escape
  EXPECT_FALSE(Check("# TYPE a gauge\na{x=\"1\"} 1\na{x=\"1\"} 2\n").errors.empty());
  EXPECT_FALSE(Check("# TYPE a gauge\n# TYPE b gauge\na 1\nb 1\na 2\n").errors.empty());
  EXPECT_FALSE(Check("# TYPE a gauge\na one\n").errors.empty());
  EXPECT_FALSE(Check("# TYPE 1a gauge\n1a 1\n").errors.empty());
}

// Prometheus' own checker, when the machine has it (Debian's prometheus package).
TEST(PrometheusText, PromtoolAcceptsIt) {
  const char* promtool = "/usr/bin/promtool";
  if (::access(promtool, X_OK) != 0) {
    GTEST_SKIP() << "no " << promtool << " (Debian's prometheus package)";
  }
  Result<ProgramResult> r = RunUserCommand({promtool, "check", "metrics"}, PrometheusText(Report()),
                                           std::chrono::seconds(30));
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->exit_code, 0) << r->output;
  r = RunUserCommand({promtool, "check", "metrics"}, "# TYPE a gauge\na{x=\"} 1\n",
                     std::chrono::seconds(30));
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_NE(r->exit_code, 0) << r->output;
}

}  // namespace
}  // namespace tpufleet::agent::exporter
