// Internal to the fleet spec parser (fleet_spec*.cc): the helpers its files share.
// fleet_spec.cc parses the document's top level (fleet, provider, project, budget,
// users) and checks across node entries; fleet_spec_node.cc parses and expands one
// entry of `nodes:`; fleet_spec_document.cc checks the document's shape (one document,
// aliases that do not blow up). Include from those files only.
//
// Thread-safety: pure functions.
#pragma once

#include <chrono>
#include <map>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/catalog.h"
#include "core/fleet_spec.h"
#include "core/yaml_reader.h"
#include "util/status.h"
#include "util/strings.h"

namespace tpufleet::fleet_spec_internal {

using yaml::Field;

inline constexpr std::string_view kCatalogHint =
    "extend the catalog with --catalog FILE if it is out of date";

/// A value that is compared with known names (types, zones, choices). The cap keeps
/// "did you mean" (an edit distance against every candidate) cheap on hostile input.
inline constexpr size_t kMaxWordBytes = 128;

inline bool IsLower(char c) {
  return c >= 'a' && c <= 'z';
}
inline bool IsDigit(char c) {
  return c >= '0' && c <= '9';
}

/// Turns a location-free Status from a Check* function into one that points at `f`.
Status At(const Field& f, const Status& s);

/// A non-empty scalar of at most `max_bytes`.
Result<std::string> Word(const Field& f, size_t max_bytes = kMaxWordBytes);

/// The strings of a list, each with its own field (a single scalar is a list of one),
/// each at most `max_bytes` long.
Result<std::vector<std::pair<std::string, Field>>> StringItems(const Field& f, size_t max_bytes);

/// A duration above zero ("30m", "6h", "2d").
Result<std::chrono::seconds> PositiveDuration(const Field& f);

/// An enum's spellings in a spec (and in output), in the order a message lists them.
template <typename E>
using Spellings = std::span<const std::pair<std::string_view, E>>;

/// The one table of each enum's spellings: the parser reads them with Choice, the
/// *Name functions (fleet_spec.h) with SpellingOf.
inline constexpr std::pair<std::string_view, Provider> kProviderSpellings[] = {
    {"gcp-tpu", Provider::kGcpTpu},
    {"ssh-hosts", Provider::kSshHosts},
    {"emulator", Provider::kEmulator}};
inline constexpr std::pair<std::string_view, Capacity> kCapacitySpellings[] = {
    {"on-demand", Capacity::kOnDemand}, {"spot", Capacity::kSpot}, {"reserved", Capacity::kReserved}};
inline constexpr std::pair<std::string_view, DiskMode> kDiskModeSpellings[] = {
    {"read-only", DiskMode::kReadOnly}, {"read-write", DiskMode::kReadWrite}};
inline constexpr std::pair<std::string_view, IdleAction> kIdleActionSpellings[] = {
    {"delete", IdleAction::kDelete}, {"stop", IdleAction::kStop}};
inline constexpr std::pair<std::string_view, BudgetAction> kBudgetActionSpellings[] = {
    {"stop-creating", BudgetAction::kStopCreating},
    {"delete-spot", BudgetAction::kDeleteSpot},
    {"delete-all", BudgetAction::kDeleteAll}};

/// How `value` is spelled; "?" for a value the table lacks.
template <typename E>
std::string_view SpellingOf(Spellings<E> names, E value) {
  for (const auto& [name, v] : names) {
    if (v == value) {
      return name;
    }
  }
  return "?";
}

/// One of `names`, by its spelling in the spec, with a suggestion when it is none.
template <typename E>
Result<E> Choice(const Field& f, Spellings<E> names) {
  TPUFLEET_ASSIGN_OR_RETURN(std::string s, Word(f));
  std::vector<std::string> spellings;
  for (const auto& [name, value] : names) {
    if (name == s) {
      return value;
    }
    spellings.emplace_back(name);
  }
  return f.Error(QuoteForMessage(s) + " is not one of " + Join(spellings, ", ") +
                 DidYouMean(s, spellings));
}

/// Parses a `users:` list. `taken` maps names already given (fleet-wide users, when
/// parsing a node's) to their field path, so a name is given once per node.
Status ParseUsers(const Field& f, const std::map<std::string, std::string>& taken,
                  std::vector<UserSpec>* users);

/// Parses one entry of `nodes:` into `node`, defaults filled in and resolved against
/// `catalog`; its ids (name, or name-0 .. name-(count-1)) in node->names.
Status ParseNode(const Field& f, const FleetSpec& fleet, const Catalog& catalog,
                 const std::map<std::string, std::string>& fleet_users, NodeSpec* node);

/// Refuses documents that are more than one YAML document, or whose aliases make them
/// blow up when walked (a "billion laughs"), or that alias a node from inside itself.
/// REQUIRES: the first document of `text` parses (ParseDocument succeeded).
Status CheckDocumentShape(std::string_view text, std::string_view origin);

}  // namespace tpufleet::fleet_spec_internal
