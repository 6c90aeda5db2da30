#include "emulator/faults.h"

#include <algorithm>
#include <cmath>
#include <set>

#include <nlohmann/json.hpp>

#include "util/enum_names.h"
#include "util/strings.h"

namespace tpufleet::emulator {

using Json = nlohmann::json;

namespace {

constexpr EnumName<FaultKind> kFaultKinds[] = {
    {FaultKind::kStockout, "stockout"}, {FaultKind::kQuota, "quota"},
    {FaultKind::kStorm, "storm"},       {FaultKind::kPreempt, "preempt"},
    {FaultKind::kMaintenance, "maintenance"}, {FaultKind::kCutOff, "cutoff"},
    {FaultKind::kDevice, "device"},     {FaultKind::kSlow, "slow"},
    {FaultKind::kDenied, "denied"}};

}  // namespace

std::string_view FaultKindName(FaultKind kind) {
  return NameIn(kFaultKinds, kind);
}

std::vector<std::string> FaultKindNames() {
  return NamesIn(kFaultKinds);
}

Result<std::chrono::milliseconds> ParseFaultDuration(std::string_view text) {
  using std::chrono::milliseconds;
  Status bad = InvalidArgumentError("invalid duration \"" + std::string(text) +
                                    "\": expected e.g. 500ms, 1.5s, 30s, 5m or 1h");
  if (text.size() > 2 && text.substr(text.size() - 2) == "ms") {
    long long ms = 0;
    if (!ParseInt(text.substr(0, text.size() - 2), &ms)) {
      return bad;
    }
    return milliseconds(ms);
  }
  if (text.size() > 1 && text.back() == 's' && text.find('.') != std::string_view::npos) {
    double s = 0;
    if (!ParseDouble(text.substr(0, text.size() - 1), &s) || s < 0) {
      return bad;
    }
    return milliseconds(static_cast<long long>(std::llround(s * 1000)));
  }
  Result<std::chrono::seconds> d = ParseDuration(text);
  if (!d.ok()) {
    return bad;
  }
  return std::chrono::duration_cast<milliseconds>(*d);
}

namespace {

// A worker or device index beyond this is no index (and would not fit an int).
constexpr uint64_t kMaxIndex = 1u << 20;

Result<std::string> StringField(const Json& j, const char* key, bool required) {
  if (!j.contains(key) || j[key].is_null()) {
    if (required) {
      return InvalidArgumentError(std::string("fault: field \"") + key + "\" is required");
    }
    return std::string();
  }
  if (!j[key].is_string() || j[key].get<std::string>().empty()) {
    return InvalidArgumentError(std::string("fault: field \"") + key +
                                "\": expected a non-empty string");
  }
  return j[key].get<std::string>();
}

Result<std::optional<std::chrono::milliseconds>> DurationField(const Json& j, const char* key) {
  if (!j.contains(key) || j[key].is_null()) {
    return std::optional<std::chrono::milliseconds>();
  }
  if (j[key].is_number()) {  // bare seconds
    double s = j[key].get<double>();
    if (s < 0) {
      return InvalidArgumentError(std::string("fault: field \"") + key + "\": expected a duration");
    }
    return std::optional(std::chrono::milliseconds(static_cast<long long>(std::llround(s * 1000))));
  }
  if (!j[key].is_string()) {
    return InvalidArgumentError(std::string("fault: field \"") + key +
                                "\": expected a duration like \"30s\"");
  }
  Result<std::chrono::milliseconds> d = ParseFaultDuration(j[key].get<std::string>());
  if (!d.ok()) {
    return d.status().WithContext(std::string("fault: field \"") + key + "\"");
  }
  return std::optional(*d);
}

Result<Fault> ParseFaultJson(const Json& j) {
  if (!j.is_object()) {
    return InvalidArgumentError("fault: expected a JSON object");
  }
  static const std::set<std::string> kKeys = {"kind",   "zone",   "region",   "family",
                                              "node",   "worker", "device",   "rate",
                                              "httpCodes", "seed", "factor", "duration",
                                              "notice"};
  for (const auto& [key, value] : j.items()) {
    if (!kKeys.count(key)) {
      return InvalidArgumentError("fault: unknown field \"" + key + "\"");
    }
  }
  Fault f;
  TPUFLEET_ASSIGN_OR_RETURN(std::string kind, StringField(j, "kind", true));
  std::optional<FaultKind> known = ValueIn(kFaultKinds, kind);
  if (!known) {
    std::vector<std::string> names = FaultKindNames();
    return InvalidArgumentError("fault: unknown kind \"" + kind + "\"" + DidYouMean(kind, names) +
                                "; kinds: " + Join(names, ", "));
  }
  f.kind = *known;
  TPUFLEET_ASSIGN_OR_RETURN(f.family, StringField(j, "family", false));
  TPUFLEET_ASSIGN_OR_RETURN(f.duration, DurationField(j, "duration"));
  TPUFLEET_ASSIGN_OR_RETURN(f.notice, DurationField(j, "notice"));
  switch (f.kind) {
    case FaultKind::kStockout: {
      TPUFLEET_ASSIGN_OR_RETURN(f.zone, StringField(j, "zone", true));
      break;
    }
    case FaultKind::kQuota: {
      TPUFLEET_ASSIGN_OR_RETURN(f.region, StringField(j, "region", true));
      break;
    }
    case FaultKind::kStorm: {
      if (!j.contains("rate") || !j["rate"].is_number()) {
        return InvalidArgumentError("fault: storm needs \"rate\", a number in (0, 1]");
      }
      f.rate = j["rate"].get<double>();
      if (!(f.rate > 0 && f.rate <= 1)) {
        return InvalidArgumentError("fault: \"rate\" must be in (0, 1]");
      }
      f.http_codes = {429, 500, 503};
      if (j.contains("httpCodes")) {
        if (!j["httpCodes"].is_array() || j["httpCodes"].empty()) {
          return InvalidArgumentError(
              "fault: \"httpCodes\" must be a non-empty list such as [429, 503]");
        }
        f.http_codes.clear();
        for (const Json& c : j["httpCodes"]) {
          if (!c.is_number_integer() || c.get<int>() < 400 || c.get<int>() > 599) {
            return InvalidArgumentError(
                "fault: \"httpCodes\": expected HTTP error statuses (400-599)");
          }
          f.http_codes.push_back(c.get<int>());
        }
      }
      if (j.contains("seed")) {
        if (!j["seed"].is_number_unsigned()) {
          return InvalidArgumentError("fault: \"seed\" must be a whole number");
        }
        f.seed = j["seed"].get<uint64_t>();
      }
      break;
    }
    case FaultKind::kPreempt:
    case FaultKind::kMaintenance: {
      TPUFLEET_ASSIGN_OR_RETURN(f.node, StringField(j, "node", true));
      if (f.duration) {
        return InvalidArgumentError("fault: " + kind +
                                    " is an event; give \"notice\", not \"duration\"");
      }
      break;
    }
    case FaultKind::kCutOff:
    case FaultKind::kDevice: {
      TPUFLEET_ASSIGN_OR_RETURN(f.node, StringField(j, "node", true));
      if (f.kind == FaultKind::kCutOff && j.contains("device")) {
        return InvalidArgumentError("fault: \"device\" belongs to device faults");
      }
      for (auto [key, field] : {std::pair<const char*, int*>{"worker", &f.worker},
                                {"device", &f.device}}) {
        if (!j.contains(key)) {
          continue;
        }
        if (!j[key].is_number_unsigned() || j[key].get<uint64_t>() > kMaxIndex) {
          return InvalidArgumentError(std::string("fault: \"") + key + "\" must be a " + key +
                                      " index (0, 1, …)");
        }
        *field = j[key].get<int>();
      }
      break;
    }
    case FaultKind::kSlow: {
      if (!j.contains("factor") || !j["factor"].is_number() || !(j["factor"].get<double>() > 0)) {
        return InvalidArgumentError(
            "fault: slow needs \"factor\", a number above 0 (10 = ten times slower)");
      }
      f.factor = j["factor"].get<double>();
      break;
    }
    case FaultKind::kDenied:
      break;
  }
  return f;
}

}  // namespace

Result<Fault> ParseFault(std::string_view json_body) {
  Json j = Json::parse(json_body, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) {
    return InvalidArgumentError("fault: the body is not valid JSON");
  }
  return ParseFaultJson(j);
}

std::string FaultSet::Add(Fault fault, Clock::WallTime wall_now, Clock::MonoTime now) {
  fault.id = "fault-" + std::to_string(next_id_++);
  fault.created = wall_now;
  fault.started = now;
  if (fault.duration) {
    fault.ends = now + *fault.duration;
  }
  storm_rngs_.emplace_back(fault.seed);
  faults_.push_back(std::move(fault));
  return faults_.back().id;
}

std::optional<Fault> FaultSet::Remove(std::string_view id) {
  for (size_t i = 0; i < faults_.size(); ++i) {
    if (faults_[i].id == id) {
      Fault f = std::move(faults_[i]);
      faults_.erase(faults_.begin() + static_cast<long>(i));
      storm_rngs_.erase(storm_rngs_.begin() + static_cast<long>(i));
      return f;
    }
  }
  return std::nullopt;
}

std::vector<Fault> FaultSet::Clear() {
  std::vector<Fault> out = std::move(faults_);
  faults_.clear();
  storm_rngs_.clear();
  return out;
}

std::vector<Fault> FaultSet::Expire(Clock::MonoTime now) {
  std::vector<Fault> out;
  for (size_t i = 0; i < faults_.size();) {
    if (faults_[i].ends && now >= *faults_[i].ends) {
      out.push_back(std::move(faults_[i]));
      faults_.erase(faults_.begin() + static_cast<long>(i));
      storm_rngs_.erase(storm_rngs_.begin() + static_cast<long>(i));
    } else {
      ++i;
    }
  }
  return out;
}

const Fault* FaultSet::Find(std::string_view id) const {
  for (const Fault& f : faults_) {
    if (f.id == id) {
      return &f;
    }
  }
  return nullptr;
}

bool FaultSet::Active(const Fault& f, Clock::MonoTime now) const {
  return now >= f.started && (!f.ends || now < *f.ends);
}

const Fault* FaultSet::FirstActive(FaultKind kind, std::string Fault::*place,
                                   std::string_view where, std::string_view family,
                                   Clock::MonoTime now) const {
  for (const Fault& f : faults_) {
    if (f.kind == kind && Active(f, now) && f.*place == where &&
        (f.family.empty() || f.family == family)) {
      return &f;
    }
  }
  return nullptr;
}

const Fault* FaultSet::Stockout(std::string_view zone, std::string_view family,
                                Clock::MonoTime now) const {
  return FirstActive(FaultKind::kStockout, &Fault::zone, zone, family, now);
}

const Fault* FaultSet::Quota(std::string_view region, std::string_view family,
                             Clock::MonoTime now) const {
  return FirstActive(FaultKind::kQuota, &Fault::region, region, family, now);
}

std::optional<int> FaultSet::DrawStorm(Clock::MonoTime now) {
  for (size_t i = 0; i < faults_.size(); ++i) {
    const Fault& f = faults_[i];
    if (f.kind != FaultKind::kStorm || !Active(f, now)) {
      continue;
    }
    std::mt19937_64& rng = storm_rngs_[i];
    // Two draws per call whatever the outcome, so the answer to call k depends only
    // on the seed and k.
    double u = static_cast<double>(rng() >> 11) * 0x1.0p-53;
    uint64_t pick = rng();
    if (u < f.rate) {
      return f.http_codes[pick % f.http_codes.size()];
    }
  }
  return std::nullopt;
}

double FaultSet::SlowFactor(Clock::MonoTime now) const {
  double factor = 1;
  for (const Fault& f : faults_) {
    if (f.kind == FaultKind::kSlow && Active(f, now)) {
      factor *= f.factor;
    }
  }
  return factor;
}

bool FaultSet::Denied(Clock::MonoTime now) const {
  return std::any_of(faults_.begin(), faults_.end(), [&](const Fault& f) {
    return f.kind == FaultKind::kDenied && Active(f, now);
  });
}

}  // namespace tpufleet::emulator
