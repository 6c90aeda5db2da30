#include "tpu_metrics/runtime_metrics_client.h"

#include <grpcpp/grpcpp.h>

#include <algorithm>
#include <climits>
#include <cmath>
#include <cstdint>
#include <map>
#include <string>

#include "tpu_metrics/proto/tpu_metric_service.grpc.pb.h"
#include "util/strings.h"

namespace tpufleet::tpu_metrics {
namespace {

namespace pb = ::tpu::monitoring::runtime;
using Clock = std::chrono::system_clock;

constexpr int kMaxPort = 65535;

struct Channel {
  std::unique_ptr<pb::RuntimeMetricService::Stub> stub;
  uint64_t last_read = 0;  // the client's read counter when it was last used
};

std::unique_ptr<pb::RuntimeMetricService::Stub> Connect(int port) {
  grpc::ChannelArguments args;
  int backoff_ms = static_cast<int>(kReconnectBackoff.count());
  args.SetInt(GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS, backoff_ms);
  args.SetInt(GRPC_ARG_MIN_RECONNECT_BACKOFF_MS, backoff_ms);
  args.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS, backoff_ms);
  return pb::RuntimeMetricService::NewStub(grpc::CreateCustomChannel(
      "ipv4:127.0.0.1:" + std::to_string(port), grpc::InsecureChannelCredentials(), args));
}

// A gauge's value, whichever way it was sent.
std::optional<double> GaugeValue(const pb::Metric& m) {
  if (!m.has_gauge()) {
    return std::nullopt;
  }
  switch (m.gauge().value_case()) {
    case pb::Gauge::kAsDouble:
      return m.gauge().as_double();
    case pb::Gauge::kAsInt:
      return static_cast<double>(m.gauge().as_int());
    default:
      return std::nullopt;
  }
}

// An attribute value that names a device: an int, or a string holding one.
std::optional<int> DeviceOf(const pb::AttrValue& v) {
  long long id = 0;
  if (v.attr_case() == pb::AttrValue::kIntAttr) {
    id = v.int_attr();
  } else if (v.attr_case() != pb::AttrValue::kStringAttr || !ParseInt(Trim(v.string_attr()), &id)) {
    return std::nullopt;
  }
  if (id < 0 || id > INT32_MAX) {
    return std::nullopt;
  }
  return static_cast<int>(id);
}

// The device of a queue gauge: its key-value list's device_ordinal.
std::optional<int> QueueDeviceOf(const pb::Metric& m) {
  if (m.attribute().value().attr_case() != pb::AttrValue::kKvlistAttr) {
    return std::nullopt;
  }
  for (const pb::Attribute& a : m.attribute().value().kvlist_attr().attributes()) {
    if (a.key() == kDeviceOrdinalKey) {
      return DeviceOf(a.value());
    }
  }
  return std::nullopt;
}

// Stores one metric's values into `devices`.
void Store(std::string_view name, const pb::TPUMetric& metric,
           std::map<int, RuntimeChipMetrics>* devices) {
  const bool queue = name == kHloQueue;
  for (const pb::Metric& m : metric.metrics()) {
    std::optional<double> value = GaugeValue(m);
    std::optional<int> device = queue ? QueueDeviceOf(m) : DeviceOf(m.attribute().value());
    if (!value || !device || !std::isfinite(*value)) {
      continue;
    }
    RuntimeChipMetrics& d = (*devices)[*device];
    d.device_id = *device;
    auto whole = static_cast<int64_t>(std::llround(*value));
    if (queue) {
      d.hlo_queue = d.hlo_queue.value_or(0) + whole;  // one gauge per core of the device
    } else if (name == kDutyCycle) {
      d.duty_cycle_percent = *value;
    } else if (name == kHbmUsage) {
      d.hbm_usage_bytes = whole;
    } else if (name == kHbmTotal) {
      d.hbm_total_bytes = whole;
    } else if (name == kHbmBandwidth) {
      d.hbm_bandwidth_percent = *value;
    } else if (name == kIdleDuration) {
      d.idle_seconds = *value;
    }
  }
}

}  // namespace

struct RuntimeMetricsClient::Channels {
  std::map<int, Channel> by_port;
  uint64_t reads = 0;

  pb::RuntimeMetricService::Stub* For(int port) {
    auto it = by_port.find(port);
    if (it == by_port.end()) {
      if (by_port.size() >= kMaxChannels) {
        auto oldest = by_port.begin();
        for (auto c = by_port.begin(); c != by_port.end(); ++c) {
          oldest = c->second.last_read < oldest->second.last_read ? c : oldest;
        }
        by_port.erase(oldest);
      }
      it = by_port.emplace(port, Channel{Connect(port), 0}).first;
    }
    it->second.last_read = ++reads;
    return it->second.stub.get();
  }
};

RuntimeMetricsClient::RuntimeMetricsClient() : channels_(std::make_unique<Channels>()) {}
RuntimeMetricsClient::~RuntimeMetricsClient() = default;

Result<std::vector<RuntimeChipMetrics>> RuntimeMetricsClient::Read(int port,
                                                                   std::chrono::milliseconds deadline) {
  if (port < 1 || port > kMaxPort) {
    return InvalidArgumentError("runtime metrics port " + std::to_string(port) +
                                " is not a port (1-65535)");
  }
  pb::RuntimeMetricService::Stub* stub = channels_->For(port);
  const Clock::time_point until = Clock::now() + deadline;
  std::map<int, RuntimeChipMetrics> devices;
  for (const char* name : {kDutyCycle, kHbmUsage, kHbmTotal, kHbmBandwidth, kIdleDuration, kHloQueue}) {
    grpc::ClientContext context;
    context.set_deadline(until);
    pb::MetricRequest request;
    request.set_metric_name(name);
    pb::MetricResponse response;
    grpc::Status s = stub->GetRuntimeMetric(&context, request, &response);
    switch (s.error_code()) {
      case grpc::StatusCode::OK:
        Store(name, response.metric(), &devices);
        break;
      case grpc::StatusCode::NOT_FOUND:
      case grpc::StatusCode::UNIMPLEMENTED:
      case grpc::StatusCode::INVALID_ARGUMENT:
        break;  // a metric this libtpu does not serve
      case grpc::StatusCode::UNAVAILABLE:
        return UnavailableError("no runtime metrics on port " + std::to_string(port) +
                                " (no job using the TPU?)");
      case grpc::StatusCode::DEADLINE_EXCEEDED:
        return TimeoutError("the runtime metrics on port " + std::to_string(port) +
                            " did not answer within " + std::to_string(deadline.count()) + " ms");
      default:
        return UnavailableError("runtime metrics on port " + std::to_string(port) + ": " + name +
                                ": " + s.error_message() + " (gRPC code " +
                                std::to_string(static_cast<int>(s.error_code())) + ")");
    }
  }
  std::vector<RuntimeChipMetrics> out;
  for (auto& [id, d] : devices) {
    out.push_back(std::move(d));
  }
  return out;
}

std::vector<int> MetricsPorts(std::string_view tpu_runtime_metrics_ports) {
  std::vector<int> ports = {kDefaultMetricsPort};
  for (const std::string& part : Split(tpu_runtime_metrics_ports, ',')) {
    long long p = 0;
    if (ParseInt(Trim(part), &p) && p >= 1 && p <= kMaxPort &&
        std::find(ports.begin(), ports.end(), p) == ports.end()) {
      ports.push_back(static_cast<int>(p));
    }
  }
  return ports;
}

}  // namespace tpufleet::tpu_metrics
