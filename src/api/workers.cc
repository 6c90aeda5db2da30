#include "api/workers.h"

#include "api/json_internal.h"

namespace tpufleet::api {
namespace {

using internal::ArrayOf;
using internal::Dump;
using internal::kDocumentIndent;
using nlohmann::json;

constexpr int kOneLine = -1;  // nlohmann's "no newlines"

json JobJson(const JobReport& job) {
  json workers = ArrayOf(job.workers, [](const JobWorkerReport& w) {
    json j = {{"worker", w.worker}, {"index", w.index}, {"state", w.state}, {"pid", w.pid}};
    if (w.exit_code) {
      j["exit_code"] = *w.exit_code;
    }
    for (const auto& [key, value] :
         {std::pair{"signal", &w.signal}, {"message", &w.message}, {"error", &w.error}}) {
      if (!value->empty()) {
        j[key] = *value;
      }
    }
    return j;
  });
  json j = {{"id", job.id},
            {"name", job.name},
            {"node", job.node},
            {"state", job.state},
            {"ended", job.ended},
            {"user", job.user},
            {"started_by", job.started_by},
            {"command", job.command},
            {"keep_going", job.keep_going},
            {"created_unix_ms", job.created_unix_ms},
            {"started_unix_ms", job.started_unix_ms},
            {"ended_unix_ms", job.ended_unix_ms},
            {"duration_ms", job.duration_ms},
            {"workers", std::move(workers)}};
  for (const auto& [key, value] : {std::pair{"first_failure", &job.first_failure},
                                    {"verdict", &job.verdict},
                                    {"verdict_detail", &job.verdict_detail}}) {
    if (!value->empty()) {
      j[key] = *value;
    }
  }
  if (!job.restart.empty()) {
    j["restart"] = job.restart;
    j["max_restarts"] = job.max_restarts;
    j["restarts"] = job.restarts;
    if (job.time_to_recover_seconds) {
      j["time_to_recover_seconds"] = *job.time_to_recover_seconds;
    }
  }
  return j;
}

}  // namespace

std::string ToJson(ExecReport report) {
  json list = json::array();
  for (ExecWorker& w : report.workers) {
    json j = {{"worker", w.worker},          {"node", w.node},
              {"index", w.index},            {"outcome", w.outcome},
              {"ok", w.ok},                  {"stdout", std::move(w.stdout_text)},
              {"stderr", std::move(w.stderr_text)}, {"truncated", w.truncated}};
    if (w.truncated) {
      j["dropped_bytes"] = {{"stdout", w.dropped_stdout}, {"stderr", w.dropped_stderr}};
    }
    if (w.exit_code) {
      j["exit_code"] = *w.exit_code;
    }
    if (!w.signal.empty()) {
      j["signal"] = w.signal;
    }
    if (!w.message.empty()) {
      j["message"] = w.message;
    }
    list.push_back(std::move(j));
  }
  return Dump({{"workers", std::move(list)},
               {"ok", report.ok},
               {"failed", report.failed},
               {"truncated", report.truncated}},
              kDocumentIndent);
}

std::string ToJson(const CopyReport& report) {
  json list = ArrayOf(report.workers, [](const CopyWorker& w) {
    json j = {{"worker", w.worker}, {"ok", w.ok}, {"via", w.via}};
    if (!w.ok) {
      j["message"] = w.message;
    }
    return j;
  });
  return Dump({{"workers", std::move(list)},
               {"bytes", report.bytes},
               {"seconds", report.seconds},
               {"security_events", report.security_events},
               {"ok", report.ok}},
              kDocumentIndent);
}

std::string ToJson(const JobReport& job) { return Dump(JobJson(job), kDocumentIndent); }

std::string ToJson(const JobsList& list) {
  return Dump({{"jobs", ArrayOf(list.jobs, JobJson)}, {"unreachable", list.unreachable}},
              kDocumentIndent);
}

std::string ToJson(const ForwardStarted& forward) {
  return Dump({{"url", forward.url},
               {"local_port", forward.local_port},
               {"remote_port", forward.remote_port},
               {"worker", forward.worker}},
              kOneLine);
}

Result<std::vector<JobPlace>> ParseJobPlaces(std::string_view jobs_json) {
  json j = json::parse(jobs_json, nullptr, /*allow_exceptions=*/false);
  if (!j.is_object() || !j.contains("jobs") || !j["jobs"].is_array()) {
    return InvalidArgumentError("the server's jobs are not {\"jobs\": [{\"id\", \"node\", …}]}");
  }
  std::vector<JobPlace> out;
  for (const json& job : j["jobs"]) {
    auto text = [&job](const char* key) {
      return job.is_object() && job.contains(key) && job[key].is_string()
                 ? job[key].get<std::string>()
                 : std::string();
    };
    bool ended = job.is_object() && job.contains("ended") && job["ended"].is_boolean() &&
                 job["ended"].get<bool>();
    int64_t created = job.is_object() && job.contains("created_unix_ms") &&
                              job["created_unix_ms"].is_number_integer()
                          ? job["created_unix_ms"].get<int64_t>()
                          : 0;
    JobPlace place{text("id"), text("name"), text("node"), ended, created};
    if (place.id.empty() || place.node.empty()) {
      return InvalidArgumentError("the server's jobs list a job without an id or node");
    }
    out.push_back(std::move(place));
  }
  return out;
}

}  // namespace tpufleet::api
