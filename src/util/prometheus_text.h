// The pieces of Prometheus' text exposition format, version 0.0.4 (prometheus/docs,
// exposition_formats.md), that every tpufleet exporter writes the same way: the node
// agent's /metrics (agent/export/prometheus_text.h) and serve's (server/metrics.h).
//
// A family is `# HELP name text` (backslash and newline escaped as \\ and \n),
// `# TYPE name gauge|counter|histogram`, then its lines `name{label="value",…} number`,
// label values with \, " and newline escaped as \\, \" and \n; each line ends with \n.
//
// Thread-safety: pure functions.
#pragma once

#include <string>
#include <string_view>

namespace tpufleet {

/// The Content-Type of the text format.
inline constexpr std::string_view kPrometheusContentType =
    "text/plain; version=0.0.4; charset=utf-8";

/// `value` as a label value between double quotes: \ " and newline escaped.
std::string EscapeLabelValue(std::string_view value);

/// A sample value as the format writes it: the shortest text that reads back as the
/// same double (Go's ParseFloat, which Prometheus uses, reads it), NaN and ±Inf by name.
std::string PrometheusNumber(double value);

/// A family's `# HELP` and `# TYPE` lines; `type` is "gauge", "counter" or "histogram".
std::string PrometheusFamilyHeader(std::string_view name, std::string_view help,
                                   std::string_view type);

}  // namespace tpufleet
