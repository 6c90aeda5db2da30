// The holder's wire protocol without a socket: a job crosses whole, and every malformed
// request, result, error or frame is a value, never a throw.
#include "ssh/holder_protocol.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace tpufleet {
namespace {

using std::chrono::milliseconds;

FanoutJob AJob() {
  FanoutJob job;
  FanoutHost h{.name = "pod/w3",
               .address = "10.0.0.3",
               .port = 2222,
               .user = "ada",
               .host_key = "ssh-ed25519 AAAAC3",
               .command = "echo ünïcode",
               .no_input = true,
               .unix_socket = "",
               .socket_input = ""};
  job.hosts = {h, h};
  job.hosts[1].command = "";
  job.hosts[1].no_input = false;
  job.hosts[1].unix_socket = "/run/tpufleet-agent/agent.sock";
  job.hosts[1].socket_input = "{\"op\":\"job.list\",\"worker\":1}\n";
  job.command = "uptime";
  job.key_path = "/k/id_ed25519";
  job.stdin_path = "/tmp/in";
  job.stdin_header = std::string("key\0bytes", 9);
  job.max_parallel = 7;
  job.connect_timeout = milliseconds(1500);
  job.command_timeout = milliseconds(0);
  job.input_stall_timeout = milliseconds(120000);
  job.fail_fast = true;
  job.hold_stdin = true;
  return job;
}

TEST(HolderProtocol, AJobCrossesWhole) {
  FanoutJob job = AJob();
  Result<std::string> bytes = EncodeHolderRequest(HolderRequest::Op::kRun, &job);
  ASSERT_TRUE(bytes.ok()) << bytes.status().ToString();
  // Not all there: no request yet, at any cut.
  for (size_t cut : {size_t{0}, size_t{3}, size_t{4}, bytes->size() - 1}) {
    auto partial = TakeHolderRequest(std::string_view(*bytes).substr(0, cut));
    ASSERT_TRUE(partial.ok()) << partial.status().ToString();
    EXPECT_FALSE(partial->has_value()) << cut;
  }
  auto request = TakeHolderRequest(*bytes);
  ASSERT_TRUE(request.ok()) << request.status().ToString();
  ASSERT_TRUE(request->has_value());
  const HolderRequest& r = **request;
  EXPECT_EQ(r.op, HolderRequest::Op::kRun);
  ASSERT_EQ(r.job.hosts.size(), 2u);
  EXPECT_EQ(r.job.hosts[0].name, "pod/w3");
  EXPECT_EQ(r.job.hosts[0].port, 2222);
  EXPECT_EQ(r.job.hosts[0].command, "echo ünïcode");
  EXPECT_TRUE(r.job.hosts[0].no_input);
  EXPECT_FALSE(r.job.hosts[1].no_input);
  EXPECT_EQ(r.job.hosts[0].unix_socket, "");
  EXPECT_EQ(r.job.hosts[1].unix_socket, "/run/tpufleet-agent/agent.sock");
  EXPECT_EQ(r.job.hosts[1].socket_input, job.hosts[1].socket_input);
  EXPECT_EQ(r.job.stdin_header, job.stdin_header);
  EXPECT_EQ(r.job.max_parallel, 7u);
  EXPECT_EQ(r.job.connect_timeout, milliseconds(1500));
  EXPECT_EQ(r.job.input_stall_timeout, milliseconds(120000));
  EXPECT_TRUE(r.job.fail_fast);
  EXPECT_TRUE(r.job.hold_stdin);

  for (auto op : {HolderRequest::Op::kStatus, HolderRequest::Op::kStop}) {
    auto simple = TakeHolderRequest(*EncodeHolderRequest(op));
    ASSERT_TRUE(simple.ok() && simple->has_value());
    EXPECT_EQ((*simple)->op, op);
  }
}

// A command that is not UTF-8 cannot cross as JSON unchanged: the client is told (and
// runs the job itself) instead of nlohmann throwing in the CLI.
TEST(HolderProtocol, AJobThatIsNotUtf8IsRefusedNotThrown) {
  FanoutJob job = AJob();
  job.command = "echo \xff\xfe";
  Result<std::string> bytes = EncodeHolderRequest(HolderRequest::Op::kRun, &job);
  EXPECT_EQ(bytes.status().code(), StatusCode::kInvalidArgument);
}

std::string Framed(const std::string& body) {
  uint32_t n = static_cast<uint32_t>(body.size());
  return std::string{static_cast<char>(n >> 24), static_cast<char>(n >> 16),
                     static_cast<char>(n >> 8), static_cast<char>(n)} +
         body;
}

TEST(HolderProtocol, AnAbsentInputStallTimeoutIsNoLimit) {
  auto r = TakeHolderRequest(Framed(
      R"({"op":"run","job":{"hosts":[],"command":"","key_path":"","stdin_path":"",)"
      R"("stdin_header":"","max_parallel":0,"connect_timeout_ms":0,"command_timeout_ms":0,)"
      R"("fail_fast":false,"hold_stdin":false,"a_field_of_later_versions":1}})"));
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ((*r)->job.input_stall_timeout, milliseconds(0));
}

TEST(HolderProtocol, ResultsAndErrorsCrossAndMalformedOnesAreSaidSo) {
  HostResult in{HostOutcome::kSignaled, 0, "TERM", "killed by SIGTERM"};
  HostResult out = DecodeHostResult(EncodeHostResult(in));
  EXPECT_EQ(out.outcome, HostOutcome::kSignaled);
  EXPECT_EQ(out.signal, "TERM");
  EXPECT_EQ(out.message, "killed by SIGTERM");
  for (std::string bad : {"", "[]", R"({"outcome":"exited"})", R"({"outcome":99})",
                          R"({"exit_code":1e300})", R"({"message":7})"}) {
    HostResult r = DecodeHostResult(bad);
    EXPECT_EQ(r.outcome, HostOutcome::kUnreachable) << bad;
    EXPECT_EQ(r.message, "the holder sent a malformed result") << bad;
  }
  Status error = DecodeHolderError(EncodeHolderError(NotFoundError("no such key")));
  EXPECT_EQ(error, NotFoundError("no such key"));
  for (std::string bad : {"", R"({"code":"3"})", R"({"code":0,"message":""})",
                          R"({"code":1000,"message":"x"})", R"({"code":2})"}) {
    EXPECT_EQ(DecodeHolderError(bad).code(), StatusCode::kInternal) << bad;
  }
  // A message that is not UTF-8 (a worker's error text) still encodes.
  EXPECT_FALSE(EncodeHostResult(HostResult{HostOutcome::kUnreachable, 0, "", "\xff"}).empty());
}

TEST(HolderProtocol, FramesAreTakenWholeAndAnOversizedOneIsRefused) {
  std::string buf;
  AppendHolderFrame(buf, HolderFrame::kStdout, 3, "out");
  AppendHolderFrame(buf, HolderFrame::kDone, 0, "");
  std::string more;
  AppendHolderFrame(more, HolderFrame::kStderr, 1, "partial");
  buf += more.substr(0, 10);
  std::vector<std::string> seen;
  ASSERT_TRUE(TakeHolderFrames(buf, [&](HolderFrame type, uint32_t host, std::string_view p) {
                seen.push_back(std::to_string(static_cast<int>(type)) + "/" +
                               std::to_string(host) + "/" + std::string(p));
              }).ok());
  EXPECT_EQ(seen, (std::vector<std::string>{"1/3/out", "4/0/"}));
  EXPECT_EQ(buf, more.substr(0, 10));  // the partial frame waits for the rest

  std::string huge = {1, 0, 0, 0, 0, '\x7f', '\xff', '\xff', '\xff'};
  EXPECT_FALSE(TakeHolderFrames(huge, [](HolderFrame, uint32_t, std::string_view) {}).ok());
}

}  // namespace
}  // namespace tpufleet
