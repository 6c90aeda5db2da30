// The pure half of the live view: keys, the view's state, the screen's lines. The loop
// on the terminal is top_terminal.cc.
#include "cli/top_screen.h"

#include <algorithm>

#include "util/timestamp.h"

namespace tpufleet::cli {
namespace {

constexpr char kEsc = '\x1b';
// An escape sequence longer than this is not one the view knows: dropped.
constexpr size_t kMaxEscapeBytes = 16;
// The footer (verdicts, the filter being typed) takes at most this many lines, and at
// most a quarter of the screen: the table is what the view is for.
constexpr size_t kMaxFooterLines = 6;

size_t FooterLines(size_t rows) { return std::min(kMaxFooterLines, rows / 4); }

// The key an escape sequence ("\x1b[A", "\x1b[5~", "\x1bOH") stands for.
TopKey EscapeKey(std::string_view seq) {
  static const std::pair<std::string_view, TopKey> kSequences[] = {
      {"[A", TopKey::kUp},      {"[B", TopKey::kDown},     {"[5~", TopKey::kPageUp},
      {"[6~", TopKey::kPageDown}, {"[H", TopKey::kHome},   {"[F", TopKey::kEnd},
      {"OH", TopKey::kHome},    {"OF", TopKey::kEnd},      {"[1~", TopKey::kHome},
      {"[4~", TopKey::kEnd},    {"OA", TopKey::kUp},       {"OB", TopKey::kDown}};
  for (const auto& [text, key] : kSequences) {
    if (seq.substr(1) == text) {
      return key;
    }
  }
  return TopKey::kOther;
}

TopKeyPress Plain(char c) {
  switch (c) {
    case '\x03':
      return {TopKey::kInterrupt, c};
    case '\r':
    case '\n':
      return {TopKey::kEnter, c};
    case '\x7f':
    case '\b':
      return {TopKey::kBackspace, c};
    default:
      break;
  }
  unsigned char u = static_cast<unsigned char>(c);
  return u >= 0x20 && u < 0x7f ? TopKeyPress{TopKey::kChar, c} : TopKeyPress{TopKey::kOther, c};
}

}  // namespace

std::vector<TopKeyPress> TopKeyReader::Feed(std::string_view bytes) {
  std::vector<TopKeyPress> keys;
  for (char c : bytes) {
    if (pending_.empty()) {
      if (c == kEsc) {
        pending_ = c;
      } else {
        keys.push_back(Plain(c));
      }
      continue;
    }
    if (pending_.size() == 1 && c != '[' && c != 'O') {
      // ESC then another key: Esc pressed alone, then that key.
      keys.push_back({TopKey::kEscape, kEsc});
      pending_.clear();
      if (c == kEsc) {
        pending_ = c;
      } else {
        keys.push_back(Plain(c));
      }
      continue;
    }
    pending_ += c;
    unsigned char u = static_cast<unsigned char>(c);
    if (pending_.size() > 2 && u >= 0x40 && u <= 0x7e) {
      keys.push_back({EscapeKey(pending_), 0});
      pending_.clear();
    } else if (pending_.size() > kMaxEscapeBytes) {
      keys.push_back({TopKey::kOther, 0});
      pending_.clear();
    }
  }
  return keys;
}

std::vector<TopKeyPress> TopKeyReader::Flush() {
  std::vector<TopKeyPress> keys;
  if (pending_ == std::string(1, kEsc)) {
    keys.push_back({TopKey::kEscape, kEsc});
  }
  pending_.clear();
  return keys;
}

size_t TopPageRows(size_t rows) { return rows > 3 + FooterLines(rows) ? rows - 2 - FooterLines(rows) : 1; }

void ApplyKey(TopState& state, const TopKeyPress& key, size_t page) {
  page = std::max<size_t>(page, 1);
  if (key.key == TopKey::kInterrupt) {
    state.quit = true;
    return;
  }
  if (state.editing) {
    switch (key.key) {
      case TopKey::kChar:
        state.draft += key.c;
        break;
      case TopKey::kBackspace:
        if (!state.draft.empty()) {
          state.draft.pop_back();
        }
        break;
      case TopKey::kEnter:
        state.view.filter = state.draft;
        state.editing = false;
        state.scroll = 0;
        break;
      case TopKey::kEscape:
        state.view.filter.clear();
        state.draft.clear();
        state.editing = false;
        state.scroll = 0;
        break;
      default:
        break;
    }
    return;
  }
  switch (key.key) {
    case TopKey::kChar:
      switch (key.c) {
        case 'q':
        case 'Q':
          state.quit = true;
          break;
        case 's':
          state.view.sort = NextSort(state.view.sort);
          break;
        case 'f':
          state.view.fold = state.view.fold == TopFold::kAll ? TopFold::kNone : TopFold::kAll;
          state.scroll = 0;
          break;
        case '/':
          state.editing = true;
          state.draft = state.view.filter;
          break;
        case 'r':
          state.refresh_now = true;
          break;
        default:
          break;
      }
      break;
    case TopKey::kEscape:
      state.view.filter.clear();
      state.scroll = 0;
      break;
    case TopKey::kUp:
      state.scroll -= std::min<size_t>(state.scroll, 1);
      break;
    case TopKey::kDown:
      state.scroll += 1;
      break;
    case TopKey::kPageUp:
      state.scroll -= std::min(state.scroll, page);
      break;
    case TopKey::kPageDown:
      state.scroll += page;
      break;
    case TopKey::kHome:
      state.scroll = 0;
      break;
    case TopKey::kEnd:
      state.scroll = SIZE_MAX / 2;  // clamped to the last page when drawn
      break;
    default:
      break;
  }
}

std::vector<std::string> RenderTopScreen(const FleetMetrics& fleet, const std::string& title,
                                         const TopState& state, size_t rows, size_t cols) {
  TopViewOptions view = state.view;
  view.width = cols;
  std::vector<TopRow> table_rows = TopRows(fleet, view);
  std::vector<std::string> table = RenderTopTable(table_rows, view);
  size_t page = TopPageRows(rows);
  size_t last_start = table_rows.size() > page ? table_rows.size() - page : 0;
  size_t start = std::min(state.scroll, last_start);

  std::string head = "tpufleet top " + title + "  " +
                     FormatTimestamp(Clock::WallTime(std::chrono::milliseconds(fleet.now_unix_ms))) +
                     "  sort:" + std::string(TopSortName(view.sort)) +
                     (view.filter.empty() ? "" : "  filter:" + view.filter) + "  rows " +
                     std::to_string(table_rows.empty() ? 0 : start + 1) + "-" +
                     std::to_string(std::min(table_rows.size(), start + page)) + "/" +
                     std::to_string(table_rows.size()) + "  q quit s sort f fold / filter";
  std::vector<std::string> lines = {FitWidth(head, cols), table[0]};
  for (size_t i = start; i < table_rows.size() && i < start + page; ++i) {
    lines.push_back(table[i + 1]);
  }
  lines.resize(std::min(rows, 2 + page));
  std::vector<std::string> footer = RenderVerdictLines(fleet);
  size_t bottom = state.editing && rows > 0 ? rows - 1 : rows;  // the prompt's line kept
  for (size_t i = 0; i < footer.size() && lines.size() < bottom; ++i) {
    lines.push_back(FitWidth(footer[i], cols));
  }
  lines.resize(bottom);
  if (state.editing && rows > 0) {
    lines.push_back(FitWidth("filter: " + state.draft + "_", cols));
  }
  return lines;
}

}  // namespace tpufleet::cli
