// FakeTokenSource: a TokenSource for unit tests that hands out a fixed token, or a
// scripted error, and counts the calls and the refusals.
//
// Thread-safety: a mutex guards it.
#pragma once

#include <mutex>
#include <string>
#include <utility>

#include "provider/gcp_credentials.h"

namespace tpufleet {

class FakeTokenSource final : public TokenSource {
 public:
  explicit FakeTokenSource(std::string token = "ya29.test") : token_(std::move(token)) {}

  Result<std::string> AccessToken() override {
    std::lock_guard<std::mutex> l(mu_);
    ++calls_;
    if (!error_.ok()) {
      return error_;
    }
    return token_;
  }
  std::string Describe() const override { return "test credentials"; }
  void Refused() override {
    std::lock_guard<std::mutex> l(mu_);
    ++refused_;
  }

  /// Every later AccessToken fails with `error` (OK: succeeds again).
  void Fail(Status error) {
    std::lock_guard<std::mutex> l(mu_);
    error_ = std::move(error);
  }
  int calls() const {
    std::lock_guard<std::mutex> l(mu_);
    return calls_;
  }
  /// How many times the API refused the token (Refused).
  int refused() const {
    std::lock_guard<std::mutex> l(mu_);
    return refused_;
  }

 private:
  mutable std::mutex mu_;
  std::string token_;  // guarded by mu_
  Status error_;       // guarded by mu_
  int calls_ = 0;      // guarded by mu_
  int refused_ = 0;    // guarded by mu_
};

}  // namespace tpufleet
