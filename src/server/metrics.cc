#include "server/metrics.h"

#include <cstdint>

#include "util/prometheus_text.h"

namespace tpufleet::server {
namespace {

void Counter(std::string& out, std::string_view name, std::string_view help, int64_t value) {
  out += PrometheusFamilyHeader(name, help, "counter");
  out.append(name).append(" ").append(std::to_string(value)).append("\n");
}

std::string Label(std::string_view name, std::string_view value) {
  return std::string(name) + "=\"" + EscapeLabelValue(value) + "\"";
}

}  // namespace

std::string MetricsText(const ServeSnapshot& snapshot) {
  std::string out = PrometheusFamilyHeader("tpufleet_nodes", "Nodes by fleet and state.",
                                           "gauge");
  for (const auto& [fleet, states] : snapshot.nodes_by_state) {
    for (const auto& [state, n] : states) {
      out.append("tpufleet_nodes{")
          .append(Label("fleet", fleet))
          .append(",")
          .append(Label("state", state))
          .append("} ")
          .append(std::to_string(n))
          .append("\n");
    }
  }
  Counter(out, "tpufleet_preemptions_total",
          "Preemptions (and nodes deleted by the cloud) detected since serve started.",
          snapshot.preemptions);
  Counter(out, "tpufleet_recoveries_total", "Recoveries finished since serve started.",
          snapshot.recoveries);

  std::string_view ttr = "tpufleet_time_to_recover_seconds";
  out += PrometheusFamilyHeader(
      ttr, "Time from a preemption to the node's jobs resumed (or its setup done), seconds.",
      "histogram");
  double sum = 0;
  for (double s : snapshot.recover_seconds) {
    sum += s;
  }
  for (double bound : kRecoverBuckets) {
    int64_t n = 0;
    for (double s : snapshot.recover_seconds) {
      n += s <= bound ? 1 : 0;
    }
    out.append(ttr)
        .append("_bucket{le=\"")
        .append(PrometheusNumber(bound))
        .append("\"} ")
        .append(std::to_string(n))
        .append("\n");
  }
  std::string count = std::to_string(snapshot.recover_seconds.size());
  out.append(ttr).append("_bucket{le=\"+Inf\"} ").append(count).append("\n");
  out.append(ttr).append("_sum ").append(PrometheusNumber(sum)).append("\n");
  out.append(ttr).append("_count ").append(count).append("\n");

  out += PrometheusFamilyHeader("tpufleet_spend_usd",
                                "Spent today (UTC day) by the fleet's nodes, USD.", "gauge");
  for (const auto& [fleet, usd] : snapshot.spend_usd) {
    out.append("tpufleet_spend_usd{")
        .append(Label("fleet", fleet))
        .append("} ")
        .append(PrometheusNumber(usd))
        .append("\n");
  }
  out += PrometheusFamilyHeader("tpufleet_reconcile_pass_seconds",
                                "CPU time the last reconcile pass took, seconds.", "gauge");
  out.append("tpufleet_reconcile_pass_seconds ")
      .append(PrometheusNumber(snapshot.last_pass_cpu_seconds))
      .append("\n");
  out += PrometheusFamilyHeader("tpufleet_reconcile_pass_wall_seconds",
                                "Wall time the last reconcile pass took (its cloud calls' "
                                "waits too), seconds.",
                                "gauge");
  out.append("tpufleet_reconcile_pass_wall_seconds ")
      .append(PrometheusNumber(snapshot.last_pass_wall_seconds))
      .append("\n");
  Counter(out, "tpufleet_reconcile_passes_total", "Reconcile passes since serve started.",
          snapshot.passes);
  Counter(out, "tpufleet_api_calls_total", "Cloud API calls since serve started.",
          snapshot.api_calls);
  return out;
}

}  // namespace tpufleet::server
