// How api/agent.cc and api/metrics.cc write and read the agent protocol's structs: each
// struct's fields listed once (Visit), and a generic writer (ToJ) and reader (FromJ)
// over them, so a field cannot be written under one key and read under another. Private
// to src/api: only agent.cc and metrics.cc include it (it carries nlohmann/json, as
// json_internal.h does).
//
// Visit(x, f) calls f(key, member, omit_empty) for each field of x; omit_empty marks the
// fields written only when set. The writer only reads the members (it gets them through
// a const_cast); the reader fills them, and names the first field of a wrong type by its
// path ("job.env.A").
//
// Thread-safety: pure functions.
#pragma once

#include <cstdint>
#include <limits>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "api/agent.h"
#include "api/metrics.h"
#include "util/enum_names.h"
#include "util/status.h"
#include "util/strings.h"

namespace tpufleet::api::agent_json {

using nlohmann::json;

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
  f("restarts", s.restarts, true);
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
  f("restarts", j.restarts, true);
}

template <typename F>
void Visit(AgentNotice& n, F& f) {
  f("preempted", n.preempted, false);
  f("maintenance_event", n.maintenance_event, false);
  f("changed_unix_ms", n.changed_unix_ms, false);
  f("source", n.source, false);
  f("error", n.error, false);
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
void Visit(AccountRemoval& a, F& f) {
  f("name", a.name, false);
  f("purge", a.purge, false);
}

template <typename F>
void Visit(MountSpec& m, F& f) {
  f("disk", m.disk, false);
  f("path", m.path, false);
  f("read_only", m.read_only, false);
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
  f("detail", r.detail, true);
}

template <typename F>
void Visit(MetadataGuardReport& r, F& f) {
  f("active", r.active, false);
  f("users", r.users, false);
  f("error", r.error, false);
  f("detail", r.detail, true);
}

template <typename F>
void Visit(AccountsReport& r, F& f) {
  f("results", r.results, false);
  f("metadata_guard", r.metadata_guard, false);
}

template <typename F>
void Visit(MountResult& r, F& f) {
  f("disk", r.disk, false);
  f("path", r.path, false);
  f("action", r.action, false);
  f("error", r.error, false);
}

template <typename F>
void Visit(LogChunk& c, F& f) {
  f("stream", c.stream, false);
  f("data", c.data, false);
}

// The metrics op's report (core/worker_sample.h names each object's fields).

// ChipHolder is also api::TpuHolder (job.start's waiting_for).
template <typename F>
void Visit(ChipHolder& h, F& f) {
  f("pid", h.pid, false);
  f("user", h.user, false);
  f("command", h.command, false);
  f("job", h.job, false);
}

template <typename F>
void Visit(ChipSample& c, F& f) {
  f("index", c.index, false);
  f("kind", c.kind, false);
  f("device", c.device, false);
  f("holders", c.holders, false);
  f("duty_cycle_percent", c.duty_cycle_percent, true);
  f("hbm_used_bytes", c.hbm_used_bytes, true);
  f("hbm_total_bytes", c.hbm_total_bytes, true);
  f("hbm_bandwidth_percent", c.hbm_bandwidth_percent, true);
  f("idle_seconds", c.idle_seconds, true);
  f("hlo_queue", c.hlo_queue, true);
  f("port", c.port, true);
}

template <typename F>
void Visit(HostSample& h, F& f) {
  f("cpus", h.cpus, false);
  f("cpu_percent", h.cpu_percent, false);
  f("memory_used_bytes", h.memory_used_bytes, false);
  f("memory_total_bytes", h.memory_total_bytes, false);
  f("logins", h.logins, false);
  f("disk_read_bytes_per_second", h.disk_read_bytes_per_second, true);
  f("disk_write_bytes_per_second", h.disk_write_bytes_per_second, true);
  f("net_rx_bytes_per_second", h.net_rx_bytes_per_second, true);
  f("net_tx_bytes_per_second", h.net_tx_bytes_per_second, true);
}

template <typename F>
void Visit(JobSample& j, F& f) {
  f("id", j.id, false);
  f("user", j.user, false);
  f("cpu_percent", j.cpu_percent, false);
  f("cpu_limit_percent", j.cpu_limit_percent, false);
  f("busiest_thread_percent", j.busiest_thread_percent, false);
  f("memory_bytes", j.memory_bytes, false);
}

template <typename F>
void Visit(WorkerSample& s, F& f) {
  f("time_unix_ms", s.time_unix_ms, false);
  f("chips", s.chips, false);
  f("host", s.host, false);
  f("jobs", s.jobs, false);
}

template <typename F>
void Visit(WindowSummary& w, F& f) {
  f("seconds", w.seconds, false);
  f("samples", w.samples, false);
  f("duty_cycle_percent", w.duty_cycle_percent, true);
  f("hlo_queue", w.hlo_queue, true);
  f("input_bound_fraction", w.input_bound_fraction, false);
  f("job", w.job, true);
  f("job_cpu_percent", w.job_cpu_percent, true);
  f("job_cpu_limit_percent", w.job_cpu_limit_percent, true);
  f("job_busiest_thread_percent", w.job_busiest_thread_percent, true);
  f("idle_since_unix_ms", w.idle_since_unix_ms, false);
}

template <typename F>
void Visit(HistoryPoint& p, F& f) {
  f("time_unix_ms", p.time_unix_ms, false);
  f("duty_cycle_percent", p.duty_cycle_percent, true);
  f("hbm_used_bytes", p.hbm_used_bytes, true);
  f("hbm_total_bytes", p.hbm_total_bytes, true);
  f("cpu_percent", p.cpu_percent, true);
  f("memory_used_bytes", p.memory_used_bytes, true);
}

template <typename F>
void Visit(MetricsReport& r, F& f) {
  f("sample", r.sample, false);
  f("window", r.window, false);
  f("history", r.history, false);
  f("step_seconds", r.step_seconds, false);
}

// --- writing -------------------------------------------------------------------------

// The fields written only when set are strings, optionals and counts (unset at 0).
inline bool IsEmpty(const std::string& v) { return v.empty(); }
inline bool IsEmpty(int v) { return v == 0; }
template <typename T>
bool IsEmpty(const std::optional<T>& v) {
  return !v.has_value();
}
template <typename T>
bool IsEmpty(const T& /*v*/) {
  return false;
}

inline json ToJ(const std::string& v) { return v; }
inline json ToJ(int v) { return v; }
inline json ToJ(int64_t v) { return v; }
inline json ToJ(double v) { return v; }  // a NaN would be null: the samplers give none
inline json ToJ(bool v) { return v; }
inline json ToJ(JobState v) { return std::string(JobStateName(v)); }
inline json ToJ(const std::map<std::string, std::string>& v) { return v; }
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

// --- reading -------------------------------------------------------------------------

inline std::string Quoted(const std::string& path) { return "\"" + path + "\""; }

inline Status WrongType(const std::string& path, const json& v, const char* wanted) {
  return InvalidArgumentError(Quoted(path) + " is " + std::string(v.type_name()) + ", not " +
                              wanted);
}

inline Status FromJ(const json& v, const std::string& path, std::string& out) {
  if (!v.is_string()) {
    return WrongType(path, v, "a string");
  }
  out = v.get<std::string>();
  return Status::Ok();
}

inline Status FromJ(const json& v, const std::string& path, int64_t& out) {
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

inline Status FromJ(const json& v, const std::string& path, int& out) {
  int64_t wide = 0;
  TPUFLEET_TRY(FromJ(v, path, wide));
  if (wide < std::numeric_limits<int>::min() || wide > std::numeric_limits<int>::max()) {
    return InvalidArgumentError(Quoted(path) + " is out of range");
  }
  out = static_cast<int>(wide);
  return Status::Ok();
}

inline Status FromJ(const json& v, const std::string& path, double& out) {
  if (!v.is_number()) {
    return WrongType(path, v, "a number");
  }
  out = v.get<double>();
  return Status::Ok();
}

inline Status FromJ(const json& v, const std::string& path, bool& out) {
  if (!v.is_boolean()) {
    return WrongType(path, v, "true or false");
  }
  out = v.get<bool>();
  return Status::Ok();
}

inline Status FromJ(const json& v, const std::string& path, JobState& out) {
  std::string name;
  TPUFLEET_TRY(FromJ(v, path, name));
  std::optional<JobState> state = JobStateFromName(name);
  if (!state) {
    return InvalidArgumentError(Quoted(path) + " is \"" + name + "\", not one of " +
                                Join(NamesIn(kJobStateNames), ", "));
  }
  out = *state;
  return Status::Ok();
}

inline Status FromJ(const json& v, const std::string& path,
                    std::map<std::string, std::string>& out) {
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

// `line` as a JSON object within the protocol's line bound; `what` names it in errors
// ("request", "answer", "job.json").
inline Result<json> ParseLine(std::string_view line, const char* what) {
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

// A whole document of type T (a struct with a Visit), errors prefixed with `what`.
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

}  // namespace tpufleet::api::agent_json
