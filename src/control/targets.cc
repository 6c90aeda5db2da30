#include "control/targets.h"

#include <map>
#include <set>
#include <tuple>
#include <utility>

#include "control/ssh_sync.h"
#include "core/fleet_spec.h"
#include "util/strings.h"

namespace tpufleet {
namespace {

constexpr char kAllWord[] = "all";
constexpr char kRangeForms[] = "expected NODE:N, NODE:N-M or a list such as NODE:1-3,5";
constexpr char kSelectorForm[] = "expected key=value, or several joined by ',' (team=a,role=x)";
// A message lists at most this many nodes by name; the rest are counted.
constexpr size_t kNodesNamed = 3;

using WorkerKey = std::tuple<std::string, std::string, int>;  // fleet, node, worker
using TargetSet = std::map<WorkerKey, WorkerTarget>;

std::string Quoted(std::string_view s) {
  return "'" + std::string(s) + "'";
}

std::string StateOf(const NodeRecord& r) {
  return r.state == NodeState::kNone ? "unknown" : r.state.Name();
}

// "pod (CREATING), eval (REQUESTED) and 2 more"
std::string NodesWithStates(const std::vector<const NodeRecord*>& nodes) {
  std::vector<std::string> parts;
  for (size_t i = 0; i < nodes.size() && i < kNodesNamed; ++i) {
    parts.push_back(nodes[i]->name + " (" + StateOf(*nodes[i]) + ")");
  }
  std::string out = Join(parts, ", ");
  if (nodes.size() > kNodesNamed) {
    out += " and " + std::to_string(nodes.size() - kNodesNamed) + " more";
  }
  return out;
}

Status NoSuchNode(const std::string& word, const std::vector<NodeRecord>& nodes) {
  if (nodes.empty()) {
    return NotFoundError("no node " + Quoted(word) +
                         " in tpufleet's state, which has no "
                         "nodes; bring a fleet up with `tpufleet up FLEET.yaml`");
  }
  std::vector<std::string> names;
  for (const NodeRecord& r : nodes) {
    names.push_back(r.name);
  }
  std::vector<std::string> near = NearestNames(word, names);
  std::string hint;
  for (size_t i = 0; i < near.size(); ++i) {
    hint += (i == 0 ? "" : i + 1 == near.size() ? " or " : ", ") + Quoted(near[i]);
  }
  return NotFoundError("no node " + Quoted(word) + " in tpufleet's state" +
                       (hint.empty() ? "" : "; did you mean " + hint + "?") +
                       " (tpufleet status lists them)");
}

Status NoWorkers(const NodeRecord& r) {
  return FailedPreconditionError("node " + Quoted(r.name) + " has no workers yet (state " +
                                 StateOf(r) + "); wait for `tpufleet up`");
}

Status AddWorker(const NodeRecord& r, const WorkerRecord& w, TargetSet& out) {
  if (w.address.empty()) {
    return FailedPreconditionError("worker " + std::to_string(w.index) + " of node " +
                                   Quoted(r.name) + " has no address (state " + StateOf(r) +
                                   "); `tpufleet status --refresh` asks the cloud again");
  }
  WorkerTarget t;
  t.fleet = r.fleet;
  t.node = r.name;
  t.worker = w.index;
  t.name = r.name + "/w" + std::to_string(w.index);
  t.alias = WorkerAlias(r.name, w.index);
  t.address = w.address;
  t.internal_address = w.internal_address;
  t.port = r.port == 0 ? 22 : r.port;
  t.login = r.login;
  t.host_key = w.host_key;  // ssh-hosts ones too: up pins them from the user's known_hosts
  t.provider = r.provider;
  out[{r.fleet, r.name, w.index}] = std::move(t);
  return Status::Ok();
}

Status AddNode(const NodeRecord& r, TargetSet& out) {
  for (const WorkerRecord& w : r.workers) {
    TPUFLEET_TRY(AddWorker(r, w, out));
  }
  return Status::Ok();
}

// Nodes with workers go into `out`; FailedPrecondition, starting `none_yet`, when none of
// `matched` has any.
Status AddNodesWithWorkers(const std::vector<const NodeRecord*>& matched,
                           const std::string& none_yet, TargetSet& out) {
  std::vector<const NodeRecord*> without;
  for (const NodeRecord* r : matched) {
    if (r->workers.empty()) {
      without.push_back(r);
    } else {
      TPUFLEET_TRY(AddNode(*r, out));
    }
  }
  if (without.size() == matched.size()) {
    return FailedPreconditionError(none_yet + ": " + NodesWithStates(without) +
                                   "; wait for `tpufleet up`");
  }
  return Status::Ok();
}

Status ResolveAll(const std::vector<NodeRecord>& nodes, TargetSet& out) {
  if (nodes.empty()) {
    return NotFoundError("no nodes; bring a fleet up with `tpufleet up FLEET.yaml`");
  }
  std::vector<const NodeRecord*> all;
  for (const NodeRecord& r : nodes) {
    all.push_back(&r);
  }
  return AddNodesWithWorkers(all, "no node has workers yet", out);
}

using Labels = std::vector<std::pair<std::string, std::string>>;

// "team=a,role=x" -> {team, a}, {role, x}; InvalidArgument when malformed.
Result<Labels> ParseSelector(const std::string& word) {
  Labels wanted;
  for (const std::string& part : Split(word, ',')) {
    size_t eq = part.find('=');
    if (eq == std::string::npos || eq == 0 || eq + 1 == part.size()) {
      return InvalidArgumentError("label selector " + Quoted(word) + ": " + kSelectorForm);
    }
    wanted.emplace_back(part.substr(0, eq), part.substr(eq + 1));
  }
  return wanted;
}

bool HasLabels(const std::map<std::string, std::string>& labels, const Labels& wanted) {
  for (const auto& [key, value] : wanted) {
    auto it = labels.find(key);
    if (it == labels.end() || it->second != value) {
      return false;
    }
  }
  return true;
}

Status ResolveSelector(const std::string& word, const std::vector<NodeRecord>& nodes,
                       TargetSet& out) {
  TPUFLEET_ASSIGN_OR_RETURN(Labels wanted, ParseSelector(word));
  std::vector<const NodeRecord*> matched;
  for (const NodeRecord& r : nodes) {
    if (HasLabels(r.labels, wanted)) {
      matched.push_back(&r);
    }
  }
  if (matched.empty()) {
    return NotFoundError("no node has the labels " + word +
                         " (labels are the fleet spec's "
                         "`labels:`, recorded by `tpufleet up`)");
  }
  return AddNodesWithWorkers(matched, "the nodes with " + word + " have no workers yet", out);
}

// "1-3,5" -> [1,3], [5,5]; InvalidArgument when malformed.
Result<std::vector<std::pair<long long, long long>>> ParseRanges(const std::string& word,
                                                                 const std::string& spec) {
  if (spec.empty()) {
    return InvalidArgumentError(Quoted(word) + " has no worker after ':'; " + kRangeForms);
  }
  std::vector<std::pair<long long, long long>> ranges;
  for (const std::string& item : Split(spec, ',')) {
    size_t dash = item.find('-');
    long long lo = 0;
    long long hi = 0;
    bool ok = ParseInt(item.substr(0, dash), &lo);
    if (dash == std::string::npos) {
      hi = lo;
    } else {
      ok = ok && ParseInt(item.substr(dash + 1), &hi);
    }
    if (!ok) {
      return InvalidArgumentError(Quoted(word) + ": " + Quoted(item) +
                                  " is not a worker number or range; " + kRangeForms);
    }
    if (lo > hi) {
      return InvalidArgumentError(Quoted(word) + ": the range " + item + " runs backwards; " +
                                  "write " + std::to_string(hi) + "-" + std::to_string(lo));
    }
    ranges.emplace_back(lo, hi);
  }
  return ranges;
}

Status ResolveNode(const std::string& word, const std::vector<NodeRecord>& nodes, TargetSet& out) {
  size_t colon = word.find(':');
  std::string name = word.substr(0, colon);
  std::vector<std::pair<long long, long long>> ranges;
  if (colon != std::string::npos) {
    TPUFLEET_ASSIGN_OR_RETURN(ranges, ParseRanges(word, word.substr(colon + 1)));
  }
  bool found = false;
  for (const NodeRecord& r : nodes) {
    if (r.name != name) {
      continue;
    }
    found = true;
    if (r.workers.empty()) {
      return NoWorkers(r);
    }
    if (ranges.empty()) {
      TPUFLEET_TRY(AddNode(r, out));
      continue;
    }
    int first = r.workers.front().index;
    int last = r.workers.back().index;
    std::string has =
        "node " + Quoted(r.name) + " has " +
        (first == last ? "only worker " + std::to_string(first)
                       : "workers " + std::to_string(first) + "-" + std::to_string(last));
    std::set<long long> indices;
    for (const auto& [lo, hi] : ranges) {
      if (hi > last || lo < first) {
        return InvalidArgumentError(has + "; " + Quoted(word) + " names " +
                                    (lo > last ? "none" : "workers it does not have"));
      }
      for (long long i = lo; i <= hi; ++i) {
        indices.insert(i);
      }
    }
    for (const WorkerRecord& w : r.workers) {
      if (indices.count(w.index) != 0) {
        TPUFLEET_TRY(AddWorker(r, w, out));
      }
    }
  }
  return found ? Status::Ok() : NoSuchNode(name, nodes);
}

}  // namespace

Result<std::vector<WorkerTarget>> ResolveTargets(Store& store,
                                                 const std::vector<std::string>& words) {
  TPUFLEET_ASSIGN_OR_RETURN(std::vector<NodeRecord> nodes, store.Nodes(""));
  return ResolveTargets(nodes, words);
}

Result<std::vector<WorkerTarget>> ResolveTargets(const std::vector<NodeRecord>& nodes,
                                                 const std::vector<std::string>& words) {
  if (words.empty()) {
    return InvalidArgumentError(
        "no target: name a node (NODE, NODE:N, NODE:1-3,5), a label "
        "selector (key=value) or all");
  }
  TargetSet out;
  for (const std::string& word : words) {
    if (word.empty()) {
      return InvalidArgumentError(
          "an empty target: name a node, a label selector "
          "(key=value) or all");
    }
    if (word == kAllWord) {
      TPUFLEET_TRY(ResolveAll(nodes, out));
    } else if (word.find('=') != std::string::npos) {
      TPUFLEET_TRY(ResolveSelector(word, nodes, out));
    } else {
      TPUFLEET_TRY(ResolveNode(word, nodes, out));
    }
  }
  std::vector<WorkerTarget> targets;
  for (auto& [key, target] : out) {
    targets.push_back(std::move(target));
  }
  return targets;
}

Status CheckNodeSelector(const std::string& word) {
  if (word == kAllWord) {
    return Status::Ok();
  }
  if (word.find('=') != std::string::npos) {
    return ParseSelector(word).status();
  }
  if (word.find(':') != std::string::npos) {
    return InvalidArgumentError(Quoted(word) + " names workers; a selection of nodes is a " +
                                "node name, a label selector (key=value) or all");
  }
  return CheckNodeName(word).WithContext("node " + Quoted(word));
}

bool SelectsNode(const std::string& word, const std::string& node,
                 const std::map<std::string, std::string>& labels) {
  if (word == kAllWord) {
    return true;
  }
  if (word.find('=') == std::string::npos) {
    return word == node;
  }
  Result<Labels> wanted = ParseSelector(word);
  return wanted.ok() && HasLabels(labels, *wanted);
}

Result<WorkerTarget> ResolveOneTarget(Store& store, const std::string& word) {
  TPUFLEET_ASSIGN_OR_RETURN(std::vector<NodeRecord> nodes, store.Nodes(""));
  return ResolveOneTarget(nodes, word);
}

Result<WorkerTarget> ResolveOneTarget(const std::vector<NodeRecord>& nodes,
                                      const std::string& word) {
  bool bare_node = word != kAllWord && word.find_first_of(":=") == std::string::npos;
  TPUFLEET_ASSIGN_OR_RETURN(std::vector<WorkerTarget> targets,
                            ResolveTargets(nodes, {bare_node ? word + ":0" : word}));
  if (targets.size() > 1) {
    const WorkerTarget& first = targets.front();
    return InvalidArgumentError(Quoted(word) + " names " + std::to_string(targets.size()) +
                                " workers; pick one with NODE:N, e.g. " + first.node + ":" +
                                std::to_string(first.worker));
  }
  return targets.front();
}

}  // namespace tpufleet
