#include "api/agent.h"

#include <algorithm>
#include <limits>
#include <utility>

#include "api/json_internal.h"
#include "util/enum_names.h"
#include "util/strings.h"

namespace tpufleet::api {
namespace {

using internal::Dump;
using internal::kDocumentIndent;
using nlohmann::json;

constexpr EnumName<AgentOp> kOps[] = {
    {AgentOp::kHello, "hello"},          {AgentOp::kJobStart, "job.start"},
    {AgentOp::kJobList, "job.list"},     {AgentOp::kJobCancel, "job.cancel"},
    {AgentOp::kJobLogs, "job.logs"},     {AgentOp::kJobWatch, "job.watch"},
    {AgentOp::kDevices, "devices"},      {AgentOp::kDoctor, "doctor"},
    {AgentOp::kAccountsApply, "accounts.apply"},
};

constexpr EnumName<JobState> kStates[] = {
    {JobState::kStarting, "starting"},   {JobState::kWaiting, "waiting"},
    {JobState::kRunning, "running"},     {JobState::kSucceeded, "succeeded"},
    {JobState::kFailed, "failed"},       {JobState::kCancelled, "cancelled"},
    {JobState::kLost, "lost"},
};

// The protocol's error codes: upper case, like gRPC's.
constexpr EnumName<StatusCode> kCodes[] = {
    {StatusCode::kInvalidArgument, "INVALID_ARGUMENT"},
    {StatusCode::kNotFound, "NOT_FOUND"},
    {StatusCode::kAlreadyExists, "ALREADY_EXISTS"},
    {StatusCode::kPermissionDenied, "PERMISSION_DENIED"},
    {StatusCode::kFailedPrecondition, "FAILED_PRECONDITION"},
    {StatusCode::kUnavailable, "UNAVAILABLE"},
    {StatusCode::kInternal, "INTERNAL"},
    {StatusCode::kTimeout, "TIMEOUT"},
    {StatusCode::kResourceExhausted, "RESOURCE_EXHAUSTED"},
};

// --- each struct's fields, once, for writing and for reading -----------------------
//
// Visit(x, f) calls f(key, member, omit_empty) for each field of x. omit_empty marks
// the fields written only when set. The writer only reads the members (it gets them
// through a const_cast); the reader fills them.

template <typename F>
void Visit(JobTopology& t, F& f) {
  f("accelerator_type", t.accelerator_type, false);
  f("worker_addresses", t.worker_addresses, false);
  f("chips_per_host", t.chips_per_host, false);
  f("coordinator_port", t.coordinator_port, false);
}

template <typename F>
void Visit(JobSpec& s, F& f) {
  f("id", s.id, false);
  f("name", s.name, false);
  f("user", s.user, false);
  f("command", s.command, false);
  f("workdir", s.workdir, false);
  f("env", s.env, false);
  f("accelerator", s.accelerator, false);
  f("no_wait", s.no_wait, false);
  f("kill_stale", s.kill_stale, false);
  f("keep_going", s.keep_going, false);
  f("pty", s.pty, false);
  f("topology", s.topology, false);
  f("worker", s.worker, false);
  f("started_by", s.started_by, false);
}

template <typename F>
void Visit(TpuHolder& h, F& f) {
  f("pid", h.pid, false);
  f("user", h.user, false);
  f("command", h.command, false);
  f("job", h.job, false);
}

template <typename F>
void Visit(JobOnWorker& j, F& f) {
  f("id", j.id, false);
  f("name", j.name, false);
  f("user", j.user, false);
  f("command", j.command, false);
  f("worker", j.worker, false);
  f("state", j.state, false);
  f("pid", j.pid, false);
  f("exit_code", j.exit_code, true);
  f("signal", j.signal, true);
  f("created_unix_ms", j.created_unix_ms, false);
  f("started_unix_ms", j.started_unix_ms, false);
  f("ended_unix_ms", j.ended_unix_ms, false);
  f("waiting_for", j.waiting_for, true);
  f("message", j.message, true);
  f("started_by", j.started_by, false);
  f("keep_going", j.keep_going, false);
  f("world_size", j.world_size, false);
}

template <typename F>
void Visit(DoctorExpect& e, F& f) {
  f("accelerator_type", e.accelerator_type, false);
  f("chips_per_host", e.chips_per_host, false);
  f("worker", e.worker, false);
  f("endpoints", e.endpoints, false);
}

template <typename F>
void Visit(AccountSpec& a, F& f) {
  f("name", a.name, false);
  f("keys", a.keys, false);
  f("sudo", a.sudo, false);
}

template <typename F>
void Visit(AgentHello& h, F& f) {
  f("agent_version", h.agent_version, false);
  f("binary_sha256", h.binary_sha256, false);
  f("protocol", h.protocol, false);
  f("hostname", h.hostname, false);
  f("boot_id", h.boot_id, false);
  f("time_unix_ms", h.time_unix_ms, false);
  f("uid", h.uid, false);
}

template <typename F>
void Visit(AgentDevice& d, F& f) {
  f("index", d.index, false);
  f("path", d.path, false);
  f("pci_address", d.pci_address, false);
  f("family", d.family, false);
}

template <typename F>
void Visit(AgentLockfile& l, F& f) {
  f("present", l.present, false);
  f("locked_by_pid", l.locked_by_pid, false);
}

template <typename F>
void Visit(DeviceHolder& h, F& f) {
  f("device", h.device, false);
  f("pid", h.pid, false);
  f("user", h.user, false);
  f("command", h.command, false);
  f("job", h.job, false);
}

template <typename F>
void Visit(DevicesReport& r, F& f) {
  f("devices", r.devices, false);
  f("lockfile", r.lockfile, false);
  f("holders", r.holders, false);
}

template <typename F>
void Visit(DoctorCheck& c, F& f) {
  f("name", c.name, false);
  f("ok", c.ok, false);
  f("detail", c.detail, false);
  f("fix", c.fix, false);
}

template <typename F>
void Visit(DoctorReport& r, F& f) {
  f("checks", r.checks, false);
  f("time_unix_ms", r.time_unix_ms, false);
}

template <typename F>
void Visit(AccountResult& r, F& f) {
  f("name", r.name, false);
  f("action", r.action, false);
  f("error", r.error, false);
}

template <typename F>
void Visit(LogChunk& c, F& f) {
  f("stream", c.stream, false);
  f("data", c.data, false);
}

// --- writing -------------------------------------------------------------------------

// The fields written only when set are strings and optionals.
bool IsEmpty(const std::string& v) { return v.empty(); }
template <typename T>
bool IsEmpty(const std::optional<T>& v) {
  return !v.has_value();
}
template <typename T>
bool IsEmpty(const T& /*v*/) {
  return false;
}

json ToJ(const std::string& v) { return v; }
json ToJ(int v) { return v; }
json ToJ(int64_t v) { return v; }
json ToJ(bool v) { return v; }
json ToJ(JobState v) { return std::string(JobStateName(v)); }
json ToJ(const std::map<std::string, std::string>& v) { return v; }
template <typename T>
json ToJ(const std::vector<T>& v);
template <typename T>
json ToJ(const T& x);
template <typename T>
json ToJ(const std::optional<T>& v) {
  return v ? ToJ(*v) : json(nullptr);
}

struct Writer {
  json& out;
  template <typename T>
  void operator()(const char* key, const T& value, bool omit_empty) {
    if (omit_empty && IsEmpty(value)) {
      return;
    }
    out[key] = ToJ(value);
  }
};

template <typename T>
json ToJ(const std::vector<T>& v) {
  json out = json::array();
  for (const T& x : v) {
    out.push_back(ToJ(x));
  }
  return out;
}

// A struct with a Visit: its object.
template <typename T>
json ToJ(const T& x) {
  json out = json::object();
  Writer w{out};
  Visit(const_cast<T&>(x), w);  // the writer only reads
  return out;
}

json ErrorJ(const Status& status) {
  return {{"code", std::string(NameIn(kCodes, status.code(), "INTERNAL"))},
          {"message", status.message()}};
}

// A line of an answer: "v" and the rest.
std::string Line(json j) {
  j["v"] = kAgentProtocolVersion;
  return Dump(j, -1);
}

// --- reading -------------------------------------------------------------------------

std::string Quoted(const std::string& path) { return "\"" + path + "\""; }

Status WrongType(const std::string& path, const json& v, const char* wanted) {
  return InvalidArgumentError(Quoted(path) + " is " + std::string(v.type_name()) + ", not " +
                              wanted);
}

Status FromJ(const json& v, const std::string& path, std::string& out) {
  if (!v.is_string()) {
    return WrongType(path, v, "a string");
  }
  out = v.get<std::string>();
  return Status::Ok();
}

Status FromJ(const json& v, const std::string& path, int64_t& out) {
  if (!v.is_number_integer()) {
    return WrongType(path, v, "an integer");
  }
  if (v.is_number_unsigned() &&
      v.get<uint64_t>() > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
    return InvalidArgumentError(Quoted(path) + " is too large");
  }
  out = v.get<int64_t>();
  return Status::Ok();
}

Status FromJ(const json& v, const std::string& path, int& out) {
  int64_t wide = 0;
  TPUFLEET_TRY(FromJ(v, path, wide));
  if (wide < std::numeric_limits<int>::min() || wide > std::numeric_limits<int>::max()) {
    return InvalidArgumentError(Quoted(path) + " is out of range");
  }
  out = static_cast<int>(wide);
  return Status::Ok();
}

Status FromJ(const json& v, const std::string& path, bool& out) {
  if (!v.is_boolean()) {
    return WrongType(path, v, "true or false");
  }
  out = v.get<bool>();
  return Status::Ok();
}

Status FromJ(const json& v, const std::string& path, JobState& out) {
  std::string name;
  TPUFLEET_TRY(FromJ(v, path, name));
  std::optional<JobState> state = JobStateFromName(name);
  if (!state) {
    return InvalidArgumentError(Quoted(path) + " is \"" + name + "\", not one of " +
                                Join(NamesIn(kStates), ", "));
  }
  out = *state;
  return Status::Ok();
}

Status FromJ(const json& v, const std::string& path, std::map<std::string, std::string>& out) {
  if (!v.is_object()) {
    return WrongType(path, v, "an object");
  }
  for (const auto& [key, value] : v.items()) {
    TPUFLEET_TRY(FromJ(value, path + "." + key, out[key]));
  }
  return Status::Ok();
}

template <typename T>
Status FromJ(const json& v, const std::string& path, std::vector<T>& out);
template <typename T>
Status FromJ(const json& v, const std::string& path, T& out);
template <typename T>
Status FromJ(const json& v, const std::string& path, std::optional<T>& out) {
  return FromJ(v, path, out.emplace());
}

struct Reader {
  const json& in;
  const std::string& prefix;  // "job." for the fields of "job"; "" at the top
  Status status;
  template <typename T>
  void operator()(const char* key, T& out, bool /*omit_empty*/) {
    if (!status.ok()) {
      return;
    }
    auto it = in.find(key);
    if (it == in.end() || it->is_null()) {
      return;
    }
    status = FromJ(*it, prefix + key, out);
  }
};

template <typename T>
Status FromJ(const json& v, const std::string& path, std::vector<T>& out) {
  if (!v.is_array()) {
    return WrongType(path, v, "a list");
  }
  out.clear();
  for (size_t i = 0; i < v.size(); ++i) {
    TPUFLEET_TRY(FromJ(v[i], path + "[" + std::to_string(i) + "]", out.emplace_back()));
  }
  return Status::Ok();
}

// A struct with a Visit: read from its object, its fields' defaults kept for the keys
// the object lacks.
template <typename T>
Status FromJ(const json& v, const std::string& path, T& out) {
  if (!v.is_object()) {
    return WrongType(path, v, "an object");
  }
  std::string prefix = path.empty() ? "" : path + ".";
  Reader r{v, prefix, Status::Ok()};
  Visit(out, r);
  return r.status;
}

// `line` as a JSON object, within the size bound, with a "v" this build speaks.
Result<json> ParseLine(std::string_view line, const char* what) {
  if (line.size() > kMaxAgentLineBytes) {
    return InvalidArgumentError(std::string(what) + " of " + std::to_string(line.size()) +
                                " bytes is over the limit of " +
                                std::to_string(kMaxAgentLineBytes) + " bytes");
  }
  json j = json::parse(line, nullptr, /*allow_exceptions=*/false);
  if (!j.is_object()) {
    return InvalidArgumentError(std::string(what) + " is not a JSON object");
  }
  return j;
}

std::string VersionsSpoken() {
  std::vector<std::string> versions;
  for (int v : kAgentProtocolVersions) {
    versions.push_back(std::to_string(v));
  }
  return Join(versions, ", ");
}

Status CheckVersion(const json& j, const char* what) {
  auto it = j.find("v");
  if (it == j.end()) {
    return InvalidArgumentError(std::string(what) + " has no \"v\" (the protocol version; " +
                                "this agent speaks " + VersionsSpoken() + ")");
  }
  int v = 0;
  TPUFLEET_TRY(FromJ(*it, "v", v));
  if (std::find(std::begin(kAgentProtocolVersions), std::end(kAgentProtocolVersions), v) ==
      std::end(kAgentProtocolVersions)) {
    return FailedPreconditionError("protocol version " + std::to_string(v) +
                                   " is not spoken here: this agent speaks " +
                                   VersionsSpoken());
  }
  return Status::Ok();
}

// The request's fields, for writing (only those of its op) and reading (all of them:
// the op's checks say which must be there).
template <typename F>
void VisitRequest(AgentRequest& r, F& f, bool only_op) {
  auto field = [&](bool for_op, const char* key, auto& member) {
    if (!only_op || for_op) {
      f(key, member, false);
    }
  };
  AgentOp op = r.op;
  field(op == AgentOp::kJobStart, "job", r.job);
  field(op == AgentOp::kJobStart, "dry_run", r.dry_run);
  field(op == AgentOp::kJobList || op == AgentOp::kJobWatch, "ids", r.ids);
  field(op == AgentOp::kJobCancel || op == AgentOp::kJobLogs, "id", r.id);
  field(op == AgentOp::kJobCancel, "grace_seconds", r.grace_seconds);
  field(op == AgentOp::kJobLogs, "follow", r.follow);
  field(op == AgentOp::kDoctor, "expect", r.expect);
  field(op == AgentOp::kAccountsApply, "users", r.users);
  if (!only_op || r.tail) {
    field(op == AgentOp::kJobLogs, "tail", r.tail);
  }
  if (!only_op || r.worker) {
    f("worker", r.worker, false);
  }
}

// What an op needs beyond well-typed fields.
Status CheckRequest(const AgentRequest& r) {
  std::string op(AgentOpName(r.op));
  switch (r.op) {
    case AgentOp::kJobStart:
      if (r.job.id.empty() || r.job.command.empty()) {
        return InvalidArgumentError(op + " needs job.id and job.command");
      }
      break;
    case AgentOp::kJobCancel:
    case AgentOp::kJobLogs:
      if (r.id.empty()) {
        return InvalidArgumentError(op + " needs \"id\", the job's id");
      }
      break;
    case AgentOp::kJobWatch:
      if (r.ids.empty()) {
        return InvalidArgumentError(op + " needs \"ids\", the jobs to watch");
      }
      break;
    default:
      break;
  }
  if (r.grace_seconds < 0 || (r.tail && *r.tail < 0)) {
    return InvalidArgumentError(op + ": \"grace_seconds\" and \"tail\" cannot be negative");
  }
  if (r.worker && *r.worker < 0) {
    return InvalidArgumentError(op + ": \"worker\" cannot be negative");
  }
  return Status::Ok();
}

template <typename T>
Result<T> ParseDocument(std::string_view text, const char* what) {
  TPUFLEET_ASSIGN_OR_RETURN(json j, ParseLine(text, what));
  T out;
  Status read = FromJ(j, "", out);
  if (!read.ok()) {
    return read.WithContext(what);
  }
  return out;
}

// The one-shot body of `op` from answer line `j`.
Status ReadBody(const json& j, AgentOp op, AgentBody& body) {
  auto read_as = [&](auto value, const char* key) -> Status {
    if (key == nullptr) {
      TPUFLEET_TRY(FromJ(j, "", value));
    } else if (auto it = j.find(key); it != j.end()) {
      TPUFLEET_TRY(FromJ(*it, key, value));
    }
    body = std::move(value);
    return Status::Ok();
  };
  switch (op) {
    case AgentOp::kHello:
      return read_as(AgentHello{}, nullptr);
    case AgentOp::kJobStart:
    case AgentOp::kJobCancel:
      return read_as(JobOnWorker{}, "job");
    case AgentOp::kJobList:
      return read_as(std::vector<JobOnWorker>{}, "jobs");
    case AgentOp::kDevices:
      return read_as(DevicesReport{}, nullptr);
    case AgentOp::kDoctor:
      return read_as(DoctorReport{}, nullptr);
    case AgentOp::kAccountsApply:
      return read_as(std::vector<AccountResult>{}, "results");
    case AgentOp::kJobLogs:
    case AgentOp::kJobWatch:
      break;
  }
  return Status::Ok();
}

// Sets *out to the status of an answer or end line: OK, or its "error".
Status ReadStatus(const json& j, Status* out) {
  bool ok = false;
  TPUFLEET_TRY(FromJ(j.at("ok"), "ok", ok));
  if (ok) {
    *out = Status::Ok();
    return Status::Ok();
  }
  auto it = j.find("error");
  if (it == j.end() || !it->is_object()) {
    return InvalidArgumentError("answer: \"ok\" is false and there is no \"error\" object");
  }
  std::string code;
  std::string message;
  TPUFLEET_TRY(FromJ(it->value("code", json("INTERNAL")), "error.code", code));
  TPUFLEET_TRY(FromJ(it->value("message", json("")), "error.message", message));
  // A code this build does not know (a newer agent's) is still a failure.
  *out = Status(ValueIn(kCodes, code).value_or(StatusCode::kInternal), message);
  return Status::Ok();
}

}  // namespace

std::string_view AgentOpName(AgentOp op) { return NameIn(kOps, op); }

bool IsStreamingOp(AgentOp op) { return op == AgentOp::kJobLogs || op == AgentOp::kJobWatch; }

std::string_view JobStateName(JobState state) { return NameIn(kStates, state); }

std::optional<JobState> JobStateFromName(std::string_view name) { return ValueIn(kStates, name); }

bool JobStateEnded(JobState state) {
  return state == JobState::kSucceeded || state == JobState::kFailed ||
         state == JobState::kCancelled || state == JobState::kLost;
}

std::string ToLine(const AgentRequest& request) {
  json j = {{"op", std::string(AgentOpName(request.op))}};
  Writer w{j};
  VisitRequest(const_cast<AgentRequest&>(request), w, /*only_op=*/true);  // w only reads
  return Line(std::move(j));
}

Result<AgentRequest> ParseAgentRequest(std::string_view line) {
  TPUFLEET_ASSIGN_OR_RETURN(json j, ParseLine(line, "request"));
  TPUFLEET_TRY(CheckVersion(j, "request"));
  std::string op_name;
  auto op_it = j.find("op");
  if (op_it == j.end()) {
    return InvalidArgumentError("request has no \"op\"; one of " + Join(NamesIn(kOps), ", "));
  }
  TPUFLEET_TRY(FromJ(*op_it, "op", op_name));
  std::optional<AgentOp> op = ValueIn(kOps, op_name);
  if (!op) {
    return InvalidArgumentError("unknown op \"" + op_name + "\"; this agent knows " +
                                Join(NamesIn(kOps), ", "));
  }
  AgentRequest r;
  r.op = *op;
  Reader reader{j, "", Status::Ok()};
  VisitRequest(r, reader, /*only_op=*/false);
  if (!reader.status.ok()) {
    return reader.status.WithContext(std::string(AgentOpName(r.op)));
  }
  if (r.worker) {
    r.job.worker = *r.worker;
  }
  TPUFLEET_TRY(CheckRequest(r));
  return r;
}

Result<std::string> AddWorkerToRequest(std::string_view line, int worker) {
  TPUFLEET_ASSIGN_OR_RETURN(json j, ParseLine(line, "request"));
  j["worker"] = worker;
  return Dump(j, -1);
}

std::string AnswerLine(const AgentAnswer& answer) {
  json j = {{"ok", answer.status.ok()}};
  if (!answer.status.ok()) {
    j["error"] = ErrorJ(answer.status);
    return Line(std::move(j));
  }
  std::visit(
      [&](const auto& body) {
        using T = std::decay_t<decltype(body)>;
        if constexpr (std::is_same_v<T, JobOnWorker>) {
          j["job"] = ToJ(body);
        } else if constexpr (std::is_same_v<T, std::vector<JobOnWorker>>) {
          j["jobs"] = ToJ(body);
        } else if constexpr (std::is_same_v<T, std::vector<AccountResult>>) {
          j["results"] = ToJ(body);
        } else if constexpr (!std::is_same_v<T, std::monostate>) {
          j.update(ToJ(body));  // hello, devices, doctor: their fields beside "ok"
        }
      },
      answer.body);
  return Line(std::move(j));
}

std::string DataLine(const LogChunk& chunk) { return Line(ToJ(chunk)); }

std::string StateLine(const JobOnWorker& state) { return Line({{"state", ToJ(state)}}); }

std::string EndLine(const Status& status) {
  json j = {{"end", true}, {"ok", status.ok()}};
  if (!status.ok()) {
    j["error"] = ErrorJ(status);
  }
  return Line(std::move(j));
}

Result<AgentLine> ParseAgentLine(std::string_view line, AgentOp op) {
  TPUFLEET_ASSIGN_OR_RETURN(json j, ParseLine(line, "answer"));
  TPUFLEET_TRY(CheckVersion(j, "answer"));
  AgentLine out;
  Status read;
  if (j.contains("ok")) {
    // The last line: a one-shot answer, or a streaming op's end (also how any op's
    // refusal comes).
    out.kind = IsStreamingOp(op) || j.contains("end") ? AgentLine::Kind::kEnd
                                                      : AgentLine::Kind::kAnswer;
    TPUFLEET_TRY(ReadStatus(j, &out.answer.status));
    if (out.answer.status.ok() && out.kind == AgentLine::Kind::kAnswer) {
      read = ReadBody(j, op, out.answer.body);
    }
  } else if (j.contains("stream")) {
    out.kind = AgentLine::Kind::kData;
    read = FromJ(j, "", out.chunk);
  } else if (j.contains("state")) {
    out.kind = AgentLine::Kind::kState;
    read = FromJ(j.at("state"), "state", out.state);
  } else {
    return InvalidArgumentError("answer has none of \"ok\", \"stream\", \"state\"");
  }
  if (!read.ok()) {
    return read.WithContext("answer");
  }
  return out;
}

std::string ToJson(const JobSpec& spec) { return Dump(ToJ(spec), kDocumentIndent); }

std::string ToJson(const JobOnWorker& job) { return Dump(ToJ(job), kDocumentIndent); }

Result<JobSpec> ParseJobSpec(std::string_view text) {
  return ParseDocument<JobSpec>(text, "job.json");
}

Result<JobOnWorker> ParseJobOnWorker(std::string_view text) {
  return ParseDocument<JobOnWorker>(text, "state.json");
}

}  // namespace tpufleet::api
