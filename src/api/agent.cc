#include "api/agent.h"

#include <algorithm>
#include <limits>
#include <utility>

#include "api/agent_json.h"
#include "api/json_internal.h"
#include "util/enum_names.h"
#include "util/strings.h"

namespace tpufleet::api {
namespace {

using agent_json::FromJ;
using agent_json::ParseDocument;
using agent_json::ParseLine;
using agent_json::Reader;
using agent_json::ToJ;
using agent_json::Writer;
using internal::Dump;
using internal::kDocumentIndent;
using nlohmann::json;

constexpr EnumName<AgentOp> kOps[] = {
    {AgentOp::kHello, "hello"},          {AgentOp::kJobStart, "job.start"},
    {AgentOp::kJobList, "job.list"},     {AgentOp::kJobCancel, "job.cancel"},
    {AgentOp::kJobLogs, "job.logs"},     {AgentOp::kJobWatch, "job.watch"},
    {AgentOp::kDevices, "devices"},      {AgentOp::kDoctor, "doctor"},
    {AgentOp::kAccountsApply, "accounts.apply"}, {AgentOp::kDisksMount, "disks.mount"},
    {AgentOp::kMetrics, "metrics"},
    {AgentOp::kNotice, "notice"},        {AgentOp::kNoticeWatch, "notice.watch"},
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

json ErrorJ(const Status& status) {
  return {{"code", std::string(NameIn(kCodes, status.code(), "INTERNAL"))},
          {"message", status.message()}};
}

// A line of an answer: "v" and the rest.
std::string Line(json j) {
  j["v"] = kAgentProtocolVersion;
  return Dump(j, -1);
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
  if (!only_op || !r.remove.empty()) {
    field(op == AgentOp::kAccountsApply, "remove", r.remove);
  }
  field(op == AgentOp::kDisksMount, "mounts", r.mounts);
  field(op == AgentOp::kMetrics, "history_seconds", r.metrics.history_seconds);
  field(op == AgentOp::kMetrics, "step_seconds", r.metrics.step_seconds);
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
    case AgentOp::kMetrics:
      if (r.metrics.history_seconds < 0 || r.metrics.history_seconds > kMaxHistorySeconds) {
        return InvalidArgumentError(op + ": \"history_seconds\" is " +
                                    std::to_string(r.metrics.history_seconds) +
                                    ", not within 0.." + std::to_string(kMaxHistorySeconds) +
                                    " (the agent keeps 24 hours)");
      }
      if (r.metrics.step_seconds < 0 || r.metrics.step_seconds > kMaxStepSeconds) {
        return InvalidArgumentError(op + ": \"step_seconds\" is " +
                                    std::to_string(r.metrics.step_seconds) + ", not within 0.." +
                                    std::to_string(kMaxStepSeconds));
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
      return read_as(AccountsReport{}, nullptr);
    case AgentOp::kDisksMount:
      return read_as(std::vector<MountResult>{}, "results");
    case AgentOp::kMetrics:
      return read_as(MetricsReport{}, nullptr);
    case AgentOp::kNotice:
      return read_as(AgentNotice{}, nullptr);
    case AgentOp::kJobLogs:
    case AgentOp::kJobWatch:
    case AgentOp::kNoticeWatch:
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

bool IsStreamingOp(AgentOp op) {
  return op == AgentOp::kJobLogs || op == AgentOp::kJobWatch || op == AgentOp::kNoticeWatch;
}

std::string_view JobStateName(JobState state) { return NameIn(kJobStateNames, state); }

std::optional<JobState> JobStateFromName(std::string_view name) {
  return ValueIn(kJobStateNames, name);
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
        } else if constexpr (std::is_same_v<T, std::vector<MountResult>>) {
          j["results"] = ToJ(body);
        } else if constexpr (!std::is_same_v<T, std::monostate>) {
          j.update(ToJ(body));  // hello, devices, doctor, accounts, metrics, notice: beside "ok"
        }
      },
      answer.body);
  return Line(std::move(j));
}

std::string DataLine(const LogChunk& chunk) { return Line(ToJ(chunk)); }

std::string StateLine(const JobOnWorker& state) { return Line({{"state", ToJ(state)}}); }

std::string NoticeLine(const AgentNotice& notice) { return Line({{"notice", ToJ(notice)}}); }

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
  } else if (j.contains("notice")) {
    out.kind = AgentLine::Kind::kNotice;
    read = FromJ(j.at("notice"), "notice", out.notice);
  } else {
    return InvalidArgumentError(
        "answer has none of \"ok\", \"stream\", \"state\", \"notice\"");
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
