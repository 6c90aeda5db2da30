#include "ssh/holder_protocol.h"

#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

namespace tpufleet {

namespace {

using nlohmann::json;
using std::chrono::milliseconds;

/// A request is four levels deep (request, job, hosts, host); anything much deeper is
/// not one, and the JSON parser's memory grows with the depth.
constexpr size_t kMaxJsonDepth = 16;
/// The biggest TCP port.
constexpr int64_t kMaxPort = 65535;

void PutU32(std::string& out, uint32_t v) {
  for (int shift = 24; shift >= 0; shift -= 8) {
    out.push_back(static_cast<char>((v >> shift) & 0xff));
  }
}

// Whether `text` nests arrays and objects at most `limit` deep (strings skipped).
bool NestsAtMost(std::string_view text, size_t limit) {
  size_t depth = 0;
  bool in_string = false;
  bool escaped = false;
  for (char c : text) {
    if (in_string) {
      if (escaped) {
        escaped = false;
      } else if (c == '\\') {
        escaped = true;
      } else if (c == '"') {
        in_string = false;
      }
    } else if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      if (++depth > limit) {
        return false;
      }
    } else if ((c == ']' || c == '}') && depth > 0) {
      --depth;
    }
  }
  return true;
}

// Typed reads of one field of a JSON object: InvalidArgument naming `where.key`.
class Fields {
 public:
  Fields(const json& object, std::string where) : object_(object), where_(std::move(where)) {}

  // A string; `fallback` when the key is absent, if given.
  Result<std::string> String(const char* key, std::optional<std::string_view> fallback = {}) const {
    const json* v = Find(key);
    if (!v && fallback) {
      return std::string(*fallback);
    }
    if (!v || !v->is_string()) {
      return Bad(key, "a string");
    }
    return v->get_ref<const std::string&>();
  }
  Result<bool> Bool(const char* key) const {
    const json* v = Find(key);
    if (!v || !v->is_boolean()) {
      return Bad(key, "true or false");
    }
    return v->get<bool>();
  }
  // An integer in [lo, hi]; `fallback` when the key is absent, if given.
  Result<int64_t> Int(const char* key, int64_t lo, int64_t hi,
                      std::optional<int64_t> fallback = {}) const {
    const json* v = Find(key);
    if (!v && fallback) {
      return *fallback;
    }
    std::string range = "an integer from " + std::to_string(lo) + " to " + std::to_string(hi);
    if (!v || !v->is_number_integer()) {
      return Bad(key, range);
    }
    if (v->is_number_unsigned()) {
      uint64_t u = v->get<uint64_t>();
      if (u > static_cast<uint64_t>(hi) || (lo > 0 && u < static_cast<uint64_t>(lo))) {
        return Bad(key, range);
      }
      return static_cast<int64_t>(u);
    }
    int64_t i = v->get<int64_t>();
    if (i < lo || i > hi) {
      return Bad(key, range);
    }
    return i;
  }
  Result<milliseconds> Millis(const char* key, std::optional<int64_t> fallback = {}) const {
    TPUFLEET_ASSIGN_OR_RETURN(
        int64_t ms, Int(key, 0, milliseconds(kHolderMaxTimeout).count(), fallback));
    return milliseconds(ms);
  }

 private:
  const json* Find(const char* key) const {
    auto it = object_.find(key);
    return it == object_.end() ? nullptr : &*it;
  }
  Status Bad(const char* key, const std::string& what) const {
    return InvalidArgumentError("holder request: " + where_ + key + " must be " + what);
  }

  const json& object_;
  const std::string where_;
};

Result<FanoutHost> HostFromJson(const json& h, const std::string& where) {
  if (!h.is_object()) {
    return InvalidArgumentError("holder request: " + where + " must be an object");
  }
  Fields f(h, where + ".");
  FanoutHost host;
  TPUFLEET_ASSIGN_OR_RETURN(host.name, f.String("name"));
  TPUFLEET_ASSIGN_OR_RETURN(host.address, f.String("address"));
  TPUFLEET_ASSIGN_OR_RETURN(int64_t port, f.Int("port", 1, kMaxPort));
  host.port = static_cast<int>(port);
  TPUFLEET_ASSIGN_OR_RETURN(host.user, f.String("user"));
  TPUFLEET_ASSIGN_OR_RETURN(host.host_key, f.String("host_key"));
  TPUFLEET_ASSIGN_OR_RETURN(host.command, f.String("command"));
  TPUFLEET_ASSIGN_OR_RETURN(host.no_input, f.Bool("no_input"));
  // Absent from clients older than the fields: the command runs, as they meant.
  TPUFLEET_ASSIGN_OR_RETURN(host.unix_socket, f.String("unix_socket", ""));
  TPUFLEET_ASSIGN_OR_RETURN(host.socket_input, f.String("socket_input", ""));
  return host;
}

Result<FanoutJob> JobFromJson(const json& j) {
  if (!j.is_object()) {
    return InvalidArgumentError("holder request: \"job\" must be an object");
  }
  Fields f(j, "job.");
  FanoutJob job;
  auto hosts = j.find("hosts");
  if (hosts == j.end() || !hosts->is_array()) {
    return InvalidArgumentError("holder request: job.hosts must be an array");
  }
  for (size_t i = 0; i < hosts->size(); ++i) {
    TPUFLEET_ASSIGN_OR_RETURN(FanoutHost host,
                              HostFromJson((*hosts)[i], "job.hosts[" + std::to_string(i) + "]"));
    job.hosts.push_back(std::move(host));
  }
  TPUFLEET_ASSIGN_OR_RETURN(job.command, f.String("command"));
  TPUFLEET_ASSIGN_OR_RETURN(job.key_path, f.String("key_path"));
  TPUFLEET_ASSIGN_OR_RETURN(job.stdin_path, f.String("stdin_path"));
  TPUFLEET_ASSIGN_OR_RETURN(job.stdin_header, f.String("stdin_header"));
  TPUFLEET_ASSIGN_OR_RETURN(int64_t parallel,
                            f.Int("max_parallel", 0, std::numeric_limits<int64_t>::max()));
  job.max_parallel = static_cast<size_t>(parallel);
  TPUFLEET_ASSIGN_OR_RETURN(job.connect_timeout, f.Millis("connect_timeout_ms"));
  TPUFLEET_ASSIGN_OR_RETURN(job.command_timeout, f.Millis("command_timeout_ms"));
  // Absent from clients older than the field: no limit, as they meant.
  TPUFLEET_ASSIGN_OR_RETURN(job.input_stall_timeout, f.Millis("input_stall_timeout_ms", 0));
  TPUFLEET_ASSIGN_OR_RETURN(job.fail_fast, f.Bool("fail_fast"));
  TPUFLEET_ASSIGN_OR_RETURN(job.hold_stdin, f.Bool("hold_stdin"));
  return job;
}

json JobToJson(const FanoutJob& job) {
  json hosts = json::array();
  for (const auto& h : job.hosts) {
    hosts.push_back({{"name", h.name},
                     {"address", h.address},
                     {"port", h.port},
                     {"user", h.user},
                     {"host_key", h.host_key},
                     {"command", h.command},
                     {"no_input", h.no_input},
                     {"unix_socket", h.unix_socket},
                     {"socket_input", h.socket_input}});
  }
  return {{"hosts", hosts},
          {"command", job.command},
          {"key_path", job.key_path},
          {"stdin_path", job.stdin_path},
          {"stdin_header", job.stdin_header},
          {"max_parallel", job.max_parallel},
          {"connect_timeout_ms", job.connect_timeout.count()},
          {"command_timeout_ms", job.command_timeout.count()},
          {"input_stall_timeout_ms", job.input_stall_timeout.count()},
          {"fail_fast", job.fail_fast},
          {"hold_stdin", job.hold_stdin}};
}

// For what people read (messages): bytes that are not UTF-8 become U+FFFD, not a throw.
std::string DumpText(const json& j) {
  return j.dump(-1, ' ', false, json::error_handler_t::replace);
}

}  // namespace

uint32_t DecodeHolderU32(const char* p) {
  uint32_t v = 0;
  for (int i = 0; i < 4; ++i) {
    v = (v << 8) | static_cast<unsigned char>(p[i]);
  }
  return v;
}

Result<std::string> EncodeHolderRequest(HolderRequest::Op op, const FanoutJob* job) {
  json request = {{"op", op == HolderRequest::Op::kRun      ? "run"
                         : op == HolderRequest::Op::kStatus ? "status"
                                                            : "stop"}};
  if (job) {
    request["job"] = JobToJson(*job);
  }
  std::string body;
  try {
    body = request.dump();  // strict: a command's bytes must cross unchanged
  } catch (const json::exception&) {
    return InvalidArgumentError("the job's command or paths are not UTF-8 text");
  }
  if (body.size() > kHolderMaxRequestBytes) {
    return InvalidArgumentError("the job is larger than a holder request may be");
  }
  std::string out;
  PutU32(out, static_cast<uint32_t>(body.size()));
  return out + body;
}

Result<std::optional<HolderRequest>> TakeHolderRequest(std::string_view received) {
  if (received.size() < kHolderLengthBytes) {
    return std::optional<HolderRequest>();
  }
  uint32_t len = DecodeHolderU32(received.data());
  if (len > kHolderMaxRequestBytes) {
    return InvalidArgumentError("holder request too large: " + std::to_string(len) +
                                " bytes, at most " + std::to_string(kHolderMaxRequestBytes));
  }
  if (received.size() - kHolderLengthBytes < len) {
    return std::optional<HolderRequest>();
  }
  std::string_view body = received.substr(kHolderLengthBytes, len);
  if (!NestsAtMost(body, kMaxJsonDepth)) {
    return InvalidArgumentError("holder request: JSON nested deeper than " +
                                std::to_string(kMaxJsonDepth) + " levels");
  }
  json j = json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) {
    return InvalidArgumentError("holder request: not JSON");
  }
  if (!j.is_object()) {
    return InvalidArgumentError("holder request: not a JSON object");
  }
  auto op = j.find("op");
  if (op == j.end() || !op->is_string()) {
    return InvalidArgumentError("holder request: \"op\" must be a string");
  }
  HolderRequest request;
  const std::string& name = op->get_ref<const std::string&>();
  if (name == "status") {
    request.op = HolderRequest::Op::kStatus;
  } else if (name == "stop") {
    request.op = HolderRequest::Op::kStop;
  } else if (name == "run") {
    request.op = HolderRequest::Op::kRun;
    auto job = j.find("job");
    if (job == j.end()) {
      return InvalidArgumentError("holder request: \"run\" needs a \"job\"");
    }
    TPUFLEET_ASSIGN_OR_RETURN(request.job, JobFromJson(*job));
  } else {
    return InvalidArgumentError("unknown holder request \"" + name.substr(0, 64) + "\"");
  }
  return std::optional<HolderRequest>(std::move(request));
}

void AppendHolderFrame(std::string& out, HolderFrame type, size_t host,
                       std::string_view payload) {
  out.push_back(static_cast<char>(type));
  PutU32(out, static_cast<uint32_t>(host));
  PutU32(out, static_cast<uint32_t>(payload.size()));
  out.append(payload);
}

std::string EncodeHostResult(const HostResult& r) {
  return DumpText({{"outcome", static_cast<int>(r.outcome)},
                   {"exit_code", r.exit_code},
                   {"signal", r.signal},
                   {"message", r.message}});
}

HostResult DecodeHostResult(std::string_view payload) {
  const HostResult malformed{HostOutcome::kUnreachable, 0, "",
                             "the holder sent a malformed result"};
  json j = json::parse(payload, nullptr, false);
  if (!j.is_object()) {
    return malformed;
  }
  Fields f(j, "");
  auto outcome = f.Int("outcome", static_cast<int>(HostOutcome::kExited),
                       static_cast<int>(HostOutcome::kCancelled), 0);
  auto exit_code = f.Int("exit_code", std::numeric_limits<int>::min(),
                         std::numeric_limits<int>::max(), 0);
  auto signal = j.contains("signal") ? f.String("signal") : Result<std::string>("");
  auto message = j.contains("message") ? f.String("message") : Result<std::string>("");
  if (!outcome.ok() || !exit_code.ok() || !signal.ok() || !message.ok()) {
    return malformed;
  }
  return HostResult{static_cast<HostOutcome>(*outcome), static_cast<int>(*exit_code), *signal,
                    *message};
}

std::string EncodeHolderError(const Status& status) {
  return DumpText({{"code", static_cast<int>(status.code())}, {"message", status.message()}});
}

Status DecodeHolderError(std::string_view payload) {
  json j = json::parse(payload, nullptr, false);
  if (j.is_object()) {
    Fields f(j, "");
    auto code = f.Int("code", static_cast<int>(StatusCode::kOk) + 1,
                      static_cast<int>(StatusCode::kInternal));
    auto message = f.String("message");
    if (code.ok() && message.ok()) {
      return Status(static_cast<StatusCode>(*code), *message);
    }
  }
  return InternalError("the connection holder refused the job");
}

std::string EncodeHolderStats(const HolderStats& s) {
  return DumpText({{"pid", s.pid},
                   {"connections", s.connections},
                   {"busy", s.busy},
                   {"peak_backlog_bytes", s.peak_backlog_bytes}});
}

}  // namespace tpufleet
