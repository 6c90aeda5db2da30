// ApiPacer: serve's budget of cloud API calls, a token bucket in calls per minute.
//
// Every call serve makes to a cloud (a zone's list, and each call of a recovery: delete,
// create, the polls) is counted and debits the bucket (CountingProviders below does
// both, wrapping the World's providers). Only the pass's listings ask before calling
// (MayCall): a recovery never waits for the bucket, it drives it below zero, and the
// next passes list fewer zones until the bucket refills. A zone not listed in a pass
// keeps what its last listing said (NodeFacts::listed is false for its nodes), and the
// next pass lists the zones that waited longest first, so every zone is listed in turn
// however low the cap is.
//
// Why a cap at all: the Cloud TPU API's quotas are per project and per minute (the
// create rate, `tpu.googleapis.com/qps/create`, answers HTTP 429 "Maximum number of
// CreateNode requests per minute": reference/tpu-api.md), shared with the users' own
// `tpufleet` commands and gcloud. serve is the one client that calls all day, so it
// keeps itself well under them.
//
// Thread-safety: every method may be called from any thread (the providers' calls come
// from the loop, and a metrics round's thread makes none, but the counters are read by
// the HTTP server's snapshot).
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>

#include "control/world.h"
#include "provider/provider.h"
#include "util/clock.h"

namespace tpufleet {

/// serve's default cap: two calls a second leaves most of a project's per-minute read
/// quota to its users, and lists 10 zones every 5 s pass with room for a recovery.
inline constexpr int kDefaultApiCallsPerMinute = 120;
/// The bucket holds at most this much of a minute's calls: after a quiet spell a pass
/// may list every zone at once, never a minute's worth in a burst.
inline constexpr std::chrono::seconds kApiBurst{10};

class ApiPacer {
 public:
  /// REQUIRES: calls_per_minute > 0. The bucket starts full.
  ApiPacer(Clock& clock, int calls_per_minute);
  ApiPacer(const ApiPacer&) = delete;
  ApiPacer& operator=(const ApiPacer&) = delete;

  /// Counts `calls` made (or about to be made) and debits them; the bucket may go
  /// below zero.
  void Spend(int calls = 1);
  /// Whether the bucket holds a call now: a listing may be made (and then Spends it).
  bool MayCall();
  /// Calls counted since the pacer was made.
  int64_t calls() const;
  /// What the bucket holds now (negative after a recovery's burst).
  double tokens() const;

 private:
  void Refill();  // REQUIRES: mu_ held

  Clock& clock_;
  const double per_second_;
  const double burst_;
  mutable std::mutex mu_;
  double tokens_;                // guarded by mu_
  Clock::MonoTime refilled_;     // guarded by mu_
  int64_t calls_ = 0;            // guarded by mu_
};

/// The World's providers, each wrapped so that every call it makes is counted by (and
/// debits) `pacer`: the ProviderSource serve's World gets.
class CountingProviders final : public ProviderSource {
 public:
  CountingProviders(ProviderSource& inner, ApiPacer& pacer);
  ~CountingProviders() override;

  Result<CloudProvider*> ForFleet(const FleetSpec& fleet) override;
  Result<CloudProvider*> ForRecord(const NodeRecord& record) override;

 private:
  class Counting;
  CloudProvider* Wrap(CloudProvider* inner);

  ProviderSource& inner_;
  ApiPacer& pacer_;
  std::mutex mu_;
  std::map<CloudProvider*, std::unique_ptr<Counting>> wrapped_;  // guarded by mu_
};

}  // namespace tpufleet
