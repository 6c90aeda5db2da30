#include "tpu_metrics/runtime_metrics_server.h"

#include <arpa/inet.h>
#include <grpcpp/grpcpp.h>
#include <grpcpp/security/server_credentials.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <regex>
#include <string>

#include "tpu_metrics/proto/tpu_metric_service.grpc.pb.h"
#include "util/unique_fd.h"

namespace tpufleet::tpu_metrics {
namespace {

namespace pb = ::tpu::monitoring::runtime;

// How long the destructor lets calls in flight finish before cancelling them.
constexpr std::chrono::milliseconds kShutdownGrace{100};

struct Served {
  const char* name;
  const char* description;
};
constexpr Served kServed[] = {
    {kDutyCycle, "Time over the last sampling period during which the TensorCores were busy, per chip."},
    {kHbmUsage, "High bandwidth memory in use, in bytes, per chip."},
    {kHbmTotal, "High bandwidth memory of the chip, in bytes."},
    {kHbmBandwidth, "Share of the high bandwidth memory's bandwidth in use, per chip."},
    {kIdleDuration, "Seconds the TensorCores have been idle, per chip."},
    {kHloQueue, "HLO programs queued to run, per core."},
};

const Served* FindServed(const std::string& name) {
  for (const Served& s : kServed) {
    if (name == s.name) {
      return &s;
    }
  }
  return nullptr;
}

// The value one device has for a device-keyed metric, if it has one.
std::optional<double> ValueOf(std::string_view name, const RuntimeChipMetrics& d, bool* as_int) {
  auto whole = [&](std::optional<int64_t> v) -> std::optional<double> {
    *as_int = true;
    return v ? std::optional<double>(static_cast<double>(*v)) : std::nullopt;
  };
  *as_int = false;
  if (name == kDutyCycle) {
    return d.duty_cycle_percent;
  }
  if (name == kHbmUsage) {
    return whole(d.hbm_usage_bytes);
  }
  if (name == kHbmTotal) {
    return whole(d.hbm_total_bytes);
  }
  if (name == kHbmBandwidth) {
    return d.hbm_bandwidth_percent;
  }
  return d.idle_seconds;  // kIdleDuration
}

class Service final : public pb::RuntimeMetricService::Service {
 public:
  explicit Service(RuntimeMetricsServerOptions options) : options_(std::move(options)) {}

  grpc::Status GetRuntimeMetric(grpc::ServerContext* /*context*/, const pb::MetricRequest* request,
                                pb::MetricResponse* response) override {
    const Served* served = FindServed(request->metric_name());
    if (served == nullptr) {
      return {grpc::StatusCode::NOT_FOUND,
              "metric " + request->metric_name() + " is not supported"};
    }
    pb::TPUMetric* metric = response->mutable_metric();
    metric->set_name(served->name);
    metric->set_description(served->description);
    auto now = std::chrono::system_clock::now().time_since_epoch();
    auto seconds = std::chrono::duration_cast<std::chrono::seconds>(now);
    for (const RuntimeChipMetrics& d : options_.metrics()) {
      auto add = [&]() {
        pb::Metric* m = metric->add_metrics();
        m->mutable_timestamp()->set_seconds(seconds.count());
        m->mutable_timestamp()->set_nanos(static_cast<int32_t>(
            std::chrono::duration_cast<std::chrono::nanoseconds>(now - seconds).count()));
        return m;
      };
      if (served->name == kHloQueue) {
        AddQueue(d, add);
        continue;
      }
      bool as_int = false;
      std::optional<double> v = ValueOf(served->name, d, &as_int);
      if (!v) {
        continue;
      }
      pb::Metric* m = add();
      m->mutable_attribute()->set_key(kDeviceIdKey);
      m->mutable_attribute()->mutable_value()->set_int_attr(d.device_id);
      if (as_int) {
        m->mutable_gauge()->set_as_int(static_cast<int64_t>(*v));
      } else {
        m->mutable_gauge()->set_as_double(*v);
      }
    }
    return grpc::Status::OK;
  }

  grpc::Status ListSupportedMetrics(grpc::ServerContext* /*context*/,
                                    const pb::ListSupportedMetricsRequest* request,
                                    pb::ListSupportedMetricsResponse* response) override {
    std::regex filter;
    try {  // std::regex reports a bad pattern only by throwing
      filter = std::regex(request->filter());
    } catch (const std::regex_error& e) {
      return {grpc::StatusCode::INVALID_ARGUMENT, "filter " + request->filter() + ": " + e.what()};
    }
    for (const Served& s : kServed) {
      if (std::regex_search(s.name, filter)) {
        response->add_supported_metric()->set_metric_name(s.name);
      }
    }
    return grpc::Status::OK;
  }

 private:
  // The device's queue, one gauge per core, the cores' shares summing to its length.
  template <typename Add>
  void AddQueue(const RuntimeChipMetrics& d, Add add) const {
    if (!d.hlo_queue) {
      return;
    }
    const int64_t cores = options_.queue_cores;
    for (int64_t c = 0; c < cores; ++c) {
      pb::Metric* m = add();
      m->mutable_attribute()->set_key("hlo_queue");
      pb::KeyValueList* kv = m->mutable_attribute()->mutable_value()->mutable_kvlist_attr();
      pb::Attribute* ordinal = kv->add_attributes();
      ordinal->set_key(kDeviceOrdinalKey);
      if (options_.int_device_ordinal) {
        ordinal->mutable_value()->set_int_attr(d.device_id);
      } else {
        ordinal->mutable_value()->set_string_attr(std::to_string(d.device_id));
      }
      pb::Attribute* core = kv->add_attributes();
      core->set_key(kCoreTypeKey);
      core->mutable_value()->set_string_attr(c == 0 ? "tensor_core" : "sparse_core");
      m->mutable_gauge()->set_as_int(*d.hlo_queue / cores + (c < *d.hlo_queue % cores ? 1 : 0));
    }
  }

  const RuntimeMetricsServerOptions options_;
};

// Whether a server socket could listen on 127.0.0.1:port now: gRPC says only that it
// failed (in a log line), this says why.
Status CheckPortFree(int port) {
  UniqueFd fd(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  int one = 1;
  ::setsockopt(fd.get(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);  // as gRPC's own
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::bind(fd.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 ||
      ::listen(fd.get(), 1) != 0) {
    return UnavailableError("127.0.0.1:" + std::to_string(port) + " is in use (" +
                            std::strerror(errno) + ")");
  }
  return Status::Ok();
}

}  // namespace

struct RuntimeMetricsServer::Impl {
  std::unique_ptr<Service> service;
  std::unique_ptr<grpc::Server> server;
};

Result<std::unique_ptr<RuntimeMetricsServer>> RuntimeMetricsServer::Start(
    RuntimeMetricsServerOptions options) {
  if (options.port < 0 || options.port > 65535) {
    return InvalidArgumentError("runtime metrics port " + std::to_string(options.port) +
                                " is not a port (1-65535)");
  }
  if (!options.metrics || options.queue_cores < 1) {
    return InvalidArgumentError("runtime metrics server: no metrics callback or no core");
  }
  if (options.port != 0) {
    TPUFLEET_TRY(CheckPortFree(options.port));
  }
  const int asked = options.port;
  auto impl = std::make_unique<Impl>();
  impl->service = std::make_unique<Service>(std::move(options));
  grpc::ServerBuilder builder;
  int port = 0;
  builder.AddListeningPort("127.0.0.1:" + std::to_string(asked),
                           grpc::experimental::LocalServerCredentials(LOCAL_TCP), &port);
  // gRPC sets SO_REUSEPORT by default: a second server on the port would then share it
  // and steal half the calls, where libtpu's second server fails.
  builder.AddChannelArgument(GRPC_ARG_ALLOW_REUSEPORT, 0);
  builder.RegisterService(impl->service.get());
  impl->server = builder.BuildAndStart();
  if (impl->server == nullptr || port == 0) {
    return UnavailableError("127.0.0.1:" + std::to_string(asked) +
                            " could not be listened on (in use?)");
  }
  return std::unique_ptr<RuntimeMetricsServer>(new RuntimeMetricsServer(std::move(impl), port));
}

RuntimeMetricsServer::RuntimeMetricsServer(std::unique_ptr<Impl> impl, int port)
    : impl_(std::move(impl)), port_(port) {}

RuntimeMetricsServer::~RuntimeMetricsServer() {
  impl_->server->Shutdown(std::chrono::system_clock::now() + kShutdownGrace);
  impl_->server->Wait();
}

}  // namespace tpufleet::tpu_metrics
