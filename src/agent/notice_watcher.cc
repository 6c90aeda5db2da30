#include "agent/notice_watcher.h"

#include <algorithm>
#include <optional>

#include "agent/host/plain_http.h"
#include "core/fleet_spec.h"
#include "util/log.h"
#include "util/strings.h"

namespace tpufleet::agent {
namespace {

constexpr const char* kKeys[] = {"preempted", "maintenance-event"};

bool IsTokenChar(char c, bool lower_too) {
  return (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
         (lower_too && ((c >= 'a' && c <= 'z') || c == '-'));
}

// A word of at most 64 characters of the given kind.
bool IsToken(std::string_view s, bool lower_too) {
  return !s.empty() && s.size() <= 64 &&
         std::all_of(s.begin(), s.end(), [&](char c) { return IsTokenChar(c, lower_too); });
}

Status CheckValue(const std::string& key, const std::string& value) {
  bool ok = key == "preempted" ? value == "TRUE" || value == "FALSE" : IsToken(value, false);
  if (ok) {
    return Status::Ok();
  }
  return InternalError("instance/" + key + " answered " + QuoteForMessage(value.substr(0, 64)) +
                       (key == "preempted" ? ", not TRUE or FALSE" : ", not an event's name"));
}

}  // namespace

struct NoticeWatcher::Poll {
  Poll(EventLoop& loop, std::string k) : key(std::move(k)), get(loop) {}
  std::string key;                   // "preempted", "maintenance-event"
  host::LoopHttpGet get;
  std::string etag = "0";            // "0": no answer since the last error; answers at once
  std::optional<std::string> value;  // the last value the server gave
  Status error = Status::Ok();       // the last poll's failure
  bool answered = false;             // the last poll was answered
  Clock::MonoTime started{};
  std::chrono::seconds backoff{0};
  EventLoop::Id retry = 0;
};

NoticeWatcher::NoticeWatcher(EventLoop& loop, std::string metadata)
    : loop_(loop), metadata_(std::move(metadata)) {
  for (const char* key : kKeys) {
    polls_.push_back(std::make_unique<Poll>(loop_, key));
  }
}

NoticeWatcher::~NoticeWatcher() {
  for (auto& poll : polls_) {
    if (poll->retry != 0) {
      loop_.Remove(poll->retry);
    }
  }
}

Status NoticeWatcher::Check(const std::string& metadata) {
  Result<host::HttpTarget> target = host::ParseHttpTarget("http://" + metadata + "/");
  if (!target.ok() || metadata.find('/') != std::string::npos) {
    return InvalidArgumentError("--metadata " + QuoteForMessage(metadata) +
                                ": expected IPV4:PORT (the agent resolves no names), like " +
                                std::string(kDefaultMetadataAddress));
  }
  return Status::Ok();
}

void NoticeWatcher::Start() {
  for (auto& poll : polls_) {
    Send(*poll);
  }
}

void NoticeWatcher::Send(Poll& poll) {
  bool first = poll.etag == "0";
  HttpRequest r;
  r.url = "http://" + metadata_ + "/computeMetadata/v1/instance/" + poll.key +
          "?wait_for_change=true&last_etag=" + poll.etag +
          "&timeout_sec=" + std::to_string(kNoticeLongPoll.count());
  r.headers = {{"Metadata-Flavor", "Google"}, {"Host", "metadata.google.internal"}};
  r.timeout = first ? kNoticeFirstAnswer
                    : std::chrono::duration_cast<std::chrono::milliseconds>(kNoticeLongPoll +
                                                                            kNoticeLongPollSlack);
  r.max_response_bytes = kMaxNoticeAnswerBytes;
  poll.started = loop_.Now();
  poll.get.Start(std::move(r), [this, &poll](Result<HttpResponse> answer) {
    OnAnswer(poll, std::move(answer));
  });
}

void NoticeWatcher::OnAnswer(Poll& poll, Result<HttpResponse> answer) {
  if (!answer.ok()) {
    Failed(poll, answer.status());
    return;
  }
  if (answer->status != 200) {
    Failed(poll, UnavailableError("instance/" + poll.key + ": HTTP " +
                                  std::to_string(answer->status)));
    return;
  }
  std::string value(Trim(answer->body));
  if (Status valid = CheckValue(poll.key, value); !valid.ok()) {
    Failed(poll, valid);
    return;
  }
  std::string etag = answer->headers["etag"];
  if (!IsToken(etag, true)) {
    Failed(poll, InternalError("instance/" + poll.key + " answered without a usable ETag"));
    return;
  }
  bool changed = poll.value != value;
  poll.value = std::move(value);
  poll.etag = std::move(etag);
  poll.error = Status::Ok();
  poll.answered = true;
  poll.backoff = std::chrono::seconds(0);
  Update(changed);
  Clock::MonoTime next = poll.started + kNoticeMinPollInterval;
  if (loop_.Now() >= next) {
    Send(poll);
    return;
  }
  poll.retry = loop_.At(next, [this, &poll](Clock::MonoTime) {
    poll.retry = 0;
    Send(poll);
  });
}

void NoticeWatcher::Failed(Poll& poll, Status error) {
  // The error names the value, not the query of the poll that failed.
  std::string message = error.message();
  if (size_t q = message.find('?'); q != std::string::npos && StartsWith(message, "http://")) {
    message.erase(q, message.find(':', q) - q);
  }
  poll.error = Status(error.code(), message);
  poll.answered = false;
  poll.etag = "0";
  poll.backoff = std::min<std::chrono::seconds>(
      poll.backoff.count() == 0 ? std::chrono::seconds(1) : poll.backoff * 2, kNoticeMaxBackoff);
  poll.retry = loop_.After(poll.backoff, [this, &poll](Clock::MonoTime) {
    poll.retry = 0;
    Send(poll);
  });
  Update(false);
}

void NoticeWatcher::Update(bool values_changed) {
  api::AgentNotice n = notice_;
  bool answering = false;
  std::vector<std::string> errors;
  for (const auto& poll : polls_) {
    answering = answering || poll->answered;
    if (!poll->error.ok()) {
      errors.push_back(poll->error.message());
    }
    if (poll->value && poll->key == "preempted") {
      n.preempted = *poll->value == "TRUE";
    } else if (poll->value) {
      n.maintenance_event = *poll->value;
    }
  }
  n.source = answering ? "metadata" : "none";
  n.error = Join(errors, "; ");
  if (values_changed) {
    n.changed_unix_ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                            loop_.clock().Now().time_since_epoch())
                            .count();
  }
  if (n.source != notice_.source || (!answering && !said_none_)) {
    // Only the change between answering and not is logged, whatever the retries.
    if (answering) {
      Log(LogLevel::kInfo, "notices: the metadata server at " + metadata_ + " answers");
    } else if (ever_answered_) {
      Log(LogLevel::kWarn, "notices: the metadata server at " + metadata_ +
                               " stopped answering (" + n.error + "); trying again");
    } else if (!said_none_) {
      Log(LogLevel::kInfo, "notices: no metadata server answers at " + metadata_ + " (" +
                               n.error + "); notices are source none, trying again");
    }
    said_none_ = said_none_ || !answering;
  }
  ever_answered_ = ever_answered_ || answering;
  if (n == notice_) {
    return;
  }
  notice_ = std::move(n);
  if (listener_) {
    listener_(notice_);
  }
}

}  // namespace tpufleet::agent
