// AnswerCache: the answers of the read-only commands a dashboard asks again and again,
// kept a few seconds, so that the many pages a lab leaves open cost the server one run
// per person and question, not one per page (bench/RESULTS.md, "The dashboard").
//
// A request opts in with max_age_seconds (api/remote_command.h); the CLI never does, so
// what a person types always runs now. Only commands that print a report and end, and
// change nothing the caller would miss, are answered from here (Cacheable): `cost`,
// `jobs` and `top` with --json. An answer is kept per person and words, and given only
// to the same person still allowed exactly the same (Access::SameAs: a role changed or
// a node selector narrowed runs the command anew). Only answers of a command that
// succeeded are kept.
//
// Bounded: kMaxCachedAnswers answers and kMaxCachedBytes in all, the oldest made
// dropped first; an answer over kMaxCachedAnswerBytes is not kept.
//
// Thread-safety: Get may be called from many threads at once. While one caller makes an
// answer, the others asking for the same one are given the answer kept, however old
// (their Age header says how old: a dashboard polls again soon), or wait for the one
// being made when none is kept yet; the command is never run twice at once for them.
#pragma once

#include <chrono>
#include <condition_variable>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "api/remote_command.h"
#include "control/access.h"
#include "util/clock.h"

namespace tpufleet::server {

inline constexpr size_t kMaxCachedAnswers = 256;
inline constexpr size_t kMaxCachedBytes = 64 << 20;
inline constexpr size_t kMaxCachedAnswerBytes = 8 << 20;

/// Whether the command `argv` may be answered from the cache: a report that ends.
bool Cacheable(const std::vector<std::string>& argv);

class AnswerCache {
 public:
  /// A command's whole answer, and when it was made (the command ended).
  struct Answer {
    api::CommandResult result;
    Clock::WallTime made{};
  };

  /// The answer to `argv` for `access` made at most `max_age` before now (`clock`'s);
  /// the one kept, older, while another caller makes it anew; else `make`'s (run on
  /// this thread; made when it returns), kept when it succeeded.
  /// `make` gives nullopt when it could not run the command at all (no command slot
  /// free): nothing is kept, and nullopt is returned.
  std::optional<Answer> Get(const Access& access, const std::vector<std::string>& argv,
                            std::chrono::seconds max_age, const Clock& clock,
                            const std::function<std::optional<api::CommandResult>()>& make);

  /// Answers kept now, and their bytes (for tests and the bench).
  size_t size() const;
  size_t bytes() const;
  /// Askers waiting now for an answer being made for the first time (for tests).
  size_t waiting() const;

 private:
  struct Entry {
    Access access = Access::Everything("");
    std::optional<Answer> answer;  // none while being made for the first time
    bool making = false;
  };

  static size_t BytesOf(const Answer& a) { return a.result.out.size() + a.result.err.size(); }
  void Keep(const std::string& key, const Access& access, Answer answer);  // mu_ held

  mutable std::mutex mu_;
  std::condition_variable made_;
  std::map<std::string, Entry> entries_;  // by person and words
  size_t bytes_ = 0;
  size_t waiting_ = 0;
};

}  // namespace tpufleet::server
