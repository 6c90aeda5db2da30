// The metrics op and `sample` through the real binary: serve samples every 200 ms, and
// real jobs' processes are what it measures.
#include <gtest/gtest.h>

#include <netinet/in.h>
#include <sys/resource.h>
#include <sys/socket.h>

#include <fstream>

#include "agent/host/plain_http.h"
#include "agent/host/testing/fake_host.h"
#include "agent/running_agent.h"
#include "api/metrics.h"
#include "tpu_metrics/runtime_metrics_server.h"
#include "util/subprocess.h"

namespace tpufleet::agent {
namespace {

api::MetricsReport Metrics(const RunningAgent& agent, int history_seconds = 0) {
  api::AgentRequest r;
  r.op = api::AgentOp::kMetrics;
  r.metrics.history_seconds = history_seconds;
  api::AgentAnswer a = agent.Ask(r);
  EXPECT_TRUE(a.status.ok()) << a.status.ToString();
  const auto* report = std::get_if<api::MetricsReport>(&a.body);
  return report != nullptr ? *report : api::MetricsReport{};
}

const JobSample* JobIn(const api::MetricsReport& r, const std::string& id) {
  for (const JobSample& j : r.sample.jobs) {
    if (j.id == id) {
      return &j;
    }
  }
  return nullptr;
}

TEST(AgentMetrics, ABusyLoopIsOneSaturatedThreadOnItsOneCpu) {
  RunningAgent agent({"--sample-interval", "200"});
  // Pinned to CPU 0: its limit is one CPU, whatever the machine has.
  api::JobSpec spec = RunningAgent::Job("jbusyaaa", "taskset -c 0 sh -c 'while :; do :; done'");
  ASSERT_TRUE(agent.StartJob(spec).status.ok());
  api::JobOnWorker running =
      agent.WaitFor("jbusyaaa", [](const api::JobOnWorker& j) { return j.state == JobState::kRunning; });
  // Other programs share this machine: as root the loop is made the first in line for
  // its CPU, so that it gets the whole of it (nice -20, for its session's autogroup too:
  // with autogroups a nice value counts only within the session).
  bool favoured = setpriority(PRIO_PROCESS, static_cast<id_t>(running.pid), -20) == 0;
  if (std::ofstream autogroup("/proc/" + std::to_string(running.pid) + "/autogroup");
      autogroup.is_open()) {
    autogroup << "-20\n";
    favoured = favoured && autogroup.flush().good();
  }

  // A thread's busy share counts the time it waited for its CPU too, while the job's CPU
  // counts only the time it ran: on a loaded machine (CI runs other suites beside this
  // one) a sample can find the loop waiting. The loop looks for a sample in which it ran.
  auto ran_throughout = [](const JobSample* j) {
    return j != nullptr && j->busiest_thread_percent >= 90 &&
           j->cpu_percent >= j->busiest_thread_percent - 15;
  };
  const JobSample* busy = nullptr;
  api::MetricsReport r;
  for (int i = 0; i < 150 && !ran_throughout(busy); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    r = Metrics(agent);
    busy = JobIn(r, "jbusyaaa");
  }
  ASSERT_NE(busy, nullptr) << api::ToJson(r);
  EXPECT_EQ(busy->user, running.user);
  EXPECT_EQ(busy->cpu_limit_percent, 100);
  EXPECT_LE(busy->busiest_thread_percent, 100);
  // One thread: the job's CPU is at most its busiest thread's (within a sample's
  // rounding), and the same when it ran the whole sample.
  EXPECT_LE(busy->cpu_percent, busy->busiest_thread_percent + 15) << api::ToJson(r);
  if (favoured) {
    EXPECT_TRUE(ran_throughout(busy)) << api::ToJson(r);
  }
  EXPECT_GT(busy->memory_bytes, 0);
  EXPECT_LT(busy->memory_bytes, int64_t{64} << 20);
  EXPECT_EQ(r.sample.host.cpus, static_cast<int>(sysconf(_SC_NPROCESSORS_ONLN)));
  EXPECT_GT(r.sample.host.memory_total_bytes, r.sample.host.memory_used_bytes);
  EXPECT_TRUE(r.sample.host.net_rx_bytes_per_second.has_value());

  // The window summarizes the samples of the last minute; the history has a point a
  // second.
  api::MetricsReport h;
  for (int i = 0; i < 50 && h.window.samples <= 10; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    h = Metrics(agent, 10);
  }
  EXPECT_GT(h.window.samples, 10);
  EXPECT_EQ(h.step_seconds, 1);
  ASSERT_GE(h.history.size(), 2u);
  EXPECT_TRUE(h.history.back().cpu_percent.has_value());
  EXPECT_GT(h.history.back().time_unix_ms, h.history.front().time_unix_ms);
  EXPECT_EQ(h.window.idle_since_unix_ms, 0);  // a running job uses the worker
}

TEST(AgentMetrics, AJobsMemoryIsItsProcessesResidentBytes) {
  RunningAgent agent({"--sample-interval", "200"});
  api::AgentAnswer started = agent.StartJob(RunningAgent::Job(
      "jmemorya", "/usr/bin/python3 -c 'import time; x = bytearray(96 << 20); "
                   "time.sleep(600)' & wait"));
  ASSERT_TRUE(started.status.ok()) << started.status.ToString();
  const JobSample* job = nullptr;
  api::MetricsReport r;
  for (int i = 0; i < 100 && (job == nullptr || job->memory_bytes < (int64_t{96} << 20)); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    r = Metrics(agent);
    job = JobIn(r, "jmemorya");
  }
  ASSERT_NE(job, nullptr) << api::ToJson(r);
  // Python's own few MiB besides the 96 MiB, in two processes (bash and python).
  EXPECT_GE(job->memory_bytes, int64_t{96} << 20);
  EXPECT_LT(job->memory_bytes, int64_t{160} << 20);
  EXPECT_EQ(job->cpu_limit_percent, 100.0 * static_cast<double>(sysconf(_SC_NPROCESSORS_ONLN)));
}

TEST(AgentMetrics, AChipsHolderJobAndTheRuntimeMetricsOnTheJobsPort) {
  // Two v4 chips under a host root of their own; the job holds accel1 open, and "its
  // libtpu" (this test's server) serves on the port its TPU_RUNTIME_METRICS_PORTS names.
  host::testing::FakeHost host;
  host.AddPci("0000:00:04.0", "0x005e");
  host.AddPci("0000:00:05.0", "0x005e");
  host.AddNode("accel0");
  host.AddNode("accel1");
  for (const std::string& p : {std::string(), std::string("dev")}) {
    chmod(host.dir().Path(p).c_str(), 0755);
  }
  chmod(host.dir().Path("dev/accel1").c_str(), 0666);
  tpu_metrics::RuntimeMetricsServerOptions served;
  served.port = 0;
  served.metrics = [] {
    // Device 1: duty 60 %, HBM 12 of 32 GiB, no bandwidth or idle time, 4 queued.
    return std::vector<tpu_metrics::RuntimeChipMetrics>{
        {1, 60, int64_t{12} << 30, int64_t{32} << 30, std::nullopt, std::nullopt, 4}};
  };
  Result<std::unique_ptr<tpu_metrics::RuntimeMetricsServer>> libtpu =
      tpu_metrics::RuntimeMetricsServer::Start(served);
  ASSERT_TRUE(libtpu.ok()) << libtpu.status().ToString();
  const int port = (*libtpu)->port();

  RunningAgent agent({"--sample-interval", "200", "--host-root", host.dir().path()});
  const std::string accel1 = host.dir().Path("dev/accel1");
  api::JobSpec spec = RunningAgent::Job("jchipaaa", "exec 3<" + accel1 + "; exec sleep 600");
  spec.env["TPU_RUNTIME_METRICS_PORTS"] = std::to_string(port);
  ASSERT_TRUE(agent.StartJob(spec).status.ok());

  api::MetricsReport r;
  auto ready = [&] {
    return r.sample.chips.size() == 2 && r.sample.chips[1].port.has_value() &&
           !r.sample.chips[1].holders.empty();
  };
  for (int i = 0; i < 100 && !ready(); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    r = Metrics(agent);
  }
  ASSERT_TRUE(ready()) << api::ToJson(r);
  const ChipSample& chip = r.sample.chips[1];
  EXPECT_EQ(chip.kind, "tpu");
  EXPECT_EQ(chip.device, accel1);
  EXPECT_EQ(chip.port, port);
  EXPECT_EQ(chip.duty_cycle_percent, 60);
  EXPECT_EQ(chip.hbm_used_bytes, int64_t{12} << 30);
  EXPECT_EQ(chip.hlo_queue, 4);
  EXPECT_EQ(chip.holders[0].job, "jchipaaa");
  EXPECT_EQ(chip.holders[0].command, "sleep 600");
  EXPECT_TRUE(r.sample.chips[0].holders.empty());
  EXPECT_FALSE(r.sample.chips[0].duty_cycle_percent.has_value());
}

TEST(AgentMetrics, AGpusHolderIsNamedWithItsJob) {
  // The stand-in libnvidia-ml reads its GPUs from the file $TPUFLEET_NVML_STANDIN names
  // when serve loads it; serve is started again once the job's pid is known (the job
  // goes on, and the new serve adopts it). The numbers: nvml_serve_test.cc.
  TempDir dir;
  const std::string facts = dir.Path("gpus");
  setenv("TPUFLEET_NVML_STANDIN", facts.c_str(), 1);
  struct Unset {
    ~Unset() { unsetenv("TPUFLEET_NVML_STANDIN"); }  // also when the test fails half way
  } unset;
  RunningAgent agent({"--sample-interval", "200", "--nvml", NVML_STANDIN});
  ASSERT_TRUE(agent.StartJob(RunningAgent::Job("jgpuaaaa", "exec sleep 600")).status.ok());
  api::JobOnWorker running =
      agent.WaitFor("jgpuaaaa", [](const api::JobOnWorker& j) { return j.state == JobState::kRunning; });
  agent.Stop();
  dir.Write("gpus", "gpu 70 20 1000 8000 3 " + std::to_string(running.pid) + "\n");
  agent.Start();

  api::MetricsReport r;
  auto ready = [&] { return !r.sample.chips.empty() && !r.sample.chips[0].holders.empty() && !r.sample.jobs.empty(); };
  for (int i = 0; i < 100 && !ready(); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    r = Metrics(agent);
  }
  ASSERT_TRUE(ready()) << api::ToJson(r);
  const ChipSample& gpu = r.sample.chips[0];
  EXPECT_EQ(gpu.device, "/dev/nvidia3");
  EXPECT_EQ(gpu.holders[0].pid, running.pid);
  EXPECT_EQ(gpu.holders[0].job, "jgpuaaaa");
  EXPECT_EQ(gpu.holders[0].user, running.user);
  EXPECT_EQ(gpu.holders[0].command, "sleep 600");
}

// A port nothing listens on now (the kernel's pick for port 0, let go).
int FreePort() {
  UniqueFd fd(socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof a;
  if (bind(fd.get(), reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 ||
      getsockname(fd.get(), reinterpret_cast<sockaddr*>(&a), &len) != 0) {
    return 0;
  }
  return ntohs(a.sin_port);
}

TEST(AgentMetrics, PrometheusReadsTheLatestSampleOverHttp) {
  const int port = FreePort();
  ASSERT_GT(port, 0);
  RunningAgent agent({"--sample-interval", "200", "--prometheus", "127.0.0.1:" + std::to_string(port)});
  ASSERT_TRUE(agent.StartJob(RunningAgent::Job("jsleepaa", "sleep 600")).status.ok());
  host::PlainHttpClient http;
  HttpRequest get;
  get.url = "http://127.0.0.1:" + std::to_string(port) + "/metrics";
  get.timeout = std::chrono::seconds(5);
  std::string text;
  for (int i = 0; i < 100 && text.find("tpufleet_job_memory_bytes{job_id=\"jsleepaa\"") == std::string::npos; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    Result<HttpResponse> got = http.Send(get);
    ASSERT_TRUE(got.ok()) << got.status().ToString();
    EXPECT_EQ(got->status, 200);
    text = got->body;
  }
  EXPECT_NE(text.find("tpufleet_job_memory_bytes{job_id=\"jsleepaa\""), std::string::npos) << text;
  EXPECT_NE(text.find("\ntpufleet_host_cpus " + std::to_string(sysconf(_SC_NPROCESSORS_ONLN)) + "\n"),
            std::string::npos)
      << text;

  // An address it cannot listen on: serve says so and exits.
  Result<ProgramResult> bad =
      RunSubprocess({TPUFLEET_AGENT_BINARY, "serve", "--socket", agent.dir().Path("other/agent.sock"),
                     "--state-dir", agent.dir().Path("other-state"), "--prometheus", "nowhere:1"},
                    "", std::chrono::seconds(10), SpawnOptions{});
  ASSERT_TRUE(bad.ok());
  EXPECT_EQ(bad->exit_code, 1);
  EXPECT_NE(bad->output.find("tpufleet-agent: --prometheus: "), std::string::npos) << bad->output;
}

TEST(AgentSample, TwoSamplesASecondApartAsTheMetricsOpsReport) {
  Result<ProgramResult> out = RunSubprocess({TPUFLEET_AGENT_BINARY, "sample", "--json"}, "",
                                            std::chrono::seconds(30), SpawnOptions{});
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  ASSERT_EQ(out->exit_code, 0) << out->output;
  Result<api::MetricsReport> r = api::ParseMetricsReport(out->output);
  ASSERT_TRUE(r.ok()) << r.status().ToString() << " in " << out->output;
  EXPECT_EQ(r->sample.host.cpus, static_cast<int>(sysconf(_SC_NPROCESSORS_ONLN)));
  EXPECT_GT(r->sample.host.memory_total_bytes, 0);
  // The second sample has rates against the first.
  EXPECT_TRUE(r->sample.host.disk_read_bytes_per_second.has_value()) << out->output;
  EXPECT_TRUE(r->sample.host.net_tx_bytes_per_second.has_value()) << out->output;
  EXPECT_EQ(r->window.samples, 2);

  Result<ProgramResult> text = RunSubprocess({TPUFLEET_AGENT_BINARY, "sample"}, "",
                                             std::chrono::seconds(30), SpawnOptions{});
  ASSERT_TRUE(text.ok());
  EXPECT_EQ(text->output.rfind("host: ", 0), 0u) << text->output;
  Result<ProgramResult> bad = RunSubprocess({TPUFLEET_AGENT_BINARY, "sample", "--yaml"}, "",
                                            std::chrono::seconds(30), SpawnOptions{});
  ASSERT_TRUE(bad.ok());
  EXPECT_EQ(bad->exit_code, 2);
  EXPECT_EQ(bad->output, "tpufleet-agent: usage: tpufleet-agent sample [--json]\n");
}

}  // namespace
}  // namespace tpufleet::agent
