#include "api/metrics.h"

#include "api/agent_json.h"
#include "api/json_internal.h"

namespace tpufleet::api {

// The fields are listed once, in agent_json.h, for this and for the `metrics` op's answer.
std::string ToJson(const MetricsReport& report) {
  return internal::Dump(agent_json::ToJ(report), -1);
}

Result<MetricsReport> ParseMetricsReport(std::string_view json) {
  return agent_json::ParseDocument<MetricsReport>(json, "metrics report");
}

}  // namespace tpufleet::api
