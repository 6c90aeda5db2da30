// NoticeWatcher: what the worker's metadata server says of the worker's coming end, for
// the notice and notice.watch ops (api::AgentNotice). A spot or preemptible TPU VM learns
// of its preemption about 30 seconds ahead, and of host maintenance ahead of it, only
// there: instance/preempted turns TRUE, instance/maintenance-event names the event.
// `tpufleet serve` holds every agent's notice.watch to hear of it at once.
//
// Each of the two values is long-polled on its own connection (host::LoopHttpGet, in
// serve's loop): GET /computeMetadata/v1/instance/KEY?wait_for_change=true&last_etag=E
// &timeout_sec=kNoticeLongPoll with `Metadata-Flavor: Google`. The first poll's E is
// "0", which no answer has, so it answers at once (within kNoticeFirstAnswer); each
// later one answers when the value changes, or after timeout_sec with the same value,
// and the next poll starts at once (never sooner than kNoticeMinPollInterval after the
// last one started, so a server that ignores last_etag cannot spin the agent).
//
// A host with no metadata server (an ssh-hosts machine), or one that stops answering,
// is source "none" with the error: the watcher tries again after 1 s, doubling to
// kNoticeMaxBackoff, and logs only the change between answering and not (at info level
// when it never answered: a lab box is not a fault). The values stay the last the server
// gave. A malformed or oversized answer (past kMaxNoticeAnswerBytes) is an error like a
// dead server's: the connection is dropped, the agent is unharmed.
//
// Thread-safety: none; the loop's thread only.
#pragma once

#include <chrono>
#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "agent/host/loop_http.h"
#include "api/agent.h"
#include "util/event_loop.h"
#include "util/status.h"

namespace tpufleet::agent {

/// Where the metadata server is (`serve --metadata`): every GCE and TPU VM's.
inline constexpr std::string_view kDefaultMetadataAddress = "169.254.169.254:80";
/// timeout_sec of each long-poll: the server answers at the latest then, and the agent
/// polls again. A minute keeps a quiet worker at two requests a minute per value.
inline constexpr std::chrono::seconds kNoticeLongPoll{60};
/// How much later than timeout_sec a long-poll's answer may come before it counts as lost.
inline constexpr std::chrono::seconds kNoticeLongPollSlack{10};
/// How long the first poll (and each after an error) may take: it answers at once on a
/// real server; three seconds covers a loaded worker (as doctor's metadata check).
inline constexpr std::chrono::milliseconds kNoticeFirstAnswer{3000};
/// Retries of a server that failed: 1 s, doubling to this.
inline constexpr std::chrono::seconds kNoticeMaxBackoff{60};
/// The fewest ms between two polls of one value.
inline constexpr std::chrono::milliseconds kNoticeMinPollInterval{250};
/// The largest body accepted: the values are a word ("TRUE", "MIGRATE_ON_HOST_MAINTENANCE").
inline constexpr size_t kMaxNoticeAnswerBytes = 4096;

class NoticeWatcher {
 public:
  /// Called on the loop's thread each time Current() changes.
  using Listener = std::function<void(const api::AgentNotice& notice)>;

  /// `metadata` is the server's IPV4:PORT (Check says whether it is usable).
  NoticeWatcher(EventLoop& loop, std::string metadata);
  NoticeWatcher(const NoticeWatcher&) = delete;
  NoticeWatcher& operator=(const NoticeWatcher&) = delete;
  ~NoticeWatcher();

  /// InvalidArgument when `metadata` is not IPV4:PORT (the agent resolves no names).
  static Status Check(const std::string& metadata);

  /// Starts the polls. REQUIRES: Check(metadata) is OK.
  void Start();
  void SetListener(Listener listener) { listener_ = std::move(listener); }
  const api::AgentNotice& Current() const { return notice_; }

 private:
  struct Poll;  // one value's long-poll
  void Send(Poll& poll);
  void OnAnswer(Poll& poll, Result<HttpResponse> answer);
  // A failed poll: its error, and the next try after the backoff.
  void Failed(Poll& poll, Status error);
  // Recomputes notice_ from the polls; tells the listener when it changed.
  void Update(bool values_changed);

  EventLoop& loop_;
  std::string metadata_;
  std::vector<std::unique_ptr<Poll>> polls_;
  api::AgentNotice notice_;
  bool ever_answered_ = false;  // the server answered once: its loss is worth a warning
  bool said_none_ = false;      // the log said once that no server answers
  Listener listener_;
};

}  // namespace tpufleet::agent
