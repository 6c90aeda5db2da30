// The real agent's notices: serve long-polls a real metadata server on loopback
// (agent/testing/metadata_stub.h) and answers notice and notice.watch with what it says,
// as soon as it says it; a server that goes away, comes back, stalls or floods is a
// notice of source "none" with its error, never a stuck or swollen agent.
#include <gtest/gtest.h>

#include <sys/socket.h>
#include <sys/un.h>

#include <chrono>
#include <functional>
#include <optional>
#include <thread>

#include "agent/running_agent.h"
#include "agent/testing/metadata_stub.h"
#include "util/subprocess.h"

namespace tpufleet::agent {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;
using std::chrono::steady_clock;
using testing::MetadataStub;

// A notice.watch held open on the agent's socket, as serve holds it (over `call`).
class NoticeStream {
 public:
  explicit NoticeStream(const RunningAgent& agent) {
    fd_ = UniqueFd(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    std::string path = agent.Socket();
    path.copy(addr.sun_path, sizeof addr.sun_path - 1);
    EXPECT_EQ(::connect(fd_.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
    api::AgentRequest r;
    r.op = api::AgentOp::kNoticeWatch;
    std::string line = api::ToLine(r) + "\n";
    EXPECT_EQ(::send(fd_.get(), line.data(), line.size(), MSG_NOSIGNAL),
              static_cast<ssize_t>(line.size()));
  }

  /// The next notice line within `within`; nullopt when none came.
  std::optional<api::AgentNotice> Next(milliseconds within) {
    steady_clock::time_point until = steady_clock::now() + within;
    while (true) {
      if (size_t nl = in_.find('\n'); nl != std::string::npos) {
        Result<api::AgentLine> line = api::ParseAgentLine(in_.substr(0, nl), api::AgentOp::kNoticeWatch);
        in_.erase(0, nl + 1);
        EXPECT_TRUE(line.ok()) << line.status().ToString();
        EXPECT_EQ(line->kind, api::AgentLine::Kind::kNotice);
        return line->notice;
      }
      auto left = std::chrono::duration_cast<milliseconds>(until - steady_clock::now());
      pollfd p = {fd_.get(), POLLIN, 0};
      if (left.count() <= 0 || ::poll(&p, 1, static_cast<int>(left.count())) <= 0) {
        return std::nullopt;
      }
      char buf[4096];
      ssize_t n = ::recv(fd_.get(), buf, sizeof buf, 0);
      if (n <= 0) {
        ADD_FAILURE() << "the agent ended notice.watch";
        return std::nullopt;
      }
      in_.append(buf, static_cast<size_t>(n));
    }
  }

  /// Reads lines until one `wanted` accepts, for at most `within`; that line.
  std::optional<api::AgentNotice> Until(const std::function<bool(const api::AgentNotice&)>& wanted,
                                        milliseconds within) {
    steady_clock::time_point until = steady_clock::now() + within;
    while (steady_clock::now() < until) {
      std::optional<api::AgentNotice> n =
          Next(std::chrono::duration_cast<milliseconds>(until - steady_clock::now()));
      if (n && wanted(*n)) {
        return n;
      }
    }
    return std::nullopt;
  }

 private:
  UniqueFd fd_;
  std::string in_;
};

api::AgentNotice AskNotice(const RunningAgent& agent) {
  api::AgentRequest r;
  r.op = api::AgentOp::kNotice;
  api::AgentAnswer a = agent.Ask(r);
  EXPECT_TRUE(a.status.ok()) << a.status.ToString();
  const auto* notice = std::get_if<api::AgentNotice>(&a.body);
  return notice != nullptr ? *notice : api::AgentNotice{};
}

bool FromMetadata(const api::AgentNotice& n) { return n.source == "metadata"; }

TEST(AgentNotice, PreemptionAndMaintenanceReachAWatcherWithinASecond) {
  MetadataStub metadata;
  RunningAgent agent({"--metadata", metadata.address()});
  NoticeStream watch(agent);
  std::optional<api::AgentNotice> first = watch.Until(FromMetadata, seconds(10));
  ASSERT_TRUE(first.has_value());
  EXPECT_FALSE(first->preempted);
  EXPECT_EQ(first->maintenance_event, "NONE");
  EXPECT_EQ(first->error, "");
  EXPECT_GT(first->changed_unix_ms, 0);
  EXPECT_EQ(AskNotice(agent), *first);

  std::this_thread::sleep_for(milliseconds(300));  // the long-polls are parked now
  steady_clock::time_point set = steady_clock::now();
  metadata.Set("preempted", "TRUE");
  std::optional<api::AgentNotice> preempted =
      watch.Until([](const api::AgentNotice& n) { return n.preempted; }, seconds(5));
  ASSERT_TRUE(preempted.has_value());
  EXPECT_LT(steady_clock::now() - set, seconds(1));
  EXPECT_EQ(preempted->source, "metadata");
  EXPECT_GE(preempted->changed_unix_ms, first->changed_unix_ms);
  EXPECT_TRUE(AskNotice(agent).preempted);

  set = steady_clock::now();
  metadata.Set("maintenance-event", "TERMINATE_ON_HOST_MAINTENANCE");
  std::optional<api::AgentNotice> maintenance = watch.Next(seconds(5));
  ASSERT_TRUE(maintenance.has_value());
  EXPECT_LT(steady_clock::now() - set, seconds(1));
  EXPECT_EQ(maintenance->maintenance_event, "TERMINATE_ON_HOST_MAINTENANCE");
  EXPECT_TRUE(maintenance->preempted);
  // Nothing changed, nothing sent: the watch is quiet between changes.
  EXPECT_FALSE(watch.Next(milliseconds(500)).has_value());

  // Every request was the metadata server's long-poll, with the header it demands.
  std::vector<std::string> heads = metadata.Heads();
  ASSERT_GE(heads.size(), 4u);
  for (const std::string& head : heads) {
    EXPECT_NE(head.find("?wait_for_change=true&last_etag="), std::string::npos) << head;
    EXPECT_NE(head.find("\r\nMetadata-Flavor: Google"), std::string::npos) << head;
  }
}

TEST(AgentNotice, AServerThatGoesAwayIsSourceNoneUntilItComesBack) {
  MetadataStub metadata;
  RunningAgent agent({"--metadata", metadata.address()});
  NoticeStream watch(agent);
  ASSERT_TRUE(watch.Until(FromMetadata, seconds(10)).has_value());

  metadata.GoAway();
  std::optional<api::AgentNotice> gone =
      watch.Until([](const api::AgentNotice& n) { return !FromMetadata(n); }, seconds(5));
  ASSERT_TRUE(gone.has_value());
  EXPECT_NE(gone->error, "");
  EXPECT_FALSE(gone->preempted);  // the last values it gave stay
  EXPECT_EQ(agent.Ask(api::AgentRequest{}).status, Status::Ok());  // hello: serve is fine

  metadata.Set("preempted", "TRUE");  // while no one could ask
  metadata.ComeBack();
  // Each value's poll comes back on its own: the error goes with the last of them.
  std::optional<api::AgentNotice> back = watch.Until(
      [](const api::AgentNotice& n) { return FromMetadata(n) && n.preempted && n.error.empty(); },
      seconds(15));
  ASSERT_TRUE(back.has_value()) << AskNotice(agent).error;
}

TEST(AgentNotice, ASilentOrFloodingServerIsBoundedAndTheAgentAnswersMeanwhile) {
  MetadataStub metadata;
  metadata.SetMode(MetadataStub::Mode::kSilent);
  RunningAgent agent({"--metadata", metadata.address()});
  NoticeStream watch(agent);
  std::optional<api::AgentNotice> silent = watch.Until(
      [](const api::AgentNotice& n) { return n.error.find("in time") != std::string::npos; },
      seconds(8));
  ASSERT_TRUE(silent.has_value());
  EXPECT_EQ(silent->source, "none");
  steady_clock::time_point asked = steady_clock::now();
  EXPECT_EQ(agent.Ask(api::AgentRequest{}).status, Status::Ok());
  EXPECT_LT(steady_clock::now() - asked, seconds(2));

  metadata.SetMode(MetadataStub::Mode::kOversized);
  std::optional<api::AgentNotice> flood = watch.Until(
      [](const api::AgentNotice& n) { return n.error.find("larger than") != std::string::npos; },
      seconds(15));
  ASSERT_TRUE(flood.has_value()) << AskNotice(agent).error;
  EXPECT_EQ(flood->source, "none");

  metadata.SetMode(MetadataStub::Mode::kAnswer);
  ASSERT_TRUE(watch.Until(FromMetadata, seconds(20)).has_value());
}

TEST(AgentNotice, NoMetadataServerIsSourceNoneAndABadAddressIsRefused) {
  std::string address;
  {
    MetadataStub gone;
    address = gone.address();
  }
  RunningAgent agent({"--metadata", address});
  api::AgentNotice none;
  for (int i = 0; i < 100 && none.error.empty(); ++i) {
    std::this_thread::sleep_for(milliseconds(50));
    none = AskNotice(agent);
  }
  EXPECT_EQ(none.source, "none");
  EXPECT_NE(none.error.find("Connection refused"), std::string::npos) << none.error;
  EXPECT_FALSE(none.preempted);
  EXPECT_EQ(none.changed_unix_ms, 0);

  Result<ProgramResult> bad = RunSubprocess(
      {TPUFLEET_AGENT_BINARY, "serve", "--socket", agent.dir().Path("other/agent.sock"),
       "--state-dir", agent.dir().Path("other-state"), "--metadata", "metadata.google.internal"},
      "", seconds(10), SpawnOptions{});
  ASSERT_TRUE(bad.ok()) << bad.status().ToString();
  EXPECT_EQ(bad->exit_code, 2);
  EXPECT_EQ(bad->output,
            "tpufleet-agent: --metadata \"metadata.google.internal\": expected IPV4:PORT (the "
            "agent resolves no names), like 169.254.169.254:80\n");
}

}  // namespace
}  // namespace tpufleet::agent
