#include "util/prometheus_text.h"

#include <charconv>
#include <cmath>

namespace tpufleet {

std::string EscapeLabelValue(std::string_view value) {
  std::string s;
  s.reserve(value.size());
  for (char c : value) {
    if (c == '\\') {
      s += "\\\\";
    } else if (c == '"') {
      s += "\\\"";
    } else if (c == '\n') {
      s += "\\n";
    } else {
      s += c;
    }
  }
  return s;
}

std::string PrometheusNumber(double value) {
  if (std::isnan(value)) {
    return "NaN";
  }
  if (std::isinf(value)) {
    return value > 0 ? "+Inf" : "-Inf";
  }
  char buf[32];
  auto [end, ec] = std::to_chars(buf, buf + sizeof buf, value);
  return std::string(buf, ec == std::errc() ? end : buf);
}

std::string PrometheusFamilyHeader(std::string_view name, std::string_view help,
                                   std::string_view type) {
  std::string out;
  out.append("# HELP ").append(name).append(" ");
  for (char c : help) {
    out += c == '\\' ? "\\\\" : c == '\n' ? "\\n" : std::string(1, c);
  }
  out.append("\n# TYPE ").append(name).append(" ").append(type).append("\n");
  return out;
}

}  // namespace tpufleet
