// Targets: the workers that exec, ssh, cp and forward act on, from the words a user
// typed, resolved against the state store (no network).
//
//   all              every worker of every node that has workers
//   NODE             all of NODE's workers
//   NODE:3           worker 3 of NODE
//   NODE:1-3,5       workers 1, 2, 3 and 5 of NODE
//   team=a           every worker of the nodes whose labels have team=a
//   team=a,role=x    ... of the nodes that have every one of these labels
//
// Several words union; the result has each worker once, ordered by fleet, node and
// worker. Labels are the spec's (NodeRecord::labels, recorded by up and import). Node
// names and label values are compared as plain strings, never patterns, and never reach
// a shell.
//
// Errors say what to do next: an unknown node (NotFound, with the nearest names), a
// malformed word or a worker index the node does not have (InvalidArgument), a node
// without workers yet or a worker without an address (FailedPrecondition).
//
// Thread-safety: stateless; the Store locks itself.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "store/store.h"
#include "util/status.h"

namespace tpufleet {

/// One worker that exec/ssh/cp/forward act on.
struct WorkerTarget {
  std::string fleet;
  std::string node;
  int worker = 0;        // index within the node
  std::string name;      // "node/w3": how output is labelled
  std::string alias;     // WorkerAlias(node, worker): the ssh_config Host
  std::string address;   // what SSH connects to
  std::string internal_address;  // inside the node's network; "" when not known
  int port = 22;         // record.port, 0 -> 22
  std::string login;     // record.login
  std::string host_key;  // pinned "ssh-ed25519 AAAA…"; "" when up pinned none (then
                         // exec and cp fail that worker alone)
  std::string provider;  // record.provider
};

/// Resolves TARGET words against the store: "all" (every worker of every node with
/// workers), "NODE" (all its workers), "NODE:3", "NODE:1-3,5", or a label selector
/// "key=value" (nodes whose labels have it; several selectors in one word joined by ','
/// must all match, e.g. "team=a,role=train"). Several words union; result is
/// deduplicated, ordered by fleet, node, worker. Never empty when OK.
Result<std::vector<WorkerTarget>> ResolveTargets(Store& store,
                                                 const std::vector<std::string>& words);
/// As ResolveTargets, among `nodes` alone (a caller's visible ones, control/visible.h):
/// a node not among them is "no node" as one not in the store.
Result<std::vector<WorkerTarget>> ResolveTargets(const std::vector<NodeRecord>& nodes,
                                                 const std::vector<std::string>& words);

/// The one worker `word` names, for commands that reach a single worker (ssh, forward):
/// as ResolveTargets, but a bare NODE means its worker 0. InvalidArgument when the word
/// names several workers (a range, a selector, "all"), saying how to pick one (NODE:N).
Result<WorkerTarget> ResolveOneTarget(Store& store, const std::string& word);
/// As ResolveOneTarget, among `nodes` alone (a team server's answer, control/server_ssh.h).
Result<WorkerTarget> ResolveOneTarget(const std::vector<NodeRecord>& nodes,
                                      const std::string& word);

/// A selection of whole nodes (`users add --nodes`): "all", "NODE" or a label selector
/// "key=value[,key=value]", as ResolveTargets reads them; InvalidArgument for a malformed
/// word and for NODE:N (a worker range: accounts go on every worker of a node or none).
/// The node need not exist yet: a node made later is selected then.
Status CheckNodeSelector(const std::string& word);

/// Whether `word` (CheckNodeSelector's) selects the node `node` with `labels`, by
/// ResolveTargets' rules; false for a malformed word.
bool SelectsNode(const std::string& word, const std::string& node,
                 const std::map<std::string, std::string>& labels);

}  // namespace tpufleet
