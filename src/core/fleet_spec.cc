#include "core/fleet_spec.h"

#include <algorithm>
#include <set>
#include <span>
#include <sstream>
#include <utility>

#include <yaml-cpp/eventhandler.h>
#include <yaml-cpp/exceptions.h>
#include <yaml-cpp/parser.h>

#include "core/yaml_reader.h"
#include "util/strings.h"

namespace tpufleet {
namespace {

using yaml::Field;

constexpr std::string_view kCatalogHint =
    "extend the catalog with --catalog FILE if it is out of date";

bool IsLower(char c) {
  return c >= 'a' && c <= 'z';
}
bool IsDigit(char c) {
  return c >= '0' && c <= '9';
}

// Turns a location-free Status from a Check* function into one that points at `f`.
Status At(const Field& f, const Status& s) {
  return s.ok() ? s : f.Error(s.message());
}

// A value that is compared with known names (types, zones, choices). The cap keeps
// "did you mean" (an edit distance against every candidate) cheap on hostile input.
constexpr size_t kMaxWordBytes = 128;

Result<std::string> Word(const Field& f, size_t max_bytes = kMaxWordBytes) {
  TPUFLEET_ASSIGN_OR_RETURN(std::string s, f.String());
  if (s.size() > max_bytes) {
    return f.Error("expected at most " + std::to_string(max_bytes) + " characters, found " +
                   std::to_string(s.size()));
  }
  return s;
}

// Errors about the document as a whole need a location; yaml-cpp marks are 0-based.
std::string Where(std::string_view origin, const YAML::Mark& mark) {
  return std::string(origin) + ":" + std::to_string(mark.line + 1) + ":" +
         std::to_string(mark.column + 1);
}

// Counts what a document would grow to if its aliases were copied out, without copying:
// a node's size is 1 plus its children's (a scalar adds its bytes), an alias adds the
// size of the node it names. Sizes saturate just past the limit, so nothing overflows.
class ExpansionCounter : public YAML::EventHandler {
 public:
  explicit ExpansionCounter(size_t limit) : limit_(limit) {}

  bool over_limit() const { return over_; }
  const YAML::Mark& over_mark() const { return over_mark_; }
  bool cyclic() const { return cyclic_; }
  const YAML::Mark& cyclic_mark() const { return cyclic_mark_; }
  int documents() const { return documents_; }
  const YAML::Mark& document_mark() const { return document_mark_; }

  void OnDocumentStart(const YAML::Mark& mark) override {
    if (++documents_ == 2) {
      document_mark_ = mark;
    }
  }
  void OnDocumentEnd() override {}
  void OnNull(const YAML::Mark& mark, YAML::anchor_t anchor) override { Leaf(mark, anchor, 1); }
  void OnAlias(const YAML::Mark& mark, YAML::anchor_t anchor) override {
    auto it = sizes_.find(anchor);
    if (it == sizes_.end()) {
      // The anchor is still open: the alias sits inside the node it names.
      if (!cyclic_) {
        cyclic_ = true;
        cyclic_mark_ = mark;
      }
      Add(mark, 1);
      return;
    }
    Add(mark, it->second);
  }
  void OnScalar(const YAML::Mark& mark, const std::string&, YAML::anchor_t anchor,
                const std::string& value) override {
    Leaf(mark, anchor, 1 + value.size());
  }
  void OnSequenceStart(const YAML::Mark& mark, const std::string&, YAML::anchor_t anchor,
                       YAML::EmitterStyle::value) override {
    open_.push_back({anchor, 1, mark});
  }
  void OnSequenceEnd() override { Close(); }
  void OnMapStart(const YAML::Mark& mark, const std::string&, YAML::anchor_t anchor,
                  YAML::EmitterStyle::value) override {
    open_.push_back({anchor, 1, mark});
  }
  void OnMapEnd() override { Close(); }

 private:
  struct Open {
    YAML::anchor_t anchor;
    size_t size;
    YAML::Mark mark;
  };

  size_t Sum(size_t a, size_t b) const { return std::min(limit_ + 1, a + std::min(b, limit_ + 1)); }

  void Add(const YAML::Mark& mark, size_t n) {
    size_t& target = open_.empty() ? total_ : open_.back().size;
    target = Sum(target, n);
    if (target > limit_ && !over_) {
      over_ = true;
      over_mark_ = mark;
    }
  }
  void Leaf(const YAML::Mark& mark, YAML::anchor_t anchor, size_t n) {
    n = std::min(n, limit_ + 1);
    if (anchor != 0) {
      sizes_[anchor] = n;
    }
    Add(mark, n);
  }
  void Close() {
    if (open_.empty()) {
      return;
    }
    Open done = open_.back();
    open_.pop_back();
    if (done.anchor != 0) {
      sizes_[done.anchor] = done.size;
    }
    Add(done.mark, done.size);
  }

  size_t limit_;
  size_t total_ = 0;
  std::vector<Open> open_;
  std::map<YAML::anchor_t, size_t> sizes_;
  bool over_ = false;
  YAML::Mark over_mark_;
  bool cyclic_ = false;
  YAML::Mark cyclic_mark_;
  int documents_ = 0;
  YAML::Mark document_mark_;
};

// Refuses documents that are more than one YAML document, or whose aliases make them
// blow up when walked (a "billion laughs"), or that alias a node from inside itself.
// REQUIRES: the first document of `text` parses (ParseDocument succeeded).
Status CheckDocumentShape(std::string_view text, std::string_view origin) {
  std::istringstream in{std::string(text)};
  ExpansionCounter counter(kMaxExpandedSize);
  try {
    YAML::Parser parser(in);
    if (parser.HandleNextDocument(counter)) {
      parser.HandleNextDocument(counter);
    }
  } catch (const YAML::Exception& e) {
    // Only a later document can fail here; the first one already parsed.
    return InvalidArgumentError(Where(origin, e.mark) + ": not valid YAML: " + e.msg);
  }
  if (counter.documents() > 1) {
    return InvalidArgumentError(Where(origin, counter.document_mark()) +
                                ": a second YAML document starts here (---); a fleet spec is "
                                "one document");
  }
  if (counter.cyclic()) {
    return InvalidArgumentError(Where(origin, counter.cyclic_mark()) +
                                ": this alias refers to a node that contains it");
  }
  if (counter.over_limit()) {
    return InvalidArgumentError(Where(origin, counter.over_mark()) +
                                ": with its aliases (*name) expanded, the spec grows past " +
                                std::to_string(kMaxExpandedSize >> 20) +
                                " MiB; use fewer aliases to large nodes");
  }
  return Status::Ok();
}

// The strings of a list, each with its own field (a single scalar is a list of one),
// each at most `max_bytes` long.
Result<std::vector<std::pair<std::string, Field>>> StringItems(const Field& f, size_t max_bytes) {
  std::vector<std::pair<std::string, Field>> out;
  if (!f.IsSequence()) {
    TPUFLEET_ASSIGN_OR_RETURN(std::string one, Word(f, max_bytes));
    out.emplace_back(std::move(one), f);
    return out;
  }
  TPUFLEET_ASSIGN_OR_RETURN(std::vector<Field> items, f.Items());
  for (const Field& item : items) {
    TPUFLEET_ASSIGN_OR_RETURN(std::string s, Word(item, max_bytes));
    out.emplace_back(std::move(s), item);
  }
  return out;
}

Result<std::chrono::seconds> PositiveDuration(const Field& f) {
  TPUFLEET_ASSIGN_OR_RETURN(std::chrono::seconds d, f.Duration());
  if (d.count() <= 0) {
    return f.Error("expected a duration above zero, like 30m, 6h or 2d");
  }
  return d;
}

Result<double> PositiveUsd(const Field& f) {
  TPUFLEET_ASSIGN_OR_RETURN(double v, f.Number());
  if (v <= 0) {
    return f.Error("expected an amount of US dollars above zero");
  }
  return v;
}

// One of `names`, by its spelling in the spec, with a suggestion when it is none.
template <typename E>
Result<E> Choice(const Field& f, const std::vector<std::pair<std::string, E>>& names) {
  TPUFLEET_ASSIGN_OR_RETURN(std::string s, Word(f));
  std::vector<std::string> spellings;
  for (const auto& [name, value] : names) {
    if (name == s) {
      return value;
    }
    spellings.push_back(name);
  }
  return f.Error(QuoteForMessage(s) + " is not one of " + Join(spellings, ", ") +
                 DidYouMean(s, spellings));
}

Status ParseUser(const Field& f, UserSpec* user) {
  TPUFLEET_TRY(f.CheckKeys({"name", "keys", "sudo"}));
  user->line = f.line();
  TPUFLEET_ASSIGN_OR_RETURN(Field name, f.Require("name"));
  TPUFLEET_ASSIGN_OR_RETURN(user->name, name.String());
  TPUFLEET_TRY(At(name, CheckUserName(user->name)));
  TPUFLEET_ASSIGN_OR_RETURN(Field keys, f.Require("keys"));
  // No cap here: CheckSshPublicKey refuses long keys with a better message.
  TPUFLEET_ASSIGN_OR_RETURN(auto items, StringItems(keys, std::string::npos));
  if (items.empty()) {
    return keys.Error("expected at least one SSH public key for " + user->name);
  }
  std::set<std::string> seen;
  for (auto& [key, item] : items) {
    TPUFLEET_TRY(At(item, CheckSshPublicKey(key)));
    if (!seen.insert(key).second) {
      return item.Error("this key is listed twice for " + user->name);
    }
    user->keys.push_back(std::move(key));
  }
  if (auto sudo = f.Get("sudo")) {
    TPUFLEET_ASSIGN_OR_RETURN(user->sudo, sudo->Bool());
  }
  return Status::Ok();
}

// Parses a `users:` list. `taken` maps names already given (fleet-wide users, when
// parsing a node's) to their field path, so a name is given once per node.
Status ParseUsers(const Field& f, const std::map<std::string, std::string>& taken,
                  std::vector<UserSpec>* users) {
  TPUFLEET_ASSIGN_OR_RETURN(std::vector<Field> items, f.Items());
  std::map<std::string, std::string> seen = taken;
  for (const Field& item : items) {
    UserSpec user;
    TPUFLEET_TRY(ParseUser(item, &user));
    auto [it, fresh] = seen.emplace(user.name, item.path());
    if (!fresh) {
      TPUFLEET_ASSIGN_OR_RETURN(Field name, item.Require("name"));
      return name.Error(user.name + " is already given in " + it->second +
                        "; give each user once (fleet-wide users are on every node)");
    }
    users->push_back(std::move(user));
  }
  return Status::Ok();
}

Status ParseLabels(const Field& f, std::map<std::string, std::string>* labels) {
  TPUFLEET_ASSIGN_OR_RETURN(auto entries, f.Entries());
  if (entries.size() > static_cast<size_t>(kMaxLabels)) {
    return f.Error("at most " + std::to_string(kMaxLabels) +
                   " labels (GCP allows 64 and tpufleet adds its own)");
  }
  for (const auto& [key, value] : entries) {
    if (Status s = CheckLabelKey(key); !s.ok()) {
      return f.KeyError(key, s.message());
    }
    if (value.IsNull()) {
      return value.Error("expected a value: lowercase letters, digits, _ and -, at most 63");
    }
    TPUFLEET_ASSIGN_OR_RETURN(std::string v, value.String());
    TPUFLEET_TRY(At(value, CheckLabelValue(v)));
    (*labels)[key] = std::move(v);
  }
  return Status::Ok();
}

// "projects/P/zones/Z/disks/D", the form the TPU API's AttachedDisk.sourceDisk takes.
Status ParseDiskSource(const Field& f, DataDiskSpec* disk) {
  TPUFLEET_ASSIGN_OR_RETURN(disk->source, f.String());
  std::vector<std::string> parts = Split(disk->source, '/');
  auto is_name = [](const std::string& s) {
    return !s.empty() && s.size() <= 63 && std::all_of(s.begin(), s.end(), [](char c) {
      return IsLower(c) || IsDigit(c) || c == '-';
    });
  };
  if (parts.size() != 6 || parts[0] != "projects" || parts[2] != "zones" || parts[4] != "disks" ||
      !is_name(parts[1]) || !is_name(parts[3]) || !is_name(parts[5])) {
    return f.Error("expected a zonal disk as projects/PROJECT/zones/ZONE/disks/NAME");
  }
  disk->project = parts[1];
  disk->zone = parts[3];
  return Status::Ok();
}

// `project` is the fleet's project id: a node attaches only disks of its own project.
Status ParseDataDisks(const Field& f, std::string_view project, std::vector<DataDiskSpec>* disks) {
  TPUFLEET_ASSIGN_OR_RETURN(std::vector<Field> items, f.Items());
  std::set<std::string> seen;
  for (const Field& item : items) {
    TPUFLEET_TRY(item.CheckKeys({"source", "mode"}));
    DataDiskSpec disk;
    TPUFLEET_ASSIGN_OR_RETURN(Field source, item.Require("source"));
    TPUFLEET_TRY(ParseDiskSource(source, &disk));
    bool project_number = std::all_of(project.begin(), project.end(), IsDigit);
    if (!project_number && disk.project != project) {
      return source.Error("this disk is in project " + disk.project + ", not the fleet's (" +
                          std::string(project) +
                          "); a node attaches only disks of its own project");
    }
    if (!seen.insert(disk.source).second) {
      return source.Error("this disk is listed twice on the node");
    }
    if (!disks->empty() && disk.zone != disks->front().zone) {
      return source.Error("this disk is in " + disk.zone + " but " + f.path() + "[0] is in " +
                          disks->front().zone + "; a node attaches only disks of its own zone");
    }
    if (auto mode = item.Get("mode")) {
      TPUFLEET_ASSIGN_OR_RETURN(disk.mode,
                                Choice<DiskMode>(*mode, {{"read-only", DiskMode::kReadOnly},
                                                         {"read-write", DiskMode::kReadWrite}}));
    }
    disks->push_back(std::move(disk));
  }
  return Status::Ok();
}

// Fields only one kind of provider understands; the other kind gets a clear refusal
// instead of "unknown field".
constexpr std::string_view kTpuOnlyFields[] = {
    "type", "runtime_version", "zones", "capacity", "queued", "count", "data_disks", "ttl", "idle"};
constexpr std::string_view kSshOnlyFields[] = {"hosts", "ssh_user", "port"};

Status ParseTpuNode(const Field& f, const FleetSpec& fleet, const Catalog& catalog,
                    NodeSpec* node) {
  TPUFLEET_ASSIGN_OR_RETURN(Field type_field, f.Require("type"));
  TPUFLEET_ASSIGN_OR_RETURN(std::string type_name, Word(type_field));
  Result<AcceleratorType> type = catalog.Lookup(type_name);
  if (!type.ok()) {
    return type_field.Error(type.status().message());
  }
  const Family& fam = *type->family;
  node->type = type->name;
  node->family = fam.name;
  node->chips = type->chips;
  node->workers = type->workers;

  if (auto rt = f.Get("runtime_version")) {
    TPUFLEET_ASSIGN_OR_RETURN(node->runtime_version, Word(*rt));
    const auto& valid = fam.runtime_versions;
    if (std::find(valid.begin(), valid.end(), node->runtime_version) == valid.end()) {
      return rt->Error("runtime version " + QuoteForMessage(node->runtime_version) +
                       " is not known for " + fam.name + DidYouMean(node->runtime_version, valid) +
                       "; " + fam.name + " runtime versions: " + Join(valid, ", ") + " (" +
                       std::string(kCatalogHint) + ")");
    }
  } else if (!fam.runtime_versions.empty()) {
    node->runtime_version = fam.runtime_versions.front();
    node->runtime_version_defaulted = true;
  } else {
    return f.KeyError(
        "type", "the catalog lists no runtime version for " + fam.name + "; give runtime_version");
  }

  if (auto count = f.Get("count")) {
    TPUFLEET_ASSIGN_OR_RETURN(long long n, count->Int());
    if (n < 1 || n > kMaxCount) {
      return count->Error("expected a whole number from 1 to " + std::to_string(kMaxCount));
    }
    node->count = static_cast<int>(n);
  }

  // Disks before zones: a disk pins the node to its zone, which is then the default.
  std::optional<Field> disks_field = f.Get("data_disks");
  if (disks_field) {
    TPUFLEET_TRY(ParseDataDisks(*disks_field, fleet.project, &node->data_disks));
  }
  // A read-write disk attaches to one VM: not to several slices, nor to a pod's workers.
  for (size_t i = 0; i < node->data_disks.size(); ++i) {
    if (node->data_disks[i].mode != DiskMode::kReadWrite) {
      continue;
    }
    std::string why;
    if (node->count > 1) {
      why = "this entry has count " + std::to_string(node->count);
    } else if (node->workers > 1) {
      why = node->type + " has " + std::to_string(node->workers) + " worker VMs";
    }
    if (!why.empty()) {
      TPUFLEET_ASSIGN_OR_RETURN(auto items, disks_field->Items());
      TPUFLEET_ASSIGN_OR_RETURN(Field mode, items[i].Require("mode"));
      return mode.Error("a read-write disk attaches to one VM at a time and " + why +
                        "; use read-only");
    }
  }

  auto offers = [&](const std::string& zone) {
    return std::find(fam.zones.begin(), fam.zones.end(), zone) != fam.zones.end();
  };
  auto not_offered = [&](const std::string& zone) {
    return catalog.ZoneNotOffered(fam, zone) + " (" + std::string(kCatalogHint) + ")";
  };
  if (auto zones = f.Get("zones")) {
    TPUFLEET_ASSIGN_OR_RETURN(auto items, StringItems(*zones, kMaxWordBytes));
    if (items.empty()) {
      return zones->Error("expected at least one zone; leave zones out to use every zone that " +
                          ("offers " + fam.name));
    }
    for (auto& [zone, item] : items) {
      if (!offers(zone)) {
        return item.Error(not_offered(zone));
      }
      if (std::find(node->zones.begin(), node->zones.end(), zone) != node->zones.end()) {
        return item.Error(zone + " is listed twice");
      }
      if (!node->data_disks.empty() && zone != node->data_disks.front().zone) {
        return item.Error("the node's data disk is in " + node->data_disks.front().zone +
                          " and a node attaches only disks of its own zone; list only " +
                          node->data_disks.front().zone);
      }
      node->zones.push_back(std::move(zone));
    }
  } else if (!node->data_disks.empty()) {
    const std::string& zone = node->data_disks.front().zone;
    if (!offers(zone)) {
      TPUFLEET_ASSIGN_OR_RETURN(auto items, disks_field->Items());
      TPUFLEET_ASSIGN_OR_RETURN(Field source, items[0].Require("source"));
      return source.Error("the disk is in " + zone + ", which does not offer " + fam.name + "; " +
                          fam.name + " is offered in " + Join(fam.zones, ", "));
    }
    node->zones = {zone};
    node->zones_defaulted = true;
  } else {
    if (fam.zones.empty()) {
      return f.KeyError("type", "the catalog lists no zone for " + fam.name + "; give zones");
    }
    node->zones = fam.zones;
    node->zones_defaulted = true;
  }

  if (auto cap = f.Get("capacity")) {
    // The old name still appears in guides; say what it became.
    if (cap->String().ok() && *cap->String() == "preemptible") {
      return cap->Error("preemptible TPUs are now called spot; write capacity: spot");
    }
    TPUFLEET_ASSIGN_OR_RETURN(node->capacity,
                              Choice<Capacity>(*cap, {{"on-demand", Capacity::kOnDemand},
                                                      {"spot", Capacity::kSpot},
                                                      {"reserved", Capacity::kReserved}}));
  }

  // `queued: true`, or a mapping when the request has a deadline.
  if (auto q = f.Get("queued")) {
    if (q->IsMap()) {
      TPUFLEET_TRY(q->CheckKeys({"valid_until"}));
      QueuedSpec queued;
      if (auto until = q->Get("valid_until")) {
        TPUFLEET_ASSIGN_OR_RETURN(queued.valid_until, PositiveDuration(*until));
      }
      node->queued = queued;
    } else {
      Result<bool> on = q->Bool();
      if (!on.ok()) {
        return q->Error("expected true, false, or {valid_until: DURATION}");
      }
      if (*on) {
        node->queued = QueuedSpec{};
      }
    }
  }

  if (auto ttl = f.Get("ttl")) {
    TPUFLEET_ASSIGN_OR_RETURN(node->ttl, PositiveDuration(*ttl));
  }

  if (auto idle = f.Get("idle")) {
    TPUFLEET_TRY(idle->CheckKeys({"after", "action"}));
    IdlePolicy policy;
    TPUFLEET_ASSIGN_OR_RETURN(Field after, idle->Require("after"));
    TPUFLEET_ASSIGN_OR_RETURN(policy.after, PositiveDuration(after));
    if (auto action = idle->Get("action")) {
      TPUFLEET_ASSIGN_OR_RETURN(policy.action,
                                Choice<IdleAction>(*action, {{"delete", IdleAction::kDelete},
                                                             {"stop", IdleAction::kStop}}));
      if (policy.action == IdleAction::kStop && node->workers > 1) {
        return action->Error("TPU pods cannot be stopped, and " + node->type + " has " +
                             std::to_string(node->workers) +
                             " worker VMs; use delete (data disks are kept)");
      }
    }
    node->idle = policy;
  }
  return Status::Ok();
}

Status ParseSshNode(const Field& f, NodeSpec* node) {
  TPUFLEET_ASSIGN_OR_RETURN(Field hosts, f.Require("hosts"));
  // 253: the longest DNS name.
  TPUFLEET_ASSIGN_OR_RETURN(auto items, StringItems(hosts, 253));
  if (items.empty()) {
    return hosts.Error("expected at least one host address");
  }
  for (auto& [host, item] : items) {
    TPUFLEET_TRY(At(item, CheckHostAddress(host)));
    if (std::find(node->hosts.begin(), node->hosts.end(), host) != node->hosts.end()) {
      return item.Error(host + " is listed twice");
    }
    node->hosts.push_back(std::move(host));
  }
  // Each host is one worker: exec and setup fan out to all of them, as on a pod.
  node->workers = static_cast<int>(node->hosts.size());
  if (auto user = f.Get("ssh_user")) {
    TPUFLEET_ASSIGN_OR_RETURN(node->ssh_user, user->String());
    TPUFLEET_TRY(At(*user, CheckLoginName(node->ssh_user)));
  }
  if (auto port = f.Get("port")) {
    TPUFLEET_ASSIGN_OR_RETURN(long long p, port->Int());
    if (p < 1 || p > 65535) {
      return port->Error("expected a TCP port from 1 to 65535");
    }
    node->port = static_cast<int>(p);
  }
  return Status::Ok();
}

Status ParseNode(const Field& f, const FleetSpec& fleet, const Catalog& catalog,
                 const std::map<std::string, std::string>& fleet_users, NodeSpec* node) {
  // A field of the other kind of provider gets a reason, not just "unknown field".
  bool ssh = fleet.provider == Provider::kSshHosts;
  for (std::string_view key : ssh ? std::span<const std::string_view>(kTpuOnlyFields)
                                  : std::span<const std::string_view>(kSshOnlyFields)) {
    if (f.IsMap() && f.Get(key)) {
      return f.KeyError(key, ssh ? "not used with provider ssh-hosts: those machines already "
                                   "exist, and tpufleet never creates, places or deletes them"
                                 : "only for provider ssh-hosts; a Cloud TPU node's workers are "
                                   "created by tpufleet and found through the TPU API");
    }
  }
  if (ssh) {
    TPUFLEET_TRY(f.CheckKeys({"name", "hosts", "ssh_user", "port", "labels", "setup", "users"}));
  } else {
    TPUFLEET_TRY(f.CheckKeys({"name", "type", "runtime_version", "zones", "capacity", "queued",
                              "count", "labels", "setup", "data_disks", "users", "ttl", "idle"}));
  }
  node->line = f.line();
  TPUFLEET_ASSIGN_OR_RETURN(Field name, f.Require("name"));
  TPUFLEET_ASSIGN_OR_RETURN(node->name, name.String());
  TPUFLEET_TRY(At(name, CheckNodeName(node->name)));
  if (fleet.provider == Provider::kSshHosts) {
    TPUFLEET_TRY(ParseSshNode(f, node));
  } else {
    TPUFLEET_TRY(ParseTpuNode(f, fleet, catalog, node));
  }
  // Again now that count is known: count > 1 needs room for the "-N" suffix.
  TPUFLEET_TRY(At(name, CheckNodeName(node->name, node->count)));
  if (node->count == 1) {
    node->names = {node->name};
  } else {
    for (int i = 0; i < node->count; ++i) {
      node->names.push_back(node->name + "-" + std::to_string(i));
    }
  }
  if (auto labels = f.Get("labels")) {
    TPUFLEET_TRY(ParseLabels(*labels, &node->labels));
  }
  if (auto setup = f.Get("setup")) {
    TPUFLEET_ASSIGN_OR_RETURN(node->setup, setup->String());
    if (node->setup.size() > kMaxSetupBytes) {
      return setup->Error("the script is " + std::to_string(node->setup.size() / 1024) +
                          " KiB; at most 256 KiB travels in instance metadata (copy a larger "
                          "script to the nodes and run it from here)");
    }
    if (node->setup.find('\0') != std::string::npos) {
      return setup->Error("the script contains a NUL byte");
    }
  }
  if (auto users = f.Get("users")) {
    TPUFLEET_TRY(ParseUsers(*users, fleet_users, &node->users));
  }
  return Status::Ok();
}

Status ParseProject(const Field& root, FleetSpec* spec) {
  std::optional<Field> project = root.Get("project");
  if (spec->provider == Provider::kSshHosts) {
    if (project) {
      return root.KeyError("project", "not used with provider ssh-hosts");
    }
    return Status::Ok();
  }
  if (!project && spec->provider == Provider::kEmulator) {
    spec->project = "tpufleet-emulator";  // the emulator serves any project id
    return Status::Ok();
  }
  TPUFLEET_ASSIGN_OR_RETURN(Field p, root.Require("project"));
  TPUFLEET_ASSIGN_OR_RETURN(spec->project, p.String());
  // The TPU API takes a project number as well as an id in resource names.
  const std::string& id = spec->project;
  bool number = id.size() <= 20 && std::all_of(id.begin(), id.end(), IsDigit);
  bool valid_id = id.size() >= 6 && id.size() <= 30 && IsLower(id.front()) && id.back() != '-' &&
                  std::all_of(id.begin(), id.end(),
                              [](char c) { return IsLower(c) || IsDigit(c) || c == '-'; });
  if (!number && !valid_id) {
    return p.Error(
        "expected a GCP project id: 6 to 30 lowercase letters, digits and hyphens, "
        "starting with a letter (the id, not the display name), or a project number");
  }
  return Status::Ok();
}

Status ParseBudget(const Field& f, BudgetSpec* budget) {
  TPUFLEET_TRY(f.CheckKeys({"usd_per_day", "usd_total"}));
  if (auto day = f.Get("usd_per_day")) {
    TPUFLEET_ASSIGN_OR_RETURN(budget->usd_per_day, PositiveUsd(*day));
  }
  if (auto total = f.Get("usd_total")) {
    TPUFLEET_ASSIGN_OR_RETURN(budget->usd_total, PositiveUsd(*total));
  }
  if (!budget->usd_per_day && !budget->usd_total) {
    return f.Error("give usd_per_day, usd_total or both");
  }
  return Status::Ok();
}

}  // namespace

std::string_view ProviderName(Provider p) {
  switch (p) {
    case Provider::kGcpTpu:
      return "gcp-tpu";
    case Provider::kEmulator:
      return "emulator";
    case Provider::kSshHosts:
      return "ssh-hosts";
  }
  return "?";
}

std::string_view CapacityName(Capacity c) {
  switch (c) {
    case Capacity::kOnDemand:
      return "on-demand";
    case Capacity::kSpot:
      return "spot";
    case Capacity::kReserved:
      return "reserved";
  }
  return "?";
}

std::string_view DiskModeName(DiskMode m) {
  return m == DiskMode::kReadOnly ? "read-only" : "read-write";
}

std::string_view IdleActionName(IdleAction a) {
  return a == IdleAction::kDelete ? "delete" : "stop";
}

Result<FleetSpec> ParseFleetSpec(std::string_view yaml_text, std::string_view origin,
                                 const Catalog& catalog) {
  // Size first: yaml-cpp builds a tree of whatever it is given.
  if (yaml_text.size() > kMaxSpecBytes) {
    return InvalidArgumentError(std::string(origin) + ": the file is " +
                                std::to_string(yaml_text.size() >> 10) +
                                " KiB; a fleet spec may be at most 1 MiB");
  }
  TPUFLEET_ASSIGN_OR_RETURN(Field root, yaml::ParseDocument(yaml_text, origin));
  // Before any walking: the walk below visits an aliased node once per alias.
  TPUFLEET_TRY(CheckDocumentShape(yaml_text, origin));
  TPUFLEET_TRY(root.CheckKeys({"fleet", "provider", "project", "budget", "users", "nodes"}));

  FleetSpec spec;
  TPUFLEET_ASSIGN_OR_RETURN(Field name, root.Require("fleet"));
  TPUFLEET_ASSIGN_OR_RETURN(spec.name, name.String());
  TPUFLEET_TRY(At(name, CheckNodeName(spec.name)));

  if (auto provider = root.Get("provider")) {
    TPUFLEET_ASSIGN_OR_RETURN(spec.provider,
                              Choice<Provider>(*provider, {{"gcp-tpu", Provider::kGcpTpu},
                                                           {"ssh-hosts", Provider::kSshHosts},
                                                           {"emulator", Provider::kEmulator}}));
  }
  TPUFLEET_TRY(ParseProject(root, &spec));

  if (auto budget = root.Get("budget")) {
    if (spec.provider == Provider::kSshHosts) {
      return root.KeyError("budget",
                           "not used with provider ssh-hosts: tpufleet does not know "
                           "what those machines cost");
    }
    BudgetSpec b;
    TPUFLEET_TRY(ParseBudget(*budget, &b));
    spec.budget = b;
  }

  std::map<std::string, std::string> fleet_users;
  if (auto users = root.Get("users")) {
    TPUFLEET_TRY(ParseUsers(*users, {}, &spec.users));
    TPUFLEET_ASSIGN_OR_RETURN(std::vector<Field> items, users->Items());
    for (size_t i = 0; i < spec.users.size(); ++i) {
      fleet_users[spec.users[i].name] = items[i].path();
    }
  }

  TPUFLEET_ASSIGN_OR_RETURN(Field nodes, root.Require("nodes"));
  TPUFLEET_ASSIGN_OR_RETURN(std::vector<Field> items, nodes.Items());
  if (items.empty()) {
    return nodes.Error("expected at least one node");
  }
  // Checks across entries: a node id, a host and a read-write disk each belong to one.
  std::map<std::string, std::string> ids;    // node id -> the entry that makes it
  std::map<std::string, std::string> hosts;  // ssh host -> the entry that has it
  // data disk -> how it was first attached, and by which entry
  std::map<std::string, std::pair<DiskMode, std::string>> disks;
  for (const Field& item : items) {
    NodeSpec node;
    TPUFLEET_TRY(ParseNode(item, spec, catalog, fleet_users, &node));
    TPUFLEET_ASSIGN_OR_RETURN(Field node_name, item.Require("name"));
    for (const std::string& id : node.names) {
      auto [it, fresh] = ids.emplace(id, item.path());
      if (!fresh) {
        std::string from = id == node.name
                               ? ""
                               : " (from this name with count " + std::to_string(node.count) + ")";
        return node_name.Error("node id \"" + id + "\"" + from + " is also made by " + it->second +
                               "; node names must be unique in the fleet");
      }
    }
    for (const std::string& host : node.hosts) {
      auto [it, fresh] = hosts.emplace(host, item.path());
      if (!fresh) {
        TPUFLEET_ASSIGN_OR_RETURN(Field f, item.Require("hosts"));
        return f.Error(host + " is already a host of " + it->second +
                       "; a host belongs to one node");
      }
    }
    for (const DataDiskSpec& disk : node.data_disks) {
      auto [it, fresh] = disks.emplace(disk.source, std::pair{disk.mode, item.path()});
      if (!fresh &&
          (disk.mode == DiskMode::kReadWrite || it->second.first == DiskMode::kReadWrite)) {
        TPUFLEET_ASSIGN_OR_RETURN(Field f, item.Require("data_disks"));
        return f.Error(disk.source + " is also attached by " + it->second.second +
                       "; a disk attached read-write belongs to one node");
      }
    }
    spec.nodes.push_back(std::move(node));
  }
  return spec;
}

std::vector<UserSpec> UsersOn(const FleetSpec& fleet, const NodeSpec& node) {
  std::vector<UserSpec> out = fleet.users;
  out.insert(out.end(), node.users.begin(), node.users.end());
  return out;
}

}  // namespace tpufleet
