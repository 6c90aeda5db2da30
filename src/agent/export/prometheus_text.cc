#include "agent/export/prometheus_text.h"

#include <optional>
#include <vector>

namespace tpufleet::agent::exporter {
namespace {

using Value = std::optional<std::string>;

Value Real(std::optional<double> v) {
  return v ? Value(PrometheusNumber(*v)) : std::nullopt;
}
Value Integer(std::optional<int64_t> v) {
  return v ? Value(std::to_string(*v)) : std::nullopt;
}

// One line of a family: its labels ("" or {a="x",…}) and its value (none: not written).
struct Series {
  std::string labels;
  Value value;
};

std::string Labels(std::initializer_list<std::pair<std::string_view, std::string_view>> labels) {
  std::string s = "{";
  for (const auto& [name, value] : labels) {
    if (s.size() > 1) {
      s += ',';
    }
    s.append(name).append("=\"").append(EscapeLabelValue(value)).append("\"");
  }
  return s + "}";
}

void WriteFamily(std::string& out, std::string_view name, std::string_view help,
                 const std::vector<Series>& series) {
  bool any = false;
  for (const Series& s : series) {
    any = any || s.value.has_value();
  }
  if (!any) {
    return;
  }
  out += PrometheusFamilyHeader(name, help, "gauge");
  for (const Series& s : series) {
    if (s.value) {
      out.append(name).append(s.labels).append(" ").append(*s.value).append("\n");
    }
  }
}

// A gauge of each item of a kind: its name, its HELP text, how to read it off an item.
template <typename T>
struct Gauge {
  std::string_view name;
  std::string_view help;
  Value (*value)(const T&);
};

const Gauge<ChipSample> kChipGauges[] = {
    {"tpufleet_chip_duty_cycle_percent",
     "Share of the last period in which the chip computed (TPU: TensorCore duty cycle; "
     "GPU: NVML utilization.gpu), percent.",
     [](const ChipSample& c) { return Real(c.duty_cycle_percent); }},
    {"tpufleet_chip_hbm_used_bytes", "Accelerator memory in use, bytes.",
     [](const ChipSample& c) { return Integer(c.hbm_used_bytes); }},
    {"tpufleet_chip_hbm_total_bytes", "Accelerator memory, bytes.",
     [](const ChipSample& c) { return Integer(c.hbm_total_bytes); }},
    {"tpufleet_chip_hbm_bandwidth_percent",
     "Accelerator memory bandwidth in use (GPU: NVML utilization.memory), percent.",
     [](const ChipSample& c) { return Real(c.hbm_bandwidth_percent); }},
    {"tpufleet_chip_idle_seconds", "Time the TensorCores have been idle, seconds.",
     [](const ChipSample& c) { return Real(c.idle_seconds); }},
    {"tpufleet_chip_hlo_queue", "HLO programs queued on the chip's cores.",
     [](const ChipSample& c) { return Integer(c.hlo_queue); }},
};

const Gauge<HostSample> kHostGauges[] = {
    {"tpufleet_host_cpus", "Online CPUs.",
     [](const HostSample& h) { return Integer(h.cpus); }},
    {"tpufleet_host_cpu_percent", "Busy share of all CPUs since the last sample, percent.",
     [](const HostSample& h) { return Real(h.cpu_percent); }},
    {"tpufleet_host_memory_used_bytes", "Memory in use (MemTotal - MemAvailable), bytes.",
     [](const HostSample& h) { return Integer(h.memory_used_bytes); }},
    {"tpufleet_host_memory_total_bytes", "Memory, bytes.",
     [](const HostSample& h) { return Integer(h.memory_total_bytes); }},
    {"tpufleet_host_logins", "Interactive login sessions.",
     [](const HostSample& h) { return Integer(h.logins); }},
    {"tpufleet_host_disk_read_bytes_per_second", "Bytes read from whole disks, per second.",
     [](const HostSample& h) { return Real(h.disk_read_bytes_per_second); }},
    {"tpufleet_host_disk_write_bytes_per_second", "Bytes written to whole disks, per second.",
     [](const HostSample& h) { return Real(h.disk_write_bytes_per_second); }},
    {"tpufleet_host_net_rx_bytes_per_second", "Bytes received (not loopback), per second.",
     [](const HostSample& h) { return Real(h.net_rx_bytes_per_second); }},
    {"tpufleet_host_net_tx_bytes_per_second", "Bytes sent (not loopback), per second.",
     [](const HostSample& h) { return Real(h.net_tx_bytes_per_second); }},
};

const Gauge<JobSample> kJobGauges[] = {
    {"tpufleet_job_cpu_percent", "CPU of the job's processes, percent of one CPU.",
     [](const JobSample& j) { return Real(j.cpu_percent); }},
    {"tpufleet_job_cpu_limit_percent",
     "CPU the job may use (affinity, cpu.max), percent of one CPU.",
     [](const JobSample& j) { return Real(j.cpu_limit_percent); }},
    {"tpufleet_job_busiest_thread_percent",
     "CPU of the job's busiest thread, percent of one CPU (100: a saturated GIL).",
     [](const JobSample& j) { return Real(j.busiest_thread_percent); }},
    {"tpufleet_job_memory_bytes", "Resident memory of the job's processes, bytes.",
     [](const JobSample& j) { return Integer(j.memory_bytes); }},
};

}  // namespace

std::string PrometheusText(const MetricsReport& report) {
  const WorkerSample& sample = report.sample;
  std::string out;
  if (sample.time_unix_ms == 0) {
    return out;
  }
  std::vector<std::string> chip_labels;
  for (const ChipSample& c : sample.chips) {
    const ChipHolder* h = c.holders.empty() ? nullptr : &c.holders.front();
    chip_labels.push_back(Labels({{"chip", std::to_string(c.index)},
                                  {"kind", c.kind},
                                  {"device", c.device},
                                  {"job_id", h != nullptr ? h->job : ""},
                                  {"user", h != nullptr ? h->user : ""}}));
  }
  for (const Gauge<ChipSample>& g : kChipGauges) {
    std::vector<Series> series;
    for (size_t i = 0; i < sample.chips.size(); ++i) {
      series.push_back({chip_labels[i], g.value(sample.chips[i])});
    }
    WriteFamily(out, g.name, g.help, series);
  }
  for (const Gauge<HostSample>& g : kHostGauges) {
    WriteFamily(out, g.name, g.help, {Series{"", g.value(sample.host)}});
  }
  for (const Gauge<JobSample>& g : kJobGauges) {
    std::vector<Series> series;
    for (const JobSample& j : sample.jobs) {
      series.push_back({Labels({{"job_id", j.id}, {"user", j.user}}), g.value(j)});
    }
    WriteFamily(out, g.name, g.help, series);
  }
  int64_t idle_since = report.window.idle_since_unix_ms;
  double idle = idle_since > 0 && sample.time_unix_ms > idle_since
                    ? static_cast<double>(sample.time_unix_ms - idle_since) / 1000
                    : 0;
  WriteFamily(out, "tpufleet_worker_idle_seconds",
              "Time since anything (a job, a login, a chip's holder or duty cycle) used the "
              "worker, seconds; 0 while something does.",
              {Series{"", Real(idle)}});
  return out;
}

}  // namespace tpufleet::agent::exporter
