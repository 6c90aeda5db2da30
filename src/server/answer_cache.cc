#include "server/answer_cache.h"

#include <algorithm>

namespace tpufleet::server {
namespace {

// The words, each ended by a NUL (which no word holds: argv comes from C strings and
// JSON strings are checked), after the person's name.
std::string KeyOf(const std::string& who, const std::vector<std::string>& argv) {
  std::string key = who;
  key.push_back('\0');
  for (const std::string& word : argv) {
    key += word;
    key.push_back('\0');
  }
  return key;
}

}  // namespace

bool Cacheable(const std::vector<std::string>& argv) {
  static const char* const kReports[] = {"cost", "jobs", "top"};
  return !argv.empty() && std::any_of(std::begin(kReports), std::end(kReports), [&](const char* c) {
    return argv[0] == c;
  }) && std::find(argv.begin(), argv.end(), "--json") != argv.end();
}

std::optional<AnswerCache::Answer> AnswerCache::Get(
    const Access& access, const std::vector<std::string>& argv, std::chrono::seconds max_age,
    const Clock& clock, const std::function<std::optional<api::CommandResult>()>& make) {
  std::string key = KeyOf(access.who(), argv);
  Clock::WallTime now = clock.Now();
  std::unique_lock lock(mu_);
  for (;;) {
    auto it = entries_.find(key);
    if (it == entries_.end()) {
      break;
    }
    const Entry& e = it->second;
    bool yours = e.answer && e.access.SameAs(access);
    if (yours && now - e.answer->made <= max_age) {
      return e.answer;
    }
    if (!e.making) {
      break;
    }
    // Being made anew: the one kept will do meanwhile (its Age says how old), so that
    // no asker holds a request thread waiting for a slow report; only the first
    // answer is waited for.
    if (yours) {
      return e.answer;
    }
    ++waiting_;
    made_.wait(lock);
    --waiting_;
  }
  entries_[key].making = true;
  lock.unlock();
  std::optional<api::CommandResult> result;
  try {
    result = make();
  } catch (...) {
    lock.lock();
    entries_[key].making = false;
    made_.notify_all();
    throw;
  }
  lock.lock();
  Entry& e = entries_[key];
  e.making = false;
  made_.notify_all();
  if (!result) {
    if (!e.answer) {
      entries_.erase(key);
    }
    return std::nullopt;
  }
  Answer answer{*std::move(result), clock.Now()};
  if (answer.result.exit_code == 0 && BytesOf(answer) <= kMaxCachedAnswerBytes) {
    Keep(key, access, answer);
  } else if (!e.answer) {
    entries_.erase(key);
  }
  return answer;
}

size_t AnswerCache::waiting() const {
  std::lock_guard lock(mu_);
  return waiting_;
}

void AnswerCache::Keep(const std::string& key, const Access& access, Answer answer) {
  Entry& e = entries_[key];
  if (e.answer) {
    bytes_ -= BytesOf(*e.answer);
  }
  bytes_ += BytesOf(answer);
  e.access = access;
  e.answer = std::move(answer);
  // The oldest answers go first; one being made again stays (its maker writes it).
  while (entries_.size() > kMaxCachedAnswers || bytes_ > kMaxCachedBytes) {
    auto oldest = entries_.end();
    for (auto it = entries_.begin(); it != entries_.end(); ++it) {
      if (it->first != key && !it->second.making && it->second.answer &&
          (oldest == entries_.end() || it->second.answer->made < oldest->second.answer->made)) {
        oldest = it;
      }
    }
    if (oldest == entries_.end()) {
      break;
    }
    bytes_ -= BytesOf(*oldest->second.answer);
    entries_.erase(oldest);
  }
}

size_t AnswerCache::size() const {
  std::lock_guard lock(mu_);
  return entries_.size();
}

size_t AnswerCache::bytes() const {
  std::lock_guard lock(mu_);
  return bytes_;
}

}  // namespace tpufleet::server
