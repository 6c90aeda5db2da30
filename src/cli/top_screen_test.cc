// The live view of `tpufleet top` (cli/top_screen.h): keys from a terminal's bytes, what
// they do to the view, the screen's lines, and the loop on a real pty: it draws, quits on
// q, and puts the terminal back after q, an error, SIGTERM and a crash.
#include "cli/top_screen.h"

#include <gtest/gtest.h>
#include <pty.h>
#include <signal.h>
#include <sys/wait.h>
#include <termios.h>
#include <unistd.h>

#include <string>

namespace tpufleet::cli {
namespace {

constexpr int64_t kScreenNow = 1'767'225'600'000;

std::vector<TopKey> Keys(const std::vector<TopKeyPress>& presses) {
  std::vector<TopKey> out;
  for (const TopKeyPress& p : presses) {
    out.push_back(p.key);
  }
  return out;
}

TEST(TopKeys, LettersControlAndEscapeSequences) {
  TopKeyReader r;
  std::vector<TopKeyPress> k = r.Feed("q\x03\r\x7f");
  EXPECT_EQ(Keys(k), (std::vector<TopKey>{TopKey::kChar, TopKey::kInterrupt, TopKey::kEnter,
                                          TopKey::kBackspace}));
  EXPECT_EQ(k[0].c, 'q');
  EXPECT_EQ(Keys(r.Feed("\x1b[A\x1b[B\x1b[5~\x1b[6~\x1b[H\x1bOF")),
            (std::vector<TopKey>{TopKey::kUp, TopKey::kDown, TopKey::kPageUp, TopKey::kPageDown,
                                 TopKey::kHome, TopKey::kEnd}));
}

TEST(TopKeys, ASequenceSplitAcrossReadsAndALoneEscape) {
  TopKeyReader r;
  EXPECT_TRUE(r.Feed("\x1b[").empty());
  EXPECT_EQ(Keys(r.Feed("6~")), std::vector<TopKey>{TopKey::kPageDown});
  EXPECT_TRUE(r.Feed("\x1b").empty());
  EXPECT_EQ(Keys(r.Flush()), std::vector<TopKey>{TopKey::kEscape});
  EXPECT_EQ(Keys(r.Feed("\x1bq")), (std::vector<TopKey>{TopKey::kEscape, TopKey::kChar}));
  // A sequence longer than any the view knows is dropped whole, not taken for keys.
  EXPECT_EQ(Keys(r.Feed("\x1b[99;99;99;99;99;")), std::vector<TopKey>{TopKey::kOther});
}

void Press(TopState& s, std::string_view bytes) {
  TopKeyReader r;
  for (const TopKeyPress& k : r.Feed(bytes)) {
    ApplyKey(s, k, 10);
  }
  for (const TopKeyPress& k : r.Flush()) {
    ApplyKey(s, k, 10);
  }
}

TEST(TopKeys, SortFoldFilterScrollAndQuit) {
  TopState s;
  Press(s, "s");
  EXPECT_EQ(s.view.sort, TopSort::kDuty);
  Press(s, "ssss");
  EXPECT_EQ(s.view.sort, TopSort::kName);
  Press(s, "f");
  EXPECT_EQ(s.view.fold, TopFold::kAll);
  Press(s, "f");
  EXPECT_EQ(s.view.fold, TopFold::kNone);
  Press(s,
        "/w2q\x7f"
        "3");  // q while typing a filter is part of it
  EXPECT_TRUE(s.editing);
  EXPECT_FALSE(s.quit);
  EXPECT_EQ(s.draft, "w23");
  Press(s, "\r");
  EXPECT_EQ(s.view.filter, "w23");
  EXPECT_FALSE(s.editing);
  Press(s, "/x\x1b");  // Esc: the filter cleared, the edit ended
  EXPECT_FALSE(s.editing);
  EXPECT_EQ(s.view.filter, "");
  Press(s, "\x1b[B\x1b[B\x1b[6~");
  EXPECT_EQ(s.scroll, 12u);
  Press(s, "\x1b[A\x1b[5~");
  EXPECT_EQ(s.scroll, 1u);
  Press(s, "\x1b[5~");
  EXPECT_EQ(s.scroll, 0u);
  Press(s, "r");
  EXPECT_TRUE(s.refresh_now);
  Press(s, "q");
  EXPECT_TRUE(s.quit);
  TopState t;
  Press(t, "\x03");
  EXPECT_TRUE(t.quit);
}

// A round of `n` workers of node pod, worker 2 not answering.
FleetMetrics Round(int n) {
  std::vector<WorkerMetrics> ws;
  for (int i = 0; i < n; ++i) {
    WorkerMetrics w;
    w.target.node = "pod";
    w.target.worker = i;
    w.target.name = "pod/w" + std::to_string(i);
    if (i == 2) {
      w.status = TimeoutError("pod/w2: no answer within 5s");
      w.diagnosis = {Verdict::kUnknown, w.status.message(), std::nullopt};
    } else {
      MetricsReport r;
      ChipSample c;
      c.duty_cycle_percent = 60;
      r.sample.chips = {c};
      r.sample.host.cpu_percent = 10;
      w.report = r;
      w.diagnosis.verdict = Verdict::kBusy;
    }
    ws.push_back(w);
  }
  FleetMetrics f;
  f.now_unix_ms = kScreenNow;
  f.workers = ws;
  GroupMetrics node{"pod", "pod", "", {}, {}};
  for (int i = 0; i < n; ++i) {
    node.workers.push_back(static_cast<size_t>(i));
  }
  f.nodes = {node};
  return f;
}

TEST(TopScreenLines, ExactlyTheScreenWithTitleHeaderRowsAndFooter) {
  TopState s;
  std::vector<std::string> lines = RenderTopScreen(Round(4), "pod", s, 12, 90);
  ASSERT_EQ(lines.size(), 12u);
  EXPECT_EQ(lines[0].rfind("tpufleet top pod  2026-01-01T00:00:00", 0), 0u) << lines[0];
  EXPECT_NE(lines[0].find("rows 1-4/4"), std::string::npos) << lines[0];
  EXPECT_EQ(lines[1].rfind("NODE", 0), 0u);
  EXPECT_NE(lines[4].find("no answer: pod/w2: no answer within 5s"), std::string::npos);
  // The footer says which worker did not answer.
  EXPECT_NE(lines[9].find("pod/w2: no answer"), std::string::npos) << lines[9];
  for (const std::string& l : lines) {
    EXPECT_LE(DisplayWidth(l), 90u) << l;
  }
}

TEST(TopScreenLines, ScrollingShowsAPageAndStopsAtTheLast) {
  TopState s;
  size_t page = TopPageRows(12);
  EXPECT_EQ(page, 7u);  // 12 lines: title, header, 3 of footer
  s.scroll = 100;
  std::vector<std::string> lines = RenderTopScreen(Round(20), "pod", s, 12, 120);
  EXPECT_NE(lines[0].find("rows 14-20/20"), std::string::npos) << lines[0];
  EXPECT_NE(lines[2 + page - 1].find("w19"), std::string::npos);
  s.editing = true;
  s.draft = "w1";
  lines = RenderTopScreen(Round(20), "pod", s, 12, 120);
  EXPECT_EQ(lines.back(), "filter: w1_");
}

// A pty whose slave side is the view's terminal; its mode before the view.
class TopPtyTest : public ::testing::Test {
 protected:
  void SetUp() override {
    struct winsize ws {};
    ws.ws_row = 20;
    ws.ws_col = 100;
    ASSERT_EQ(::openpty(&master_, &slave_, nullptr, nullptr, &ws), 0);
    ASSERT_EQ(::tcgetattr(slave_, &before_), 0);
  }
  void TearDown() override {
    ::close(master_);
    ::close(slave_);
  }

  // Everything the view wrote.
  std::string Written() {
    std::string out;
    char buf[4096];
    ssize_t n;
    while (true) {
      pollfd p{master_, POLLIN, 0};
      if (::poll(&p, 1, 0) <= 0 || (n = ::read(master_, buf, sizeof buf)) <= 0) {
        break;
      }
      out.append(buf, static_cast<size_t>(n));
    }
    return out;
  }

  void ExpectCooked() {
    struct termios now {};
    ASSERT_EQ(::tcgetattr(slave_, &now), 0);
    EXPECT_EQ(now.c_lflag, before_.c_lflag);
    EXPECT_EQ(now.c_iflag, before_.c_iflag);
  }

  int master_ = -1;
  int slave_ = -1;
  struct termios before_ {};
};

TEST_F(TopPtyTest, DrawsInTheAlternateScreenAndPutsTheTerminalBackOnQ) {
  int rounds = 0;
  Status s = RunTopScreen(slave_, slave_, "pod", {}, std::chrono::milliseconds(200),
                          [&](const AgentCancelFn&) -> Result<FleetMetrics> {
                            if (++rounds == 2) {
                              EXPECT_EQ(::write(master_, "q", 1), 1);
                            }
                            return Round(4);
                          });
  EXPECT_TRUE(s.ok()) << s.ToString();
  EXPECT_EQ(rounds, 2);  // one round per refresh, then q
  std::string out = Written();
  EXPECT_EQ(out.rfind("\x1b[?1049h", 0), 0u);
  EXPECT_NE(out.find("tpufleet top pod"), std::string::npos);
  EXPECT_NE(out.find("no answer: pod/w2"), std::string::npos);
  EXPECT_EQ(out.substr(out.size() - 8), "\x1b[?1049l");
  ExpectCooked();
}

TEST_F(TopPtyTest, ARoundThatFailsEndsTheViewWithItsErrorAndTheTerminalBack) {
  Status s = RunTopScreen(slave_, slave_, "pod", {}, std::chrono::milliseconds(200),
                          [&](const AgentCancelFn&) -> Result<FleetMetrics> {
                            return InternalError("the fleet key is unreadable");
                          });
  EXPECT_EQ(s.message(), "the fleet key is unreadable");
  ExpectCooked();
}

TEST_F(TopPtyTest, SigtermEndsTheViewAndTheSignalsAreTheirOwnAgain) {
  struct sigaction before {};
  ::sigaction(SIGTERM, nullptr, &before);
  Status s = RunTopScreen(slave_, slave_, "pod", {}, std::chrono::seconds(30),
                          [&](const AgentCancelFn&) -> Result<FleetMetrics> {
                            ::raise(SIGTERM);
                            return Round(4);
                          });
  EXPECT_TRUE(s.ok()) << s.ToString();
  ExpectCooked();
  struct sigaction after {};
  ::sigaction(SIGTERM, nullptr, &after);
  EXPECT_EQ(after.sa_handler, before.sa_handler);
}

TEST_F(TopPtyTest, ACrashPutsTheTerminalBackBeforeTheProcessDies) {
  pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    (void)RunTopScreen(slave_, slave_, "pod", {}, std::chrono::seconds(30),
                       [&](const AgentCancelFn&) -> Result<FleetMetrics> { ::abort(); });
    ::_exit(0);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFSIGNALED(status));
  EXPECT_EQ(WTERMSIG(status), SIGABRT);
  ExpectCooked();
  EXPECT_NE(Written().find("\x1b[?1049l"), std::string::npos);
}

}  // namespace
}  // namespace tpufleet::cli
