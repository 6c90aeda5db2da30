// The client against the server over real gRPC on loopback: the server uses local
// credentials as libtpu does, the client insecure ones as the static agent does. Also
// the raw service as tpu-info speaks it (local credentials on both ends), no server,
// a slow server, a server that starts late, and a port that is taken.
#include <arpa/inet.h>
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <thread>

#include "tpu_metrics/proto/tpu_metric_service.grpc.pb.h"
#include "tpu_metrics/runtime_metrics_client.h"
#include "tpu_metrics/runtime_metrics_server.h"
#include "util/subprocess.h"
#include "util/unique_fd.h"

namespace tpufleet::tpu_metrics {
namespace {

namespace pb = ::tpu::monitoring::runtime;
using std::chrono::milliseconds;

constexpr milliseconds kDeadline{5000};  // generous: the machine may be busy

std::vector<RuntimeChipMetrics> TwoChips() {
  RuntimeChipMetrics a;
  a.device_id = 0;
  a.duty_cycle_percent = 61.5;
  a.hbm_usage_bytes = int64_t{17} << 30;
  a.hbm_total_bytes = int64_t{32} << 30;
  a.hbm_bandwidth_percent = 40.25;
  a.idle_seconds = 3.5;
  a.hlo_queue = 5;
  RuntimeChipMetrics b = a;
  b.device_id = 3;
  b.duty_cycle_percent = 0;
  b.hlo_queue = 0;
  return {a, b};
}

std::unique_ptr<RuntimeMetricsServer> Serve(std::vector<RuntimeChipMetrics> chips,
                                            RuntimeMetricsServerOptions options = {}) {
  options.port = 0;
  options.metrics = [chips] { return chips; };
  Result<std::unique_ptr<RuntimeMetricsServer>> server = RuntimeMetricsServer::Start(options);
  EXPECT_TRUE(server.ok()) << server.status().ToString();
  return server.ok() ? std::move(*server) : nullptr;
}

// A loopback socket bound to a port the kernel picked and not listening: a connect to
// that port is refused for as long as it is held.
UniqueFd RefusingPort(int* port) {
  UniqueFd fd(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  EXPECT_EQ(::bind(fd.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
  socklen_t len = sizeof addr;
  ::getsockname(fd.get(), reinterpret_cast<sockaddr*>(&addr), &len);
  *port = ntohs(addr.sin_port);
  return fd;
}

TEST(RuntimeMetrics, TheInsecureClientReadsEverythingALocalCredentialsServerServes) {
  RuntimeMetricsServerOptions options;
  options.queue_cores = 2;  // 5 = 3 + 2: the client sums the cores of a device
  std::unique_ptr<RuntimeMetricsServer> server = Serve(TwoChips(), options);
  ASSERT_NE(server, nullptr);
  RuntimeMetricsClient client;
  Result<std::vector<RuntimeChipMetrics>> read = client.Read(server->port(), kDeadline);
  ASSERT_TRUE(read.ok()) << read.status().ToString();
  EXPECT_EQ(*read, TwoChips());
  // The channel is kept: a second read on it sees the same.
  read = client.Read(server->port(), kDeadline);
  ASSERT_TRUE(read.ok()) << read.status().ToString();
  EXPECT_EQ(*read, TwoChips());
}

TEST(RuntimeMetrics, TheQueuesDeviceOrdinalMayBeAnIntAsOlderLibtpuSendsIt) {
  RuntimeMetricsServerOptions options;
  options.int_device_ordinal = true;
  options.queue_cores = 3;
  std::unique_ptr<RuntimeMetricsServer> server = Serve(TwoChips(), options);
  ASSERT_NE(server, nullptr);
  RuntimeMetricsClient client;
  Result<std::vector<RuntimeChipMetrics>> read = client.Read(server->port(), kDeadline);
  ASSERT_TRUE(read.ok()) << read.status().ToString();
  ASSERT_EQ(read->size(), 2u);
  EXPECT_EQ((*read)[0].hlo_queue, 5);
  EXPECT_EQ((*read)[1].hlo_queue, 0);
}

TEST(RuntimeMetrics, WhatADeviceDoesNotReportStaysAbsent) {
  RuntimeChipMetrics only_duty;
  only_duty.device_id = 1;
  only_duty.duty_cycle_percent = 12;
  std::unique_ptr<RuntimeMetricsServer> server = Serve({only_duty});
  ASSERT_NE(server, nullptr);
  RuntimeMetricsClient client;
  Result<std::vector<RuntimeChipMetrics>> read = client.Read(server->port(), kDeadline);
  ASSERT_TRUE(read.ok()) << read.status().ToString();
  ASSERT_EQ(read->size(), 1u);
  EXPECT_EQ((*read)[0], only_duty);
  EXPECT_FALSE((*read)[0].hbm_total_bytes.has_value());
}

TEST(RuntimeMetrics, NoServerIsNoJobNotAFailure) {
  int port = 0;
  UniqueFd held = RefusingPort(&port);
  RuntimeMetricsClient client;
  Result<std::vector<RuntimeChipMetrics>> read = client.Read(port, kDeadline);
  ASSERT_FALSE(read.ok());
  EXPECT_EQ(read.status().code(), StatusCode::kUnavailable);
  EXPECT_EQ(read.status().message(),
            "no runtime metrics on port " + std::to_string(port) + " (no job using the TPU?)");
  EXPECT_EQ(client.Read(0, kDeadline).status().code(), StatusCode::kInvalidArgument);
}

TEST(RuntimeMetrics, AServerThatAnswersSlowlyMeetsTheDeadline) {
  RuntimeMetricsServerOptions options;
  options.port = 0;
  options.metrics = [] {
    std::this_thread::sleep_for(milliseconds(1500));
    return TwoChips();
  };
  Result<std::unique_ptr<RuntimeMetricsServer>> server = RuntimeMetricsServer::Start(options);
  ASSERT_TRUE(server.ok()) << server.status().ToString();
  RuntimeMetricsClient client;
  auto start = std::chrono::steady_clock::now();
  Result<std::vector<RuntimeChipMetrics>> read = client.Read((*server)->port(), milliseconds(300));
  auto took = std::chrono::steady_clock::now() - start;
  ASSERT_FALSE(read.ok());
  EXPECT_EQ(read.status().code(), StatusCode::kTimeout);
  EXPECT_EQ(read.status().message(), "the runtime metrics on port " +
                                         std::to_string((*server)->port()) +
                                         " did not answer within 300 ms");
  EXPECT_LT(took, milliseconds(1200));
}

TEST(RuntimeMetrics, AJobThatStartsLaterIsReadWithinTheReconnectBackoff) {
  int port = 0;
  {
    UniqueFd held = RefusingPort(&port);
  }
  RuntimeMetricsClient client;
  ASSERT_EQ(client.Read(port, kDeadline).status().code(), StatusCode::kUnavailable);
  RuntimeMetricsServerOptions options;
  options.port = port;
  options.metrics = TwoChips;
  Result<std::unique_ptr<RuntimeMetricsServer>> server = RuntimeMetricsServer::Start(options);
  ASSERT_TRUE(server.ok()) << server.status().ToString();
  auto start = std::chrono::steady_clock::now();
  Result<std::vector<RuntimeChipMetrics>> read = client.Read(port, kDeadline);
  while (!read.ok() && std::chrono::steady_clock::now() - start < 3 * kReconnectBackoff) {
    std::this_thread::sleep_for(milliseconds(100));
    read = client.Read(port, kDeadline);
  }
  ASSERT_TRUE(read.ok()) << read.status().ToString();
  EXPECT_EQ(*read, TwoChips());
}

TEST(RuntimeMetrics, ATakenPortIsRefusedWithOneClearMessage) {
  std::unique_ptr<RuntimeMetricsServer> first = Serve(TwoChips());
  ASSERT_NE(first, nullptr);
  RuntimeMetricsServerOptions options;
  options.port = first->port();
  options.metrics = TwoChips;
  Result<std::unique_ptr<RuntimeMetricsServer>> second = RuntimeMetricsServer::Start(options);
  ASSERT_FALSE(second.ok());
  EXPECT_EQ(second.status().code(), StatusCode::kUnavailable);
  EXPECT_EQ(second.status().message(),
            "127.0.0.1:" + std::to_string(first->port()) + " is in use (Address already in use)");
}

// The service as tpu-info calls it: local credentials on the client too (to an address:
// "localhost" would go through c-ares, whose resolver leaks a few bytes in gRPC 1.51).
TEST(RuntimeMetrics, TheServiceAnswersAsLibtpusDoesToALocalCredentialsClient) {
  RuntimeMetricsServerOptions options;
  std::unique_ptr<RuntimeMetricsServer> server = Serve(TwoChips(), options);
  ASSERT_NE(server, nullptr);
  auto stub = pb::RuntimeMetricService::NewStub(
      grpc::CreateChannel("ipv4:127.0.0.1:" + std::to_string(server->port()),
                          grpc::experimental::LocalCredentials(LOCAL_TCP)));
  {
    grpc::ClientContext context;
    pb::ListSupportedMetricsRequest request;
    request.set_filter("hbm\\.memory");
    pb::ListSupportedMetricsResponse response;
    ASSERT_TRUE(stub->ListSupportedMetrics(&context, request, &response).ok());
    ASSERT_EQ(response.supported_metric_size(), 2);
    EXPECT_EQ(response.supported_metric(0).metric_name(), kHbmUsage);
    EXPECT_EQ(response.supported_metric(1).metric_name(), kHbmTotal);
  }
  {
    grpc::ClientContext context;
    pb::MetricRequest request;
    request.set_metric_name(kHbmTotal);
    pb::MetricResponse response;
    ASSERT_TRUE(stub->GetRuntimeMetric(&context, request, &response).ok());
    EXPECT_EQ(response.metric().name(), kHbmTotal);
    ASSERT_EQ(response.metric().metrics_size(), 2);
    const pb::Metric& m = response.metric().metrics(1);
    EXPECT_EQ(m.attribute().key(), kDeviceIdKey);
    EXPECT_EQ(m.attribute().value().int_attr(), 3);
    EXPECT_EQ(m.gauge().as_int(), int64_t{32} << 30);
    EXPECT_GT(m.timestamp().seconds(), 0);
  }
  {
    grpc::ClientContext context;
    pb::MetricRequest request;
    request.set_metric_name("tpu.runtime.no.such.metric");
    pb::MetricResponse response;
    grpc::Status s = stub->GetRuntimeMetric(&context, request, &response);
    EXPECT_EQ(s.error_code(), grpc::StatusCode::NOT_FOUND);
    EXPECT_EQ(s.error_message(), "metric tpu.runtime.no.such.metric is not supported");
  }
}

#ifdef TPUFLEET_STATIC_PROBE
// The client as the agent has it (static, gRPC's unsecure build, another process)
// reads the server with local credentials: plaintext on the wire, from this host.
TEST(RuntimeMetrics, TheStaticUnsecureClientReadsALocalCredentialsServer) {
  RuntimeMetricsServerOptions options;
  options.queue_cores = 2;
  std::unique_ptr<RuntimeMetricsServer> server = Serve(TwoChips(), options);
  ASSERT_NE(server, nullptr);
  Result<ProgramResult> probe = RunUserCommand(
      {TPUFLEET_STATIC_PROBE, std::to_string(server->port())}, "", kDeadline * 2);
  ASSERT_TRUE(probe.ok()) << probe.status().ToString();
  EXPECT_EQ(probe->exit_code, 0) << probe->output;
  EXPECT_EQ(probe->output,
            "device=0 duty=61.500000 hbm=18253611008 total=34359738368 bandwidth=40.250000 "
            "idle=3.500000 queue=5\n"
            "device=3 duty=0.000000 hbm=18253611008 total=34359738368 bandwidth=40.250000 "
            "idle=3.500000 queue=0\n");
  int port = 0;
  UniqueFd held = RefusingPort(&port);
  probe = RunUserCommand({TPUFLEET_STATIC_PROBE, std::to_string(port)}, "", kDeadline * 2);
  ASSERT_TRUE(probe.ok()) << probe.status().ToString();
  EXPECT_EQ(probe->exit_code, 1);
  EXPECT_EQ(probe->output, "unavailable: no runtime metrics on port " + std::to_string(port) +
                               " (no job using the TPU?)\n");
}
#endif

TEST(RuntimeMetrics, PortsAreTheDefaultThenTheJobsEachOnce) {
  EXPECT_EQ(MetricsPorts(""), std::vector<int>({8431}));
  EXPECT_EQ(MetricsPorts("8431,8432, 8433,8434"), std::vector<int>({8431, 8432, 8433, 8434}));
  EXPECT_EQ(MetricsPorts("9000,x,0,70000,9000,,-1,8431"), std::vector<int>({8431, 9000}));
}

}  // namespace
}  // namespace tpufleet::tpu_metrics
