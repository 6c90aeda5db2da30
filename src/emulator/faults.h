// Faults the emulator injects on command: the failures the real Cloud TPU service
// shows (DESIGN.md "The emulator and the test hosts"), as values and the pure logic
// that answers "is this zone stocked out now?", "does this request fail in a storm?".
//
// A FaultSet only stores and answers; the ApiServer (api_server.h) turns answers into
// behaviour — a stocked-out create fails its operation with code 8, a preemption
// notifies the node's workers and later halts them — and parses the admin requests
// (POST /emulator/v1/faults, see ParseFault) into Faults.
//
// Kinds, and what they do in the ApiServer:
//   stockout     zone (+ family): creates and starts there return an operation that
//                fails with code 8 "There is no more capacity in the zone …"; queued
//                resources wait (and fail when their valid-until passes).
//   quota        region (+ family): creates there get a synchronous HTTP 429.
//   storm        a fraction `rate` of API calls fail with one of `http_codes`, drawn
//                from a generator seeded with `seed` (the same seed fails the same calls).
//   preempt      node: workers get the preemption notice, then after `notice` they halt
//                and the node is PREEMPTED (spot and preemptible nodes only).
//   maintenance  node: workers get the maintenance notice, then after `notice` the node
//                is UNHEALTHY_MAINTENANCE while its workers halt and boot with new
//                addresses, then HEALTHY again.
//   cutoff       node + worker: the worker is cut off the network until the fault ends.
//   device       node + worker + device: the worker's chip `device` (its PCI entry and
//                /dev node) is gone until the fault ends, as after a failed chip.
//   slow         every operation started while it lasts takes `factor` times longer.
//   denied       every Cloud TPU API call gets 403 PERMISSION_DENIED, as when the
//                caller's role is taken away (the admin routes and /token still answer).
//
// Stockout, quota, storm, cutoff, device, slow and denied last for `duration`, or until
// removed when it is not given. Preempt and maintenance are events: they stay listed until they happen.
//
// Thread-safety: none; the ApiServer calls it under its mutex.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include "util/clock.h"
#include "util/status.h"

namespace tpufleet::emulator {

enum class FaultKind {
  kStockout,
  kQuota,
  kStorm,
  kPreempt,
  kMaintenance,
  kCutOff,
  kDevice,
  kSlow,
  kDenied
};

/// "stockout", "quota", "storm", "preempt", "maintenance", "cutoff", "device", "slow",
/// "denied".
std::string_view FaultKindName(FaultKind kind);
/// Every kind's name, as ParseFault reads it: "stockout", "quota", …
std::vector<std::string> FaultKindNames();

struct Fault {
  std::string id;  // "fault-1", given by FaultSet::Add
  FaultKind kind = FaultKind::kStockout;
  std::string zone;             // stockout
  std::string region;           // quota
  std::string family;           // stockout, quota: catalog family ("v4"); "" means every family
  std::string node;             // preempt, maintenance, cutoff, device: the node's full name
  int worker = 0;               // cutoff, device: the worker index
  int device = 0;               // device: the chip's index on the worker (/dev/accelN)
  double rate = 0;              // storm: fraction of API calls that fail, in (0, 1]
  std::vector<int> http_codes;  // storm: drawn uniformly; default 429, 500, 503
  uint64_t seed = 1;            // storm
  double factor = 1;            // slow: > 0
  // How long the fault lasts; nullopt: until it is removed (events: until they happen).
  std::optional<std::chrono::milliseconds> duration;
  // preempt, maintenance: time from the notice to the event; nullopt: the config's.
  std::optional<std::chrono::milliseconds> notice;

  // Set by FaultSet::Add.
  Clock::WallTime created;  // shown in status
  Clock::MonoTime started;
  std::optional<Clock::MonoTime> ends;  // started + duration
};

/// Parses the JSON body of POST /emulator/v1/faults:
///   {"kind":"stockout","zone":"us-central1-c","family":"v5litepod","duration":"5m"}
///   {"kind":"quota","region":"us-east5","family":"v6e"}
///   {"kind":"storm","rate":0.3,"httpCodes":[429,503],"seed":7,"duration":"30s"}
///   {"kind":"preempt","node":"projects/p/locations/z/nodes/n","notice":"2s"}
///   {"kind":"maintenance","node":"…","notice":"10s"}
///   {"kind":"cutoff","node":"…","worker":1,"duration":"1m"}
///   {"kind":"device","node":"…","worker":1,"device":2}
///   {"kind":"slow","factor":10}
///   {"kind":"denied","duration":"30s"}
/// Durations: "500ms", "1.5s", "30s", "5m", "1h". InvalidArgument naming the field.
Result<Fault> ParseFault(std::string_view json_body);

/// Parses "500ms", "1.5s", "90s", "5m", "1h30m" (util ParseDuration plus ms and
/// fractional seconds).
Result<std::chrono::milliseconds> ParseFaultDuration(std::string_view text);

class FaultSet {
 public:
  /// Adds `fault`, starting now; returns its id.
  std::string Add(Fault fault, Clock::WallTime wall_now, Clock::MonoTime now);
  /// Removes and returns the fault `id`; nullopt when there is none.
  std::optional<Fault> Remove(std::string_view id);
  /// Removes every fault and returns them.
  std::vector<Fault> Clear();
  /// Removes and returns the faults whose duration has passed.
  std::vector<Fault> Expire(Clock::MonoTime now);

  const std::vector<Fault>& faults() const { return faults_; }
  const Fault* Find(std::string_view id) const;

  /// The active stockout of `family` in `zone`, or nullptr.
  const Fault* Stockout(std::string_view zone, std::string_view family, Clock::MonoTime now) const;
  /// The active quota fault of `family` in `region`, or nullptr.
  const Fault* Quota(std::string_view region, std::string_view family, Clock::MonoTime now) const;
  /// For one API call: the HTTP status it fails with in an active storm, or nullopt.
  /// Draws from the storms' generators, so the sequence of answers is fixed by seeds.
  std::optional<int> DrawStorm(Clock::MonoTime now);
  /// The product of the factors of the active slow faults (1 when none).
  double SlowFactor(Clock::MonoTime now) const;
  /// Whether a denied fault is active: every API call gets 403.
  bool Denied(Clock::MonoTime now) const;

 private:
  bool Active(const Fault& f, Clock::MonoTime now) const;
  /// The first active fault of `kind` whose `place` (&Fault::zone, &Fault::region) is
  /// `where` and whose family, if it names one, is `family`.
  const Fault* FirstActive(FaultKind kind, std::string Fault::*place, std::string_view where,
                           std::string_view family, Clock::MonoTime now) const;

  std::vector<Fault> faults_;
  std::vector<std::mt19937_64> storm_rngs_;  // parallel to faults_ (unused for other kinds)
  uint64_t next_id_ = 1;
};

}  // namespace tpufleet::emulator
