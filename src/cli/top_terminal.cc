// The loop of the live view on a terminal (top_screen.h): raw mode, the alternate
// screen, signals through a self-pipe, keys and rounds.
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <termios.h>
#include <unistd.h>

#include <array>
#include <cstring>
#include <optional>

#include "cli/top_screen.h"

namespace tpufleet::cli {
namespace {

// After ESC, this long without another byte means the Esc key itself.
constexpr std::chrono::milliseconds kEscapeWait{50};

// Entering: the alternate screen, cursor hidden, cleared. Leaving: the reverse.
constexpr std::string_view kEnterScreen = "\x1b[?1049h\x1b[?25l\x1b[H\x1b[2J";
constexpr std::string_view kLeaveScreen = "\x1b[?25h\x1b[?1049l";

// What the signal handlers need: process-wide, as signal actions are (one view at a
// time). Set before the handlers are installed, cleared after they are removed.
int g_wake_fd = -1;        // the self-pipe's write end
int g_tty_fd = -1;         // the terminal to put back
struct termios g_cooked {};  // its mode before

constexpr std::array<int, 4> kStopSignals = {SIGTERM, SIGHUP, SIGINT, SIGQUIT};
constexpr std::array<int, 5> kCrashSignals = {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT};

void WriteAll(int fd, std::string_view text) {
  while (!text.empty()) {
    ssize_t n = ::write(fd, text.data(), text.size());
    if (n < 0 && errno == EINTR) {
      continue;
    }
    if (n <= 0) {
      return;
    }
    text.remove_prefix(static_cast<size_t>(n));
  }
}

// Wakes the loop with the signal's number; async-signal-safe.
void OnSignal(int sig) {
  int saved = errno;
  unsigned char b = static_cast<unsigned char>(sig);
  [[maybe_unused]] ssize_t n = ::write(g_wake_fd, &b, 1);
  errno = saved;
}

// A crash: the terminal put back, then the signal's default action (SA_RESETHAND).
void OnCrash(int sig) {
  ::tcsetattr(g_tty_fd, TCSAFLUSH, &g_cooked);
  [[maybe_unused]] ssize_t n = ::write(g_tty_fd, kLeaveScreen.data(), kLeaveScreen.size());
  ::raise(sig);
}

// Raw mode, the alternate screen and the handlers while it lives; all put back after.
class RawTerminal {
 public:
  RawTerminal(int in_fd, int out_fd) : in_(in_fd), out_(out_fd) {}
  ~RawTerminal() { Close(); }
  RawTerminal(const RawTerminal&) = delete;
  RawTerminal& operator=(const RawTerminal&) = delete;

  Status Open() {
    if (::pipe2(pipe_.data(), O_CLOEXEC | O_NONBLOCK) != 0) {
      return InternalError("top: pipe: " + std::string(strerror(errno)));
    }
    if (::tcgetattr(in_, &g_cooked) != 0) {
      return FailedPreconditionError("top: the terminal's mode cannot be read: " +
                                     std::string(strerror(errno)) + "; use --once");
    }
    g_tty_fd = in_;
    g_wake_fd = pipe_[1];
    struct sigaction wake {};
    wake.sa_handler = OnSignal;
    sigemptyset(&wake.sa_mask);
    for (size_t i = 0; i < kStopSignals.size(); ++i) {
      ::sigaction(kStopSignals[i], &wake, &old_stop_[i]);
    }
    ::sigaction(SIGWINCH, &wake, &old_winch_);
    struct sigaction crash {};
    crash.sa_handler = OnCrash;
    crash.sa_flags = SA_RESETHAND;
    sigemptyset(&crash.sa_mask);
    for (size_t i = 0; i < kCrashSignals.size(); ++i) {
      ::sigaction(kCrashSignals[i], &crash, &old_crash_[i]);
    }
    installed_ = true;
    struct termios raw = g_cooked;
    raw.c_iflag &= ~static_cast<tcflag_t>(BRKINT | ICRNL | INPCK | ISTRIP | IXON);
    raw.c_lflag &= ~static_cast<tcflag_t>(ECHO | ICANON | IEXTEN | ISIG);
    raw.c_cflag |= CS8;
    raw.c_cc[VMIN] = 0;
    raw.c_cc[VTIME] = 0;
    if (::tcsetattr(in_, TCSAFLUSH, &raw) != 0) {
      return FailedPreconditionError("top: the terminal cannot be put in raw mode: " +
                                     std::string(strerror(errno)) + "; use --once");
    }
    raw_ = true;
    WriteAll(out_, kEnterScreen);
    return Status::Ok();
  }

  void Close() {
    if (raw_) {
      WriteAll(out_, kLeaveScreen);
      ::tcsetattr(in_, TCSAFLUSH, &g_cooked);
      raw_ = false;
    }
    if (installed_) {
      for (size_t i = 0; i < kStopSignals.size(); ++i) {
        ::sigaction(kStopSignals[i], &old_stop_[i], nullptr);
      }
      ::sigaction(SIGWINCH, &old_winch_, nullptr);
      for (size_t i = 0; i < kCrashSignals.size(); ++i) {
        ::sigaction(kCrashSignals[i], &old_crash_[i], nullptr);
      }
      installed_ = false;
      g_wake_fd = -1;
      g_tty_fd = -1;
    }
    for (int& fd : pipe_) {
      if (fd >= 0) {
        ::close(fd);
        fd = -1;
      }
    }
  }

  int wake_fd() const { return pipe_[0]; }

 private:
  int in_;
  int out_;
  std::array<int, 2> pipe_ = {-1, -1};
  bool raw_ = false;
  bool installed_ = false;
  std::array<struct sigaction, kStopSignals.size()> old_stop_{};
  std::array<struct sigaction, kCrashSignals.size()> old_crash_{};
  struct sigaction old_winch_ {};
};

// The loop's state between rounds.
class Loop {
 public:
  Loop(int in_fd, int out_fd, const std::string& title, TopState state, RawTerminal& term)
      : in_(in_fd), out_(out_fd), title_(title), state_(std::move(state)), term_(term) {}

  // Reads what is there (keys, signals) without waiting; true when the view must end.
  bool Drain() {
    std::array<char, 256> buf;
    ssize_t n;
    while ((n = ::read(term_.wake_fd(), buf.data(), buf.size())) > 0) {
      for (ssize_t i = 0; i < n; ++i) {
        if (buf[static_cast<size_t>(i)] == SIGWINCH) {
          resized_ = true;
          dirty_ = true;
        } else {
          state_.quit = true;
        }
      }
    }
    while ((n = ::read(in_, buf.data(), buf.size())) > 0) {
      for (const TopKeyPress& k : keys_.Feed({buf.data(), static_cast<size_t>(n)})) {
        Apply(k);
      }
    }
    return state_.quit;
  }

  // Waits up to `d` for keys or signals, handling them; redraws after a change.
  void Wait(std::chrono::milliseconds d) {
    auto end = std::chrono::steady_clock::now() + d;
    while (!state_.quit && !state_.refresh_now) {
      auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
          end - std::chrono::steady_clock::now());
      if (left.count() <= 0) {
        return;
      }
      std::array<pollfd, 2> fds = {pollfd{in_, POLLIN, 0}, pollfd{term_.wake_fd(), POLLIN, 0}};
      int timeout = static_cast<int>(std::min(left, kEscapeWait).count());
      int r = ::poll(fds.data(), fds.size(), timeout);
      if (r == 0) {
        for (const TopKeyPress& k : keys_.Flush()) {
          Apply(k);
        }
      } else if (r > 0 && (fds[0].revents & (POLLHUP | POLLERR)) != 0) {
        state_.quit = true;  // the terminal went away
      }
      Drain();
      Draw();
    }
  }

  void Draw() {
    if (!fleet_.has_value() || state_.quit || !dirty_) {
      return;
    }
    dirty_ = false;
    struct winsize ws {};
    size_t rows = 24;
    size_t cols = 80;
    if (::ioctl(out_, TIOCGWINSZ, &ws) == 0 && ws.ws_row > 0 && ws.ws_col > 0) {
      rows = ws.ws_row;
      cols = ws.ws_col;
    }
    std::vector<std::string> lines = RenderTopScreen(*fleet_, title_, state_, rows, cols);
    if (resized_ || lines.size() != drawn_.size()) {
      drawn_.assign(lines.size(), std::string(1, '\0'));  // every line differs: all drawn
      resized_ = false;
    }
    std::string frame;
    for (size_t i = 0; i < lines.size(); ++i) {
      if (lines[i] != drawn_[i]) {
        frame += "\x1b[" + std::to_string(i + 1) + ";1H" + lines[i] + "\x1b[K";
        drawn_[i] = lines[i];
      }
    }
    WriteAll(out_, frame);
  }

  TopState& state() { return state_; }
  void set_fleet(FleetMetrics fleet) {
    fleet_ = std::move(fleet);
    dirty_ = true;
  }

 private:
  void Apply(const TopKeyPress& k) {
    dirty_ = true;
    ApplyKey(state_, k, TopPageRows(drawn_.empty() ? 24 : drawn_.size()));
  }

  int in_;
  int out_;
  std::string title_;
  TopState state_;
  RawTerminal& term_;
  TopKeyReader keys_;
  std::optional<FleetMetrics> fleet_;
  std::vector<std::string> drawn_;
  bool resized_ = false;  // SIGWINCH came: every line is drawn again
  bool dirty_ = false;    // something changed since the last Draw
};

}  // namespace

size_t TerminalColumns(int fd) {
  struct winsize ws {};
  return ::ioctl(fd, TIOCGWINSZ, &ws) == 0 ? ws.ws_col : 0;
}

Status RunTopScreen(int in_fd, int out_fd, const std::string& title, TopState state,
                    std::chrono::milliseconds refresh, const TopSampleFn& sample) {
  RawTerminal term(in_fd, out_fd);
  TPUFLEET_TRY(term.Open());
  Loop loop(in_fd, out_fd, title, std::move(state), term);
  while (!loop.Drain()) {
    loop.state().refresh_now = false;
    Result<FleetMetrics> fleet = sample([&] { return loop.Drain(); });
    if (loop.state().quit) {
      break;
    }
    if (!fleet.ok()) {
      term.Close();
      return fleet.status();
    }
    loop.set_fleet(std::move(*fleet));
    loop.Draw();
    loop.Wait(refresh);
  }
  return Status::Ok();
}

}  // namespace tpufleet::cli
