// The full-screen view of `tpufleet top`, as htop and nvtop draw theirs: the
// alternate screen, the terminal in raw mode, one metrics round at a time every
// --refresh seconds, and keys:
//   q, Ctrl-C   quit                      s   next sort key (name, duty, hbm, cpu, verdict)
//   f           fold every node / none     /   type a filter (Enter keeps it, Esc clears)
//   ↑ ↓ PgUp PgDn Home End   scroll        r   refresh now
// The terminal is put back (cooked mode, the normal screen, the cursor) on every way
// out: q, an error, SIGTERM, SIGHUP, SIGINT and SIGQUIT (which end the loop), and the
// signals of a crash (SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT: restored in the handler,
// then the signal's default action). SIGWINCH redraws at the new size. Only the lines
// that changed are written.
//
// The pure parts (keys, the view's state, the screen's lines) are apart from the loop so
// that tests drive them without a terminal; the loop itself is tested on a pty.
//
// Thread-safety: one live view per process (signal actions are process-wide).
#pragma once

#include <chrono>
#include <cstddef>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "cli/top_view.h"
#include "control/fleet_metrics.h"
#include "util/status.h"

namespace tpufleet::cli {

/// A key the view acts on: a printable character (q, s, f, /, r, or part of a filter),
/// Ctrl-C, or one of the editing and moving keys.
enum class TopKey { kChar, kInterrupt, kEnter, kEscape, kBackspace, kUp, kDown, kPageUp,
                    kPageDown, kHome, kEnd, kOther };

struct TopKeyPress {
  TopKey key = TopKey::kOther;
  char c = 0;  // kChar: the character
};

/// Turns the bytes a terminal in raw mode sends into keys; an escape sequence split
/// across reads is kept until its end comes (a lone ESC is kEscape once Flush()ed).
class TopKeyReader {
 public:
  std::vector<TopKeyPress> Feed(std::string_view bytes);
  /// A pending lone ESC as kEscape (called when no byte followed it in time).
  std::vector<TopKeyPress> Flush();

 private:
  std::string pending_;
};

/// What the keys change.
struct TopState {
  TopViewOptions view;
  size_t scroll = 0;          // index of the first row shown
  bool editing = false;       // a filter is being typed
  std::string draft;          // the filter being typed
  bool quit = false;
  bool refresh_now = false;   // `r`: sample again at once
};

/// `state` after `key`, for a screen with `page` rows of the table.
void ApplyKey(TopState& state, const TopKeyPress& key, size_t page);

/// The screen of `rows` × `cols`: a title line (target, time, sort, fold, filter, keys),
/// the table's header, as many rows as fit from state.scroll, then the verdict lines
/// that fit (RenderVerdictLines), then the filter being typed. Each line at most
/// `cols` columns; exactly `rows` lines (blank ones at the end).
std::vector<std::string> RenderTopScreen(const FleetMetrics& fleet, const std::string& title,
                                         const TopState& state, size_t rows, size_t cols);

/// Rows of the table the screen shows (its page size, for scrolling).
size_t TopPageRows(size_t rows);

/// The columns of the terminal `fd`; 0 when it is not one or does not say.
size_t TerminalColumns(int fd);

/// One metrics round, cancelled when the function given says so.
using TopSampleFn = std::function<Result<FleetMetrics>(const AgentCancelFn& cancelled)>;

/// Runs the live view on the terminal `in_fd`/`out_fd` until q or a signal: each round
/// from `sample`, then keys until `refresh` has passed. FailedPrecondition when the
/// terminal cannot be put in raw mode; a round's error ends the view and is returned
/// (the terminal put back first).
Status RunTopScreen(int in_fd, int out_fd, const std::string& title, TopState state,
                    std::chrono::milliseconds refresh, const TopSampleFn& sample);

}  // namespace tpufleet::cli
