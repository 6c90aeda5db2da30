#include "core/job.h"

#include <algorithm>
#include <cstdio>
#include <limits>
#include <tuple>

#include "core/fleet_spec.h"
#include "util/strings.h"

namespace tpufleet {
namespace {

// The variables CheckUserEnvEntry refuses to let `--env` replace (job.h says why).
constexpr std::string_view kKeptVariables[] = {"TPUFLEET_JOB_ID", "TPUFLEET_RANK",
                                               "TPUFLEET_WORLD_SIZE", "TPUFLEET_RESTARTS"};

constexpr std::string_view kBase32 = "abcdefghijklmnopqrstuvwxyz234567";
constexpr size_t kJobIdChars = 7;
constexpr size_t kMaxJobNameChars = 63;

bool IsLowerOrDigit(char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'); }
bool IsJobNameChar(char c) { return IsLowerOrDigit(c) || c == '.' || c == '_' || c == '-'; }
bool IsEnvNameStart(char c) { return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || c == '_'; }
bool IsEnvNameChar(char c) { return IsEnvNameStart(c) || (c >= '0' && c <= '9'); }

// "host:port", with an IPv6 address in brackets as every host:port parser expects.
std::string HostPort(const std::string& host, int port) {
  std::string h = host.find(':') == std::string::npos ? host : "[" + host + "]";
  return h + ":" + std::to_string(port);
}

// Sets `name` in `env`: in place when present, else at the end.
void Set(EnvList& env, std::string_view name, std::string value) {
  for (auto& [n, v] : env) {
    if (n == name) {
      v = std::move(value);
      return;
    }
  }
  env.emplace_back(std::string(name), std::move(value));
}

// "w2", or "pod-a/w2" for a job over several nodes.
std::string WorkerLabel(const WorkerOutcome& w) {
  std::string label = "w" + std::to_string(w.worker);
  return w.node.empty() ? label : w.node + "/" + label;
}

bool IsFailure(JobState s) { return s == JobState::kFailed || s == JobState::kLost; }

}  // namespace

// ---------------------------------------------------------------------------------
// The job's environment

Result<JobTopology> MakeJobTopology(const AcceleratorType* type,
                                    std::vector<std::string> worker_addresses) {
  JobTopology t;
  if (type != nullptr) {
    if (worker_addresses.size() != static_cast<size_t>(type->workers)) {
      return InvalidArgumentError("the node lists " + std::to_string(worker_addresses.size()) +
                                  " worker addresses; a " + type->name + " has " +
                                  std::to_string(type->workers) + " workers");
    }
    t.accelerator_type = type->name;
    t.chips_per_host = type->chips_per_worker;
  }
  t.worker_addresses = std::move(worker_addresses);
  TPUFLEET_TRY(CheckJobTopology(t));
  return t;
}

Status CheckJobTopology(const JobTopology& t) {
  if (t.worker_addresses.empty()) {
    return InvalidArgumentError("topology: no worker addresses");
  }
  for (size_t i = 0; i < t.worker_addresses.size(); ++i) {
    Status s = CheckHostAddress(t.worker_addresses[i]);
    if (!s.ok()) {
      return s.WithContext("topology: worker_addresses[" + std::to_string(i) + "]");
    }
  }
  if (t.coordinator_port < 1 || t.coordinator_port > 65535) {
    return InvalidArgumentError("topology: coordinator_port " +
                                std::to_string(t.coordinator_port) + " is not a port (1-65535)");
  }
  if (t.chips_per_host < 0) {
    return InvalidArgumentError("topology: chips_per_host is negative");
  }
  // The type goes into TPU_ACCELERATOR_TYPE as it is: only what type names are made of.
  if (t.accelerator_type.size() > 63 ||
      !std::all_of(t.accelerator_type.begin(), t.accelerator_type.end(),
                   [](char c) { return IsLowerOrDigit(c) || c == '-'; })) {
    return InvalidArgumentError("topology: accelerator_type " +
                                QuoteForMessage(t.accelerator_type) +
                                " is not a type name such as \"v4-32\"");
  }
  return Status::Ok();
}

Status CheckEnvName(std::string_view name) {
  if (name.empty()) {
    return InvalidArgumentError("an environment variable needs a name");
  }
  if (!IsEnvNameStart(name[0]) || !std::all_of(name.begin(), name.end(), IsEnvNameChar)) {
    return InvalidArgumentError("environment variable name " + QuoteForMessage(name) +
                                " is not a letter or _ followed by letters, digits and _");
  }
  return Status::Ok();
}

Status CheckUserEnvEntry(std::string_view name, std::string_view value) {
  TPUFLEET_TRY(CheckEnvName(name));
  if (value.find('\0') != std::string_view::npos) {
    return InvalidArgumentError("the value of " + std::string(name) +
                                " holds a NUL byte, which no environment can carry");
  }
  if (name.size() + 1 + value.size() > kMaxEnvEntryBytes) {
    return InvalidArgumentError(std::string(name) + "=VALUE is " +
                                FormatBytes(name.size() + 1 + value.size()) +
                                "; one environment entry can be at most " +
                                FormatBytes(kMaxEnvEntryBytes) + " (Linux's MAX_ARG_STRLEN)");
  }
  for (std::string_view kept : kKeptVariables) {
    if (name == kept) {
      return InvalidArgumentError(std::string(name) +
                                  " is set by tpufleet on each worker and cannot be given: "
                                  "TPUFLEET_JOB_ID, TPUFLEET_RANK, TPUFLEET_WORLD_SIZE and "
                                  "TPUFLEET_RESTARTS tell each process which job, rank and "
                                  "run it is");
    }
  }
  return Status::Ok();
}

Result<std::pair<std::string, std::string>> ParseEnvAssignment(std::string_view text) {
  size_t eq = text.find('=');
  if (eq == std::string_view::npos) {
    return InvalidArgumentError("--env " + QuoteForMessage(text) + ": expected NAME=VALUE");
  }
  std::string name(text.substr(0, eq));
  std::string value(text.substr(eq + 1));
  TPUFLEET_TRY(CheckUserEnvEntry(name, value));
  return std::pair{std::move(name), std::move(value)};
}

Result<EnvList> JobEnvironment(const JobTopology& topology, int worker,
                               std::string_view job_id, std::string_view job_name,
                               const EnvList& user_env, int restarts) {
  TPUFLEET_TRY(CheckJobTopology(topology));
  if (restarts < 0) {
    return InvalidArgumentError("restarts is " + std::to_string(restarts) + "; it cannot be negative");
  }
  TPUFLEET_TRY(CheckJobId(job_id));
  TPUFLEET_TRY(CheckJobName(job_name));
  const size_t world = topology.worker_addresses.size();
  if (worker < 0 || static_cast<size_t>(worker) >= world) {
    return InvalidArgumentError("worker " + std::to_string(worker) + " is not one of the " +
                                std::to_string(world) + " workers of the topology");
  }
  for (const auto& [name, value] : user_env) {
    TPUFLEET_TRY(CheckUserEnvEntry(name, value));
  }
  const std::string rank = std::to_string(worker);
  const std::string coordinator =
      HostPort(topology.worker_addresses[0], topology.coordinator_port);

  EnvList env = {
      {"TPUFLEET_JOB_ID", std::string(job_id)},
      {"TPUFLEET_JOB_NAME", std::string(job_name)},
      {"TPUFLEET_RANK", rank},
      {"TPUFLEET_WORLD_SIZE", std::to_string(world)},
      {"TPUFLEET_COORDINATOR", coordinator},
      {"TPUFLEET_RESTARTS", std::to_string(restarts)},
  };
  if (!topology.accelerator_type.empty()) {
    env.emplace_back("TPU_WORKER_ID", rank);
    env.emplace_back("TPU_WORKER_HOSTNAMES", Join(topology.worker_addresses, ","));
    env.emplace_back("CLOUD_TPU_TASK_ID", rank);
    env.emplace_back("TPU_ACCELERATOR_TYPE", topology.accelerator_type);
    if (world > 1) {
      env.emplace_back("JAX_COORDINATOR_ADDRESS", coordinator);
    }
  }
  for (const auto& [name, value] : user_env) {
    Set(env, name, value);
  }
  return env;
}

// ---------------------------------------------------------------------------------
// States

bool IsEnded(JobState state) {
  return state == JobState::kSucceeded || state == JobState::kFailed ||
         state == JobState::kCancelled || state == JobState::kLost;
}

JobState JobStateOf(const std::vector<JobState>& workers) {
  if (workers.empty()) {
    return JobState::kLost;
  }
  auto any = [&](JobState s) { return std::find(workers.begin(), workers.end(), s) != workers.end(); };
  // The rows of the table in job.h, in its order; all succeeded is what is left.
  for (JobState s : {JobState::kFailed, JobState::kLost, JobState::kCancelled,
                     JobState::kWaiting, JobState::kStarting, JobState::kRunning}) {
    if (any(s)) {
      return s;
    }
  }
  return JobState::kSucceeded;
}

bool AllEnded(const std::vector<JobState>& workers) {
  return std::all_of(workers.begin(), workers.end(), IsEnded);
}

std::string DescribeEnd(const WorkerOutcome& o) {
  if (o.state == JobState::kLost) {
    return "lost (the agent lost track of it)";
  }
  if (!o.signal.empty()) {
    return "killed by SIG" + o.signal;
  }
  if (o.exit_code.has_value()) {
    return "exit " + std::to_string(*o.exit_code);
  }
  if (!o.message.empty()) {
    return o.message;
  }
  return std::string(NameIn(kJobStateNames, o.state));
}

std::optional<WorkerOutcome> FirstFailure(const std::vector<WorkerOutcome>& workers) {
  auto key = [](const WorkerOutcome& w) {
    int64_t ended = w.ended_unix_ms == 0 ? std::numeric_limits<int64_t>::max() : w.ended_unix_ms;
    return std::tuple<int64_t, const std::string&, int>(ended, w.node, w.worker);
  };
  const WorkerOutcome* first = nullptr;
  for (const WorkerOutcome& w : workers) {
    if (IsFailure(w.state) && (first == nullptr || key(w) < key(*first))) {
      first = &w;
    }
  }
  if (first == nullptr) {
    return std::nullopt;
  }
  return *first;
}

std::string FirstFailureLine(const std::vector<WorkerOutcome>& workers) {
  std::optional<WorkerOutcome> first = FirstFailure(workers);
  if (!first.has_value()) {
    return "";
  }
  return WorkerLabel(*first) + " failed first: " + DescribeEnd(*first);
}

std::vector<size_t> GangCancels(const std::vector<JobState>& workers, bool keep_going) {
  std::vector<size_t> cancel;
  if (keep_going || std::none_of(workers.begin(), workers.end(), IsFailure)) {
    return cancel;
  }
  for (size_t i = 0; i < workers.size(); ++i) {
    if (!IsEnded(workers[i])) {
      cancel.push_back(i);
    }
  }
  return cancel;
}

// ---------------------------------------------------------------------------------
// Ids, names and the JOB argument

std::string MakeJobId(const JobIdBytes& random) {
  uint64_t bits = 0;
  for (uint8_t b : random) {
    bits = (bits << 8) | b;
  }
  std::string id = "j";
  // The 40 bits are 8 base32 characters; the id takes the first 7.
  for (size_t i = 0; i < kJobIdChars; ++i) {
    id += kBase32[(bits >> (35 - 5 * i)) & 31];
  }
  return id;
}

Status CheckJobId(std::string_view id) {
  if (id.size() != 1 + kJobIdChars || id[0] != 'j' ||
      id.substr(1).find_first_not_of(kBase32) != std::string_view::npos) {
    return InvalidArgumentError("job id " + QuoteForMessage(id) +
                                " is not \"j\" and 7 characters of a-z and 2-7");
  }
  return Status::Ok();
}

Status CheckJobName(std::string_view name) {
  if (name.empty() || name.size() > kMaxJobNameChars || !IsLowerOrDigit(name[0]) ||
      !std::all_of(name.begin(), name.end(), IsJobNameChar)) {
    return InvalidArgumentError("job name " + QuoteForMessage(name) +
                                " is not 1 to 63 of a-z, 0-9, '.', '_' and '-', starting "
                                "with a letter or digit");
  }
  return Status::Ok();
}

std::string DefaultJobName(std::string_view command) {
  constexpr std::string_view kBlank = " \t\r\n";
  std::string_view word;
  for (size_t at = command.find_first_not_of(kBlank); at != std::string_view::npos;
       at = command.find_first_not_of(kBlank, at)) {
    size_t end = std::min(command.find_first_of(kBlank, at), command.size());
    std::string_view w = command.substr(at, end - at);
    at = end;
    size_t eq = w.find('=');
    if (eq == std::string_view::npos || !CheckEnvName(w.substr(0, eq)).ok()) {
      word = w;  // the first word that is not a NAME=VALUE assignment
      break;
    }
  }
  if (size_t slash = word.rfind('/'); slash != std::string_view::npos) {
    word.remove_prefix(slash + 1);
  }
  std::string name;
  for (char c : AsciiLower(word)) {
    if (name.empty() && !IsLowerOrDigit(c)) {
      continue;  // quotes, dots and dashes in front
    }
    name += IsJobNameChar(c) ? c : '-';
  }
  name = name.substr(0, kMaxJobNameChars);
  return name.empty() ? "job" : name;
}

Result<size_t> ResolveJob(std::string_view arg, const std::vector<JobRef>& jobs) {
  std::optional<size_t> best;
  for (size_t i = 0; i < jobs.size(); ++i) {
    if (jobs[i].id == arg) {
      return i;
    }
    if (jobs[i].name != arg) {
      continue;
    }
    // Not ended beats ended; then the newer.
    if (!best.has_value() ||
        std::tuple(!jobs[i].ended, jobs[i].created_unix_ms) >
            std::tuple(!jobs[*best].ended, jobs[*best].created_unix_ms)) {
      best = i;
    }
  }
  if (best.has_value()) {
    return *best;
  }
  std::vector<std::string> known;
  for (const JobRef& j : jobs) {
    for (const std::string& k : {j.id, j.name}) {
      if (std::find(known.begin(), known.end(), k) == known.end()) {
        known.push_back(k);
      }
    }
  }
  return NotFoundError("no job " + QuoteForMessage(arg) + DidYouMean(arg, known));
}

Status CheckNameFree(std::string_view name, const std::vector<JobRef>& jobs) {
  for (const JobRef& j : jobs) {
    if (!j.ended && j.name == name) {
      return InvalidArgumentError("job " + j.id + " is named " + QuoteForMessage(name) +
                                  " and has not ended (" +
                                  std::string(NameIn(kJobStateNames, j.state)) +
                                  "); give another --name, or cancel " + j.id + " first");
    }
  }
  return Status::Ok();
}

std::string FormatJobDuration(std::chrono::milliseconds elapsed) {
  const int64_t s = std::max<int64_t>(0, elapsed.count() / 1000);
  char buf[32];
  if (s < 60) {
    std::snprintf(buf, sizeof buf, "%llds", static_cast<long long>(s));
  } else if (s < 3600) {
    std::snprintf(buf, sizeof buf, "%lldm%02llds", static_cast<long long>(s / 60),
                  static_cast<long long>(s % 60));
  } else if (s < 86400) {
    std::snprintf(buf, sizeof buf, "%lldh%02lldm", static_cast<long long>(s / 3600),
                  static_cast<long long>(s / 60 % 60));
  } else {
    std::snprintf(buf, sizeof buf, "%lldd%02lldh", static_cast<long long>(s / 86400),
                  static_cast<long long>(s / 3600 % 24));
  }
  return buf;
}

}  // namespace tpufleet
