// FakeSshRunner: an SshRunner for unit tests that runs nothing. It records every
// (alias, script), answers with exit 0 and no output, and can be told to refuse the
// first N connections to each alias (Unavailable, as ssh says while a VM boots) or to
// make every script but the "true" probe exit non-zero on one alias (a failing setup),
// or every run on one alias fail with a given Status.
//
// Thread-safety: a mutex guards it.
#pragma once

#include <algorithm>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "ssh/runner.h"

namespace tpufleet {

class FakeSshRunner final : public SshRunner {
 public:
  struct Call {
    std::string alias;
    std::string script;
  };

  Result<ProgramResult> Run(std::string_view alias, std::string_view script,
                            std::chrono::milliseconds) override {
    std::lock_guard<std::mutex> l(mu_);
    std::string a(alias);
    calls_.push_back({a, std::string(script)});
    if (auto it = errors_.find(a); it != errors_.end()) {
      return it->second;
    }
    if (refusals_[a]++ < refuse_first_) {
      return UnavailableError("ssh: connect to host " + a + " port 22: Connection refused");
    }
    if (auto it = failing_.find(a); it != failing_.end() && script != "true") {
      return it->second;
    }
    return ProgramResult{0, ""};
  }

  /// The first `n` runs on each alias fail with Unavailable.
  void RefuseFirst(int n) {
    std::lock_guard<std::mutex> l(mu_);
    refuse_first_ = n;
  }
  /// Every run on `alias` fails with `status` (a host key that fails verification).
  void FailRunsOn(const std::string& alias, Status status) {
    std::lock_guard<std::mutex> l(mu_);
    errors_[alias] = std::move(status);
  }
  /// How many runs there were on `alias`.
  int RunsOn(std::string_view alias) const {
    return Count([&](const Call& c) { return c.alias == alias; });
  }
  /// Scripts other than the "true" probe exit `exit_code` on `alias`, printing `output`.
  void FailScriptsOn(const std::string& alias, int exit_code, std::string output) {
    std::lock_guard<std::mutex> l(mu_);
    failing_[alias] = ProgramResult{exit_code, std::move(output)};
  }

  std::vector<Call> calls() const {
    std::lock_guard<std::mutex> l(mu_);
    return calls_;
  }
  /// How many runs of exactly `script` there were (on any alias).
  int RunsOf(std::string_view script) const {
    return Count([&](const Call& c) { return c.script == script; });
  }
  /// How many runs had a script containing `part` (setup arrives wrapped).
  int RunsWith(std::string_view part) const {
    return Count([&](const Call& c) { return c.script.find(part) != std::string::npos; });
  }

 private:
  // How many calls `match` says yes to.
  int Count(const std::function<bool(const Call&)>& match) const {
    std::lock_guard<std::mutex> l(mu_);
    return static_cast<int>(std::count_if(calls_.begin(), calls_.end(), match));
  }

  mutable std::mutex mu_;
  std::vector<Call> calls_;                       // guarded by mu_
  std::map<std::string, int> refusals_;           // guarded by mu_: runs so far per alias
  std::map<std::string, ProgramResult> failing_;  // guarded by mu_
  std::map<std::string, Status> errors_;          // guarded by mu_
  int refuse_first_ = 0;                          // guarded by mu_
};

}  // namespace tpufleet
