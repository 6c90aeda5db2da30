#include "api/serve.h"

#include "api/json_internal.h"

namespace tpufleet::api {
namespace {

using internal::ArrayOf;
using internal::Dump;
using internal::kDocumentIndent;
using internal::OrNull;
using nlohmann::json;

json NodeJson(const ServeNode& n) {
  return {{"node", n.node},
          {"fleet", n.fleet},
          {"zone", n.zone},
          {"type", n.type},
          {"capacity", n.capacity},
          {"state", n.state},
          {"age_seconds", n.age_seconds},
          {"last_recover_seconds", OrNull(n.last_recover_seconds)}};
}

json ProcessJson(const ServeProcess& p) {
  return {{"pid", p.pid},
          {"host", p.host},
          {"fleets", p.fleets},
          {"started", p.started},
          {"last_pass", p.last_pass},
          {"last_pass_seconds_ago", OrNull(p.last_pass_seconds_ago)},
          {"passes", p.passes},
          {"api_calls", p.api_calls},
          {"preemptions", p.preemptions},
          {"recoveries", p.recoveries}};
}

json JobJson(const RestartableJob& j) {
  return {{"id", j.id},
          {"name", j.name},
          {"fleet", j.fleet},
          {"node", j.node},
          {"restart", j.restart},
          {"max_restarts", j.max_restarts},
          {"restarts", j.restarts},
          {"state", j.state},
          {"last_reason", j.last_reason},
          {"created", j.created},
          {"updated", j.updated}};
}

}  // namespace

std::string ToJson(const ServeStatus& status) {
  return Dump({{"serve", ProcessJson(status.serve)},
               {"nodes", ArrayOf(status.nodes, NodeJson)},
               {"warnings", status.warnings}},
              kDocumentIndent);
}

std::string ToJson(const Error& error) {
  return Dump({{"error", internal::ErrorJson(error)}}, kDocumentIndent);
}

std::string ToJson(const std::vector<RestartableJob>& jobs) {
  return Dump({{"jobs", ArrayOf(jobs, JobJson)}}, kDocumentIndent);
}

}  // namespace tpufleet::api
