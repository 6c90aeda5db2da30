// The relay chain's jobs, over a TestWorld whose FakeFanout stands in for the workers:
// the probe that finds who can run a hop, the chain (one command per hop), the direct
// re-send of what the chain missed, and what a dead worker costs. The hops themselves
// run for real in copy_relay_test.cc.
#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include "control/copy.h"
#include "control/testing/copy_fixture.h"
#include "util/strings.h"

namespace tpufleet {
namespace {

using testing::Contains;
using testing::CopyTest;
using testing::Exited;
using testing::MakeSparse;
using testing::Sha256;
using testing::Words;

// A relay-sized file (kRelayMinBytes, sparse) to the four workers of pod.
class RelayTest : public CopyTest {
 protected:
  void SetUp() override {
    CopyTest::SetUp();
    file_ = local_ + "/big.bin";
    MakeSparse(file_, static_cast<off_t>(kRelayMinBytes));
    sha_ = Sha256(file_);
    right_ = "TPUFLEET-RELAY " + sha_ + " " + std::to_string(kRelayMinBytes) + "\n";
  }
  std::string file_, sha_, right_;
};

TEST_F(RelayTest, TheChainGetsOneJobWithACommandPerHostAndOnlyTheFirstGetsInput) {
  t_.fanout.respond = [&](const FanoutHost&, size_t i, FanoutSink& sink) {
    sink.OnOutput(i, OutputStream::kStdout, right_);
    return HostResult{};
  };
  Result<CopyReport> report = Cp({file_}, "pod:/tmp/");
  ASSERT_TRUE(report.ok()) << report.status().ToString();

  // The probe, then the chain; every worker answered right: no direct send.
  ASSERT_EQ(jobs().size(), 2u);
  ASSERT_EQ(jobs()[0].hosts.size(), 4u);
  for (const FanoutHost& h : jobs()[0].hosts) {
    EXPECT_EQ(h.command, kRelayProbeCommand);
  }
  const FanoutJob& job = jobs()[1];
  EXPECT_EQ(job.stdin_path, file_);
  ASSERT_EQ(job.hosts.size(), 4u);
  std::string port;
  for (size_t i = 0; i < 4; ++i) {
    const FanoutHost& h = job.hosts[i];
    EXPECT_EQ(h.no_input, i != 0) << i;
    std::vector<std::string> words = Words(h.command);
    ASSERT_EQ(words.size(), 15u) << h.command;
    EXPECT_EQ(words[0], "python3");
    EXPECT_EQ(words[1], "-c");
    EXPECT_TRUE(Contains(words[2], "TPUFLEET-RELAY")) << words[2];
    EXPECT_EQ(words[3], "/tmp/");
    EXPECT_EQ(words[4], "big.bin");
    EXPECT_EQ(words[5], std::to_string(kRelayMinBytes));
    EXPECT_EQ(words[6], "644");
    if (i == 0) {
      port = words[7];
      EXPECT_GE(std::stoi(port), 1024);
    }
    EXPECT_EQ(words[7], port) << "every hop listens on the same port";
    EXPECT_EQ(words[8], std::to_string(i));
    EXPECT_EQ(words[9], "198.18.0.2,198.18.0.3,198.18.0.4,198.18.0.5");
    EXPECT_EQ(words[10], std::to_string(kRelayHopWait.count()));
    EXPECT_EQ(words[11], std::to_string(kRelayAcceptWait.count()));
    EXPECT_EQ(words[12], std::to_string(kRelayHandshakeTimeout.count()));
    EXPECT_EQ(words[13], std::to_string(kRelayIoTimeout.count()));
    EXPECT_EQ(words[14], std::to_string((kRelayDeadlineBase.count() + 16)));
  }
  EXPECT_TRUE(report->ok());
  for (const CopyOutcome& o : report->workers) {
    EXPECT_EQ(o.how, "relay") << o.worker.name;
  }
}

TEST_F(RelayTest, WorkersWhoseDigestIsWrongOrMissingGetADirectSend) {
  // w0 and w3 say the right digest and size; w1 fails; w2 a wrong digest; w4 the right
  // digest with a short size; w5 the right line but the connection broke; w6 garbles it.
  Put("wide", 8);
  ASSERT_EQ(t_.store->PutNode(records_.back()), Status::Ok());
  const std::string size = std::to_string(kRelayMinBytes);
  t_.fanout.respond = [&](const FanoutHost& host, size_t i, FanoutSink& sink) {
    if (host.command.empty() || host.command == kRelayProbeCommand) {
      return HostResult{};  // the direct send, or the probe: every worker answers
    }
    switch (i) {
      case 1:
        sink.OnOutput(i, OutputStream::kStderr, "ConnectionResetError: [Errno 104]\n");
        return Exited(1);
      case 2:
        sink.OnOutput(i, OutputStream::kStdout,
                      "TPUFLEET-RELAY " + std::string(64, 'f') + " " + size + "\n");
        return HostResult{};
      case 4:
        sink.OnOutput(i, OutputStream::kStdout, "TPUFLEET-RELAY " + sha_ + " 1048576\n");
        return HostResult{};
      case 5: {
        sink.OnOutput(i, OutputStream::kStdout, right_);
        HostResult r;
        r.outcome = HostOutcome::kUnreachable;
        r.message = "connection lost";
        return r;
      }
      case 6:
        sink.OnOutput(i, OutputStream::kStdout, "TPUFLEET-REL");
        return HostResult{};
      default:
        sink.OnOutput(i, OutputStream::kStdout, right_);
        return HostResult{};
    }
  };
  Result<CopyReport> report = Cp({file_}, "wide:/tmp/");
  ASSERT_TRUE(report.ok()) << report.status().ToString();

  ASSERT_EQ(jobs().size(), 3u);  // the probe, the chain, the direct send
  EXPECT_EQ(jobs()[1].hosts.size(), 8u);
  const FanoutJob& direct = jobs()[2];
  std::vector<std::string> names;
  for (const FanoutHost& h : direct.hosts) {
    names.push_back(h.name);
    EXPECT_EQ(h.command, "");
    EXPECT_FALSE(h.no_input);
  }
  EXPECT_EQ(names,
            (std::vector<std::string>{"wide/w1", "wide/w2", "wide/w4", "wide/w5", "wide/w6"}));
  EXPECT_EQ(direct.stdin_path, file_);
  std::vector<std::string> words = Words(direct.command);
  ASSERT_EQ(words.size(), 8u);
  EXPECT_EQ(words[4], "/tmp/");
  EXPECT_EQ(words[5], "big.bin");
  EXPECT_EQ(words[6], size);

  EXPECT_TRUE(report->ok());
  ASSERT_EQ(report->workers.size(), 8u);
  const std::vector<std::string> want = {"relay", "ssh", "ssh", "relay",
                                         "ssh",   "ssh", "ssh", "relay"};
  for (size_t i = 0; i < 8; ++i) {
    EXPECT_EQ(report->workers[i].how, want[i]) << i;
    EXPECT_TRUE(report->workers[i].ok) << i;
  }
  EXPECT_EQ(report->bytes, kRelayMinBytes);
}

TEST_F(RelayTest, AWorkerTheChainAndTheDirectSendMissedIsReportedWithWhy) {
  t_.fanout.respond = [&](const FanoutHost& host, size_t i, FanoutSink& sink) {
    if (host.command == kRelayProbeCommand) {
      return HostResult{};  // w2 answered the probe, then went away
    }
    if (!host.command.empty() && i != 2) {
      sink.OnOutput(i, OutputStream::kStdout, right_);
      return HostResult{};
    }
    HostResult r;
    r.outcome = HostOutcome::kUnreachable;
    r.message = "connect to 198.18.0.4:22: no route to host";
    return r;
  };
  Result<CopyReport> report = Cp({file_}, "pod:/tmp/");
  ASSERT_TRUE(report.ok()) << report.status().ToString();
  ASSERT_EQ(jobs().size(), 3u);  // the probe, the chain, the direct send
  ASSERT_EQ(jobs()[2].hosts.size(), 1u);
  EXPECT_EQ(jobs()[2].hosts[0].name, "pod/w2");
  EXPECT_FALSE(report->ok());
  for (size_t i = 0; i < 4; ++i) {
    EXPECT_EQ(report->workers[i].ok, i != 2) << i;
  }
  EXPECT_EQ(report->workers[2].how, "ssh");
  EXPECT_TRUE(Contains(report->workers[2].message, file_)) << report->workers[2].message;
  EXPECT_TRUE(Contains(report->workers[2].message, "no route to host"))
      << report->workers[2].message;
}

TEST_F(RelayTest, NoRelayMeansOneDirectJob) {
  Result<CopyReport> report = Cp({file_}, "pod:/tmp/", /*relay=*/false);
  ASSERT_TRUE(report.ok()) << report.status().ToString();
  ASSERT_EQ(jobs().size(), 1u);
  EXPECT_EQ(jobs()[0].stdin_path, file_);
  for (const FanoutHost& h : jobs()[0].hosts) {
    EXPECT_EQ(h.command, "");
    EXPECT_FALSE(h.no_input);
  }
  EXPECT_EQ(Words(jobs()[0].command)[0], "sh");
  for (const CopyOutcome& o : report->workers) {
    EXPECT_EQ(o.how, "ssh");
  }
}

TEST_F(RelayTest, BelowEitherThresholdTheFileGoesDirectly) {
  // Three workers.
  ASSERT_TRUE(Cp({file_}, "pod:0-2:/tmp/").ok());
  ASSERT_EQ(jobs().size(), 1u);
  EXPECT_EQ(jobs()[0].hosts[0].command, "");
  // One byte short of kRelayMinBytes.
  jobs().clear();
  MakeSparse(file_, static_cast<off_t>(kRelayMinBytes - 1));
  ASSERT_TRUE(Cp({file_}, "pod:/tmp/").ok());
  ASSERT_EQ(jobs().size(), 1u);
  EXPECT_EQ(jobs()[0].hosts[0].command, "");
}

// Issue 11 (a new user's fix 7): with one worker nobody answers, the relay copy took 20 s
// where --no-relay took 3. The chain ran through the dead worker (its predecessor waited
// kRelayHopWait for a hop that never started) and the direct send then waited for its
// connect timeout again. A dead worker costs the connect timeout once: it is tried once,
// and no chain is routed through it.
TEST_F(RelayTest, Issue11ADeadWorkerIsTriedOnceAndNoWorkerIsRoutedThroughIt) {
  Put("wide", 8);
  ASSERT_EQ(t_.store->PutNode(records_.back()), Status::Ok());
  const std::string dead = "198.18.3.3";  // wide/w1
  std::map<std::string, int> tries;
  t_.fanout.respond = [&](const FanoutHost& host, size_t i, FanoutSink& sink) {
    ++tries[host.address];
    if (host.address == dead) {
      HostResult r;
      r.outcome = HostOutcome::kTimeout;
      r.message = "connect to 198.18.3.3:22: no answer in 10s";
      return r;
    }
    if (StartsWith(host.command, "python3")) {
      sink.OnOutput(i, OutputStream::kStdout, right_);
    }
    return HostResult{};
  };
  Result<CopyReport> report = Cp({file_}, "wide:/tmp/");
  ASSERT_TRUE(report.ok()) << report.status().ToString();

  EXPECT_EQ(tries[dead], 1) << "the dead worker is tried once";
  bool chained = false;
  for (const FanoutJob& job : jobs()) {
    for (const FanoutHost& h : job.hosts) {
      if (StartsWith(h.command, "python3")) {
        chained = true;
        std::vector<std::string> words = Words(h.command);
        ASSERT_EQ(words.size(), 15u);
        EXPECT_EQ(words[9], "198.18.3.2,198.18.3.4,198.18.3.5,198.18.3.6,198.18.3.7,198.18.3.8,"
                            "198.18.3.9")
            << "no hop leads through it";
      }
    }
  }
  EXPECT_TRUE(chained);
  EXPECT_FALSE(report->ok());
  ASSERT_EQ(report->workers.size(), 8u);
  for (size_t i = 0; i < 8; ++i) {
    EXPECT_EQ(report->workers[i].ok, i != 1) << i;
    if (i != 1) {
      EXPECT_EQ(report->workers[i].how, "relay") << i;
    }
  }
  EXPECT_TRUE(Contains(report->workers[1].message, "no answer in 10s"))
      << report->workers[1].message;
}

}  // namespace
}  // namespace tpufleet
