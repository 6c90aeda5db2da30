// What `exec` prints: ExecOutput's prefixed, grouped and JSON modes and its summary of
// failures, fed as the engine feeds it. The command itself through Main:
// exec_command_test.cc. Against real workers: test/exec_e2e_test.sh.

#include "cli/exec_output.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "cli/testing/run_cli.h"

namespace tpufleet::cli {
namespace {

using cli_testing::Contains;

WorkerTarget W(const std::string& node, int index) {
  WorkerTarget t;
  t.fleet = "lab";
  t.node = node;
  t.worker = index;
  t.name = node + "/w" + std::to_string(index);
  return t;
}

std::vector<WorkerTarget> Pod(int workers) {
  std::vector<WorkerTarget> out;
  for (int i = 0; i < workers; ++i) {
    out.push_back(W("pod", i));
  }
  return out;
}

HostResult Exited(int code) {
  HostResult r;
  r.outcome = HostOutcome::kExited;
  r.exit_code = code;
  if (code != 0) {
    r.message = "exit " + std::to_string(code);
  }
  return r;
}

HostResult Outcome(HostOutcome outcome, const std::string& message) {
  HostResult r;
  r.outcome = outcome;
  r.message = message;
  return r;
}

// ---------------------------------------------------------------------------------------
// FoldWorkerNames

TEST(FoldWorkerNames, RunsOfOneNodeFoldIntoRanges) {
  std::vector<WorkerTarget> w = Pod(4);
  w.push_back(W("pod", 5));
  w.push_back(W("eval", 0));
  EXPECT_EQ(FoldWorkerNames(w), "pod/w[0-3,5], eval/w0");
  EXPECT_EQ(FoldWorkerNames({W("pod", 2)}), "pod/w2");
  EXPECT_EQ(FoldWorkerNames({W("pod", 1), W("pod", 3)}), "pod/w[1,3]");
  EXPECT_EQ(FoldWorkerNames({W("a", 0), W("a", 1), W("b", 1), W("b", 2), W("b", 7)}),
            "a/w[0-1], b/w[1-2,7]");
  EXPECT_EQ(FoldWorkerNames({}), "");
}

// ---------------------------------------------------------------------------------------
// ExecOutput

class ExecOutputTest : public ::testing::Test {
 protected:
  std::unique_ptr<ExecOutput> Make(const std::vector<WorkerTarget>& workers,
                                   ExecOutput::Mode mode) {
    workers_ = workers;
    return std::make_unique<ExecOutput>(workers_, mode, out_, err_,
                                        [this] { return cancelled_.load(); });
  }

  std::vector<WorkerTarget> workers_;
  std::ostringstream out_;
  std::ostringstream err_;
  std::atomic<bool> cancelled_{false};
};

TEST_F(ExecOutputTest, PrefixedPrintsWholeLinesAsTheyArrive) {
  auto o = Make(Pod(2), ExecOutput::Mode::kPrefixed);

  o->OnOutput(0, OutputStream::kStdout, "hel");
  EXPECT_EQ(out_.str(), "");  // no newline yet: held
  o->OnOutput(1, OutputStream::kStdout, "one\ntwo\nthr");
  EXPECT_EQ(out_.str(), "[pod/w1] one\n[pod/w1] two\n");
  o->OnOutput(0, OutputStream::kStdout, "lo\n");
  EXPECT_EQ(out_.str(), "[pod/w1] one\n[pod/w1] two\n[pod/w0] hello\n");
  o->OnOutput(0, OutputStream::kStderr, "warn: x\n");
  EXPECT_EQ(err_.str(), "[pod/w0] warn: x\n");
  EXPECT_EQ(out_.str(), "[pod/w1] one\n[pod/w1] two\n[pod/w0] hello\n");  // not on stdout

  o->OnOutput(1, OutputStream::kStderr, "no newline at the end");
  o->OnResult(1, Exited(0));  // its unfinished lines come out, each ended with a newline
  EXPECT_EQ(out_.str(), "[pod/w1] one\n[pod/w1] two\n[pod/w0] hello\n[pod/w1] thr\n");
  EXPECT_EQ(err_.str(), "[pod/w0] warn: x\n[pod/w1] no newline at the end\n");
  o->OnResult(0, Exited(0));
  EXPECT_TRUE(o->Finish());
  EXPECT_EQ(out_.str(), "[pod/w1] one\n[pod/w1] two\n[pod/w0] hello\n[pod/w1] thr\n");
  EXPECT_EQ(err_.str(), "[pod/w0] warn: x\n[pod/w1] no newline at the end\n");  // no summary
}

TEST_F(ExecOutputTest, PrefixedKeepsEmptyLinesAndStreamsApart) {
  auto o = Make({W("eval", 0)}, ExecOutput::Mode::kPrefixed);
  o->OnOutput(0, OutputStream::kStdout, "a\n\nb");
  o->OnOutput(0, OutputStream::kStderr, "e");
  o->OnOutput(0, OutputStream::kStdout, "c\n");
  o->OnResult(0, Exited(0));
  EXPECT_TRUE(o->Finish());
  EXPECT_EQ(out_.str(), "[eval/w0] a\n[eval/w0] \n[eval/w0] bc\n");
  EXPECT_EQ(err_.str(), "[eval/w0] e\n");
}

TEST_F(ExecOutputTest, GroupedFoldsIdenticalOutputsInFirstSeenOrder) {
  auto o = Make(Pod(5), ExecOutput::Mode::kGrouped);
  // Outputs "b" (w0, w2, w3), "a" (w1), none (w4): "b" first although "a" < "b".
  const char* outputs[] = {"b\n", "a\n", "b\n", "b\n", ""};
  for (size_t i = 0; i < 5; ++i) {
    if (*outputs[i]) {
      o->OnOutput(i, OutputStream::kStdout, outputs[i]);
    }
    EXPECT_EQ(out_.str(), "") << "grouped mode prints nothing before Finish";
    o->OnResult(i, Exited(0));
  }
  EXPECT_TRUE(o->Finish());
  EXPECT_EQ(out_.str(),
            "----------------\n"
            "pod/w[0,2-3] (3)\n"
            "----------------\n"
            "b\n"
            "----------\n"
            "pod/w1 (1)\n"
            "----------\n"
            "a\n");
  EXPECT_EQ(err_.str(), "");
}

TEST_F(ExecOutputTest, GroupedComparesStdoutAndStderrTogetherAndEndsTheLastLine) {
  auto o = Make(Pod(3), ExecOutput::Mode::kGrouped);
  o->OnOutput(0, OutputStream::kStdout, "x\n");
  o->OnOutput(0, OutputStream::kStderr, "y");
  o->OnOutput(1, OutputStream::kStdout, "x\n");
  o->OnOutput(1, OutputStream::kStderr, "y");
  o->OnOutput(2, OutputStream::kStdout, "x\n");  // no stderr: another output
  for (size_t i = 0; i < 3; ++i) {
    o->OnResult(i, Exited(0));
  }
  EXPECT_TRUE(o->Finish());
  std::string text = out_.str();
  EXPECT_TRUE(Contains(text, "pod/w[0-1] (2)\n" + std::string(14, '-') + "\nx\ny\n")) << text;
  EXPECT_TRUE(Contains(text, "pod/w2 (1)\n" + std::string(10, '-') + "\nx\n")) << text;
  EXPECT_LT(text.find("pod/w[0-1]"), text.find("pod/w2"));
}

TEST_F(ExecOutputTest, GroupedSixteenWorkersWithOneOutputIsOneBlock) {
  std::vector<WorkerTarget> w;
  for (const char* node : {"a", "b", "c", "d"}) {
    for (int i = 0; i < 4; ++i) {
      w.push_back(W(node, i));
    }
  }
  auto o = Make(w, ExecOutput::Mode::kGrouped);
  for (size_t i = 0; i < w.size(); ++i) {
    o->OnOutput(i, OutputStream::kStdout, "same\n");
    o->OnResult(i, Exited(0));
  }
  EXPECT_TRUE(o->Finish());
  std::string title = "a/w[0-3], b/w[0-3], c/w[0-3], d/w[0-3] (16)";
  std::string rule(title.size(), '-');
  EXPECT_EQ(out_.str(), rule + "\n" + title + "\n" + rule + "\nsame\n");
}

TEST_F(ExecOutputTest, JsonIsOneDocumentWithEveryWorker) {
  auto o = Make({W("pod", 0), W("pod", 1), W("pod", 2), W("eval", 0)}, ExecOutput::Mode::kJson);
  o->OnOutput(0, OutputStream::kStdout, "host-0\n");
  o->OnOutput(0, OutputStream::kStderr, "note\n");
  o->OnOutput(1, OutputStream::kStdout, "partial");
  EXPECT_EQ(out_.str(), "");
  o->OnResult(0, Exited(0));
  o->OnResult(1, Exited(3));
  HostResult killed;
  killed.outcome = HostOutcome::kSignaled;
  killed.signal = "KILL";
  killed.message = "killed by SIGKILL";
  o->OnResult(2, killed);
  o->OnResult(3, Outcome(HostOutcome::kUnreachable, "connect: No route to host"));
  EXPECT_FALSE(o->Finish());

  nlohmann::json j = nlohmann::json::parse(out_.str(), nullptr, false);
  ASSERT_FALSE(j.is_discarded()) << out_.str();
  EXPECT_EQ(j["ok"], false);
  EXPECT_EQ(j["failed"], 3);
  ASSERT_EQ(j["workers"].size(), 4u);
  const nlohmann::json& w0 = j["workers"][0];
  EXPECT_EQ(w0["worker"], "pod/w0");
  EXPECT_EQ(w0["node"], "pod");
  EXPECT_EQ(w0["index"], 0);
  EXPECT_EQ(w0["outcome"], "exited");
  EXPECT_EQ(w0["ok"], true);
  EXPECT_EQ(w0["exit_code"], 0);
  EXPECT_EQ(w0["stdout"], "host-0\n");
  EXPECT_EQ(w0["stderr"], "note\n");
  EXPECT_FALSE(w0.contains("message"));
  EXPECT_FALSE(w0.contains("signal"));
  const nlohmann::json& w1 = j["workers"][1];
  EXPECT_EQ(w1["ok"], false);
  EXPECT_EQ(w1["exit_code"], 3);
  EXPECT_EQ(w1["stdout"], "partial");  // as written: JSON adds no newline
  const nlohmann::json& w2 = j["workers"][2];
  EXPECT_EQ(w2["outcome"], "signaled");
  EXPECT_EQ(w2["signal"], "KILL");
  EXPECT_FALSE(w2.contains("exit_code"));
  const nlohmann::json& w3 = j["workers"][3];
  EXPECT_EQ(w3["worker"], "eval/w0");
  EXPECT_EQ(w3["outcome"], "unreachable");
  EXPECT_EQ(w3["message"], "connect: No route to host");
  EXPECT_FALSE(w3.contains("exit_code"));
  // The summary is for people, on stderr; stdout holds the document only.
  EXPECT_TRUE(Contains(err_.str(), "3 of 4 workers failed")) << err_.str();
}

TEST_F(ExecOutputTest, SummaryNamesEachFailureAndFoldsTheStoppedOnes) {
  auto o = Make(Pod(8), ExecOutput::Mode::kPrefixed);
  std::string stopped = "stopped: pod/w1 failed (--fail-fast)";
  o->OnResult(0, Exited(0));
  o->OnResult(1, Exited(7));
  o->OnResult(2, Outcome(HostOutcome::kUnreachable, "connect: No route to host"));
  o->OnResult(3, Outcome(HostOutcome::kCancelled, stopped));
  o->OnResult(4, Outcome(HostOutcome::kCancelled, stopped));
  o->OnResult(5, Outcome(HostOutcome::kTimeout, "still running after 2s"));
  o->OnResult(6, Outcome(HostOutcome::kHostKeyMismatch,
                         "the host key of 198.18.0.8 is not the one tpufleet pinned"));
  o->OnResult(7, Outcome(HostOutcome::kCancelled, stopped));

  EXPECT_FALSE(o->Finish());

  EXPECT_EQ(out_.str(), "");
  EXPECT_EQ(err_.str(),
            "tpufleet: 7 of 8 workers failed:\n"
            "  pod/w1: exit 7\n"
            "  pod/w2: unreachable: connect: No route to host\n"
            "  pod/w5: timeout: still running after 2s\n"
            "  pod/w6: host-key-mismatch: the host key of 198.18.0.8 is not the one "
            "tpufleet pinned\n"
            "  pod/w[3-4,7]: stopped: pod/w1 failed (--fail-fast)\n");
}

TEST_F(ExecOutputTest, EveryWorkerExitingZeroIsSuccessAndNoSummary) {
  auto o = Make(Pod(3), ExecOutput::Mode::kPrefixed);
  for (size_t i = 0; i < 3; ++i) {
    o->OnResult(i, Exited(0));
  }
  EXPECT_TRUE(o->Finish());
  EXPECT_EQ(err_.str(), "");

  auto signaled = Make(Pod(1), ExecOutput::Mode::kPrefixed);
  HostResult killed;
  killed.outcome = HostOutcome::kSignaled;
  killed.signal = "TERM";
  signaled->OnResult(0, killed);  // exit_code 0, but the command did not exit
  EXPECT_FALSE(signaled->Finish());
}

TEST_F(ExecOutputTest, CancelledFollowsTheFlag) {
  auto o = Make(Pod(1), ExecOutput::Mode::kPrefixed);
  EXPECT_FALSE(o->Cancelled());
  cancelled_ = true;
  EXPECT_TRUE(o->Cancelled());
  std::ostringstream out, err;
  ExecOutput no_flag(workers_, ExecOutput::Mode::kPrefixed, out, err, nullptr);
  EXPECT_FALSE(no_flag.Cancelled());
}

// ---------------------------------------------------------------------------------------
// Issue 10, finding 7: a worker printing without end must not cost memory or quadratic
// time here. (It drove the CLI to 2.1 GB at 100 % CPU with 1.5 GB and no newline.)

// Feeds `total` bytes of `byte` to `host`'s stdout in pieces of `chunk`; returns the
// most that was held after any piece.
size_t Feed(ExecOutput& o, size_t host, size_t total, size_t chunk, char byte) {
  std::string piece(chunk, byte);
  size_t most = 0;
  for (size_t sent = 0; sent < total; sent += chunk) {
    o.OnOutput(host, OutputStream::kStdout, std::string_view(piece).substr(0, total - sent));
    most = std::max(most, o.buffered_bytes());
  }
  return most;
}

TEST_F(ExecOutputTest, Issue10ALineWithoutEndIsPrintedInPiecesScanningEachByteOnce) {
  auto o = Make(Pod(2), ExecOutput::Mode::kPrefixed);
  constexpr size_t kTotal = 4 << 20;  // 4 MiB, one line, in 1 KiB reads
  EXPECT_LT(Feed(*o, 0, kTotal, 1024, 'x'), kExecLineBytes);
  // Linear: each byte was searched for a newline once, not once per read after it.
  EXPECT_EQ(o->bytes_scanned(), kTotal);
  // Printed as it came, in 64 pieces of 64 KiB, each with its prefix.
  std::string piece = "[pod/w0] " + std::string(kExecLineBytes, 'x') + "\n";
  ASSERT_EQ(out_.str().size(), 64 * piece.size());
  for (size_t i = 0; i < 64; ++i) {
    ASSERT_EQ(out_.str().compare(i * piece.size(), piece.size(), piece), 0) << "piece " << i;
  }
  EXPECT_EQ(o->buffered_bytes(), 0u);
  // The line goes on and ends: the end is one more piece, and other workers unaffected.
  o->OnOutput(1, OutputStream::kStdout, "other\n");
  o->OnOutput(0, OutputStream::kStdout, "yz\nnext\n");
  EXPECT_EQ(out_.str().substr(64 * piece.size()),
            "[pod/w1] other\n[pod/w0] yz\n[pod/w0] next\n");
  EXPECT_EQ(o->bytes_scanned(), kTotal + 6 + 8);
}

TEST_F(ExecOutputTest, Issue10APieceDoesNotSplitAUtf8Character) {
  workers_ = Pod(1);
  ExecOutput o(workers_, ExecOutput::Mode::kPrefixed, out_, err_, nullptr,
               ExecOutputLimits{.line_bytes = 8});
  o.OnOutput(0, OutputStream::kStdout, "abcdef\xc3\xa9gh\xe2\x82\xac.\n");  // é, €
  EXPECT_EQ(out_.str(), "[pod/w0] abcdef\xc3\xa9\n[pod/w0] gh\xe2\x82\xac.\n");
  out_.str("");
  o.OnOutput(0, OutputStream::kStdout, "abcdefg\xe2\x82\xac\n");  // € across the bound
  EXPECT_EQ(out_.str(), "[pod/w0] abcdefg\n[pod/w0] \xe2\x82\xac\n");
}

TEST_F(ExecOutputTest, Issue10GroupKeepsTheFirstMiBOfEachWorkerAndSaysSo) {
  auto o = Make(Pod(4), ExecOutput::Mode::kGrouped);
  constexpr size_t kTotal = 3 << 20;
  for (size_t host : {0, 1}) {  // the same 3 MiB each
    EXPECT_LE(Feed(*o, host, kTotal, 64 * 1024, 'x'), 2 * kExecKeepPerWorkerBytes);
  }
  EXPECT_LE(Feed(*o, 2, kTotal, 64 * 1024, 'y'), 3 * kExecKeepPerWorkerBytes);
  o->OnOutput(3, OutputStream::kStdout, "small\n");
  for (size_t i = 0; i < 4; ++i) {
    o->OnResult(i, Exited(0));
  }
  EXPECT_LE(o->buffered_bytes(), 3 * kExecKeepPerWorkerBytes + 6);
  EXPECT_TRUE(o->Finish());
  std::string cut = std::to_string(kTotal - kExecKeepPerWorkerBytes);
  std::string text = out_.str();
  EXPECT_TRUE(Contains(text, "pod/w[0-1] (2)\n--------------\n" +
                                 std::string(kExecKeepPerWorkerBytes, 'x') + "\n[tpufleet: " +
                                 cut + " more bytes not kept, not shown and not compared]\n"))
      << text.substr(0, 200);
  EXPECT_TRUE(Contains(text, "pod/w2 (1)\n----------\n" +
                                 std::string(kExecKeepPerWorkerBytes, 'y') + "\n[tpufleet: " +
                                 cut + " more bytes not kept, not shown]\n"));
  EXPECT_TRUE(Contains(text, "pod/w3 (1)\n----------\nsmall\n"));
  EXPECT_EQ(err_.str(), "tpufleet: output cut: --group keeps 1 MiB of each worker and 64 MiB "
                        "in all; pod/w[0-2] printed more (" +
                            std::to_string(3 * (kTotal - kExecKeepPerWorkerBytes)) +
                            " bytes left out); run exec without --group to see everything\n");
}

TEST_F(ExecOutputTest, Issue10GroupKeepsAtMostTheTotalForAllWorkers) {
  workers_ = Pod(6);
  ExecOutput o(workers_, ExecOutput::Mode::kGrouped, out_, err_, nullptr,
               ExecOutputLimits{.keep_per_worker = 40, .keep_total = 100});
  for (size_t i = 0; i < 6; ++i) {
    EXPECT_LE(Feed(o, i, 50, 7, static_cast<char>('a' + i)), 100u);
    o.OnResult(i, Exited(0));
  }
  EXPECT_EQ(o.buffered_bytes(), 100u);
  EXPECT_TRUE(o.Finish());
  std::string text = out_.str();
  EXPECT_TRUE(Contains(text, "pod/w0 (1)\n----------\n" + std::string(40, 'a') +
                                 "\n[tpufleet: 10 more bytes not kept, not shown]\n"));
  EXPECT_TRUE(Contains(text, std::string(20, 'c') + "\n[tpufleet: 30 more bytes not kept"));
  // Nothing kept of w3-w5: one block for them, saying how much they printed.
  EXPECT_TRUE(Contains(text, "pod/w[3-5] (3)\n--------------\n[tpufleet: 50 more bytes not "
                             "kept, not shown and not compared]\n")) << text;
  EXPECT_EQ(err_.str(), "tpufleet: output cut: --group keeps 40 bytes of each worker and 100 "
                        "bytes in all; pod/w[0-5] printed more (200 bytes left out); run exec "
                        "without --group to see everything\n");
}

TEST_F(ExecOutputTest, Issue10JsonKeepsTheFirstMiBOfEachStreamAndMarksTruncated) {
  auto o = Make(Pod(2), ExecOutput::Mode::kJson);
  constexpr size_t kTotal = 3 << 20;
  EXPECT_LE(Feed(*o, 0, kTotal, 64 * 1024, 'x'), kExecKeepPerWorkerBytes);
  o->OnOutput(0, OutputStream::kStderr, "warn\n");
  o->OnOutput(1, OutputStream::kStdout, "fine\n");
  o->OnResult(0, Exited(0));
  o->OnResult(1, Exited(0));
  EXPECT_EQ(o->buffered_bytes(), kExecKeepPerWorkerBytes + 10);
  EXPECT_TRUE(o->Finish());
  nlohmann::json j = nlohmann::json::parse(out_.str(), nullptr, false);
  ASSERT_FALSE(j.is_discarded());
  EXPECT_EQ(j["truncated"], true);
  const nlohmann::json& w0 = j["workers"][0];
  EXPECT_EQ(w0["stdout"], std::string(kExecKeepPerWorkerBytes, 'x'));
  EXPECT_EQ(w0["stderr"], "warn\n");
  EXPECT_EQ(w0["truncated"], true);
  EXPECT_EQ(w0["dropped_bytes"]["stdout"], kTotal - kExecKeepPerWorkerBytes);
  EXPECT_EQ(w0["dropped_bytes"]["stderr"], 0);
  const nlohmann::json& w1 = j["workers"][1];
  EXPECT_EQ(w1["stdout"], "fine\n");
  EXPECT_EQ(w1["truncated"], false);
  EXPECT_FALSE(w1.contains("dropped_bytes"));
  EXPECT_EQ(err_.str(), "tpufleet: output cut: --json keeps 1 MiB of each stream of each worker "
                        "and 64 MiB in all; pod/w0 printed more (" +
                            std::to_string(kTotal - kExecKeepPerWorkerBytes) +
                            " bytes left out, marked \"truncated\": true)\n");
}

TEST_F(ExecOutputTest, Issue10JsonOfBytesThatAreNotUtf8IsStillADocument) {
  auto o = Make(Pod(1), ExecOutput::Mode::kJson);
  o->OnOutput(0, OutputStream::kStdout, "bin\xff\xfe\n");
  o->OnResult(0, Exited(0));
  EXPECT_TRUE(o->Finish());
  nlohmann::json j = nlohmann::json::parse(out_.str(), nullptr, false);
  ASSERT_FALSE(j.is_discarded()) << out_.str();
  EXPECT_EQ(j["workers"][0]["stdout"], "bin\xef\xbf\xbd\xef\xbf\xbd\n");  // U+FFFD each
}

}  // namespace
}  // namespace tpufleet::cli
