#include "control/copy.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <map>
#include <random>

#include "control/copy_internal.h"
#include "control/copy_relay_hop.h"
#include "control/exec.h"
#include "control/resolve.h"
#include "util/file.h"
#include "util/secret.h"
#include "util/strings.h"
#include "util/subprocess.h"
#include "util/unique_fd.h"

namespace tpufleet {

namespace {

namespace fs = std::filesystem;

// Every remote script gets its untrusted values (paths, names) as positional arguments,
// never spliced into its text. `~` and `~/x` are expanded from $HOME by the script.
constexpr const char* kExpandPath =
    "d=$1; case \"$d\" in '') d=.;; '~') d=$HOME;; '~/'*) d=$HOME/${d#??};; esac; ";

// $1 dest, $2 file name, $3 size, $4 octal mode. A dest ending in / or naming a
// directory gets the file inside it.
constexpr const char* kReceiveFile =
    "case \"$d\" in */) mkdir -p \"$d\" && d=$d$2;; *) if [ -d \"$d\" ]; then d=$d/$2; fi;; esac; "
    "t=$(mktemp -- \"$d.tpufleet-tmp.XXXXXX\") || exit 1; "
    "cat >\"$t\" || { rm -f \"$t\"; exit 1; }; s=$(wc -c <\"$t\"); "
    "if [ \"$s\" -ne \"$3\" ]; then rm -f \"$t\"; echo \"received $s of $3 bytes\" >&2; exit 1; fi; "
    "chmod \"$4\" \"$t\" && mv -f \"$t\" \"$d\"";

// $1 dest. A tar of one directory: into dest when it exists (dest/NAME), else as dest.
constexpr const char* kReceiveDir =
    "if [ -d \"$d\" ]; then tar -x -f - -C \"$d\"; "
    "else mkdir -p \"$d\" && tar -x -f - -C \"$d\" --strip-components=1; fi";

}  // namespace

namespace copy_internal {

std::string Script(const std::string& body, const std::vector<std::string>& args) {
  std::vector<std::string> words = {"sh", "-c", std::string(kExpandPath) + body, "tpufleet"};
  words.insert(words.end(), args.begin(), args.end());
  return ShellJoin(words);
}

}  // namespace copy_internal

namespace {

using copy_internal::Script;

// What each host of an upload printed and how it ended.
class Collect final : public FanoutSink {
 public:
  explicit Collect(size_t hosts) : out_(hosts), err_(hosts), results_(hosts) {}
  void OnOutput(size_t host, OutputStream stream, std::string_view data) override {
    std::string& s = stream == OutputStream::kStdout ? out_[host] : err_[host];
    if (s.size() < kKeep) {
      s.append(data.substr(0, kKeep - s.size()));
    }
  }
  void OnResult(size_t host, const HostResult& result) override { results_[host] = result; }

  // "" when the host succeeded, else why not.
  std::string Failure(size_t host) const {
    const HostResult& r = results_[host];
    if (r.ok()) {
      return "";
    }
    std::string why = std::string(Trim(err_[host]));
    if (why.empty()) {
      why = r.message.empty() ? std::string(HostOutcomeName(r.outcome)) : r.message;
    }
    return why;
  }
  const std::string& Output(size_t host) const { return out_[host]; }
  const HostResult& Outcome(size_t host) const { return results_[host]; }

 private:
  static constexpr size_t kKeep = 4096;  // messages, not data
  std::vector<std::string> out_, err_;
  std::vector<HostResult> results_;
};

struct Source {
  std::string path;       // as given
  std::string name;       // its base name
  bool directory = false;
  std::string send_path;  // the file streamed: itself, or a tar of the directory
  uint64_t size = 0;
  unsigned mode = 0644;
};

Result<std::string> Sha256OfFile(const std::string& path) {
  SpawnOptions options;
  options.search_path = true;
  options.inherit_env = true;
  TPUFLEET_ASSIGN_OR_RETURN(ProgramResult r, RunSubprocess({"sha256sum", "--", path}, "",
                                                           std::chrono::minutes(10), options));
  if (r.exit_code != 0 || r.output.size() < 64) {
    return InternalError("sha256sum " + path + ": " + r.output);
  }
  return r.output.substr(0, 64);
}

// Relays `src` to `all` through the chain; returns which of them have it, and adds what
// the hops reported as security events to `events`.
std::vector<bool> Relay(World& world, const Source& src, const std::vector<WorkerTarget>& all,
                        const std::string& dest, std::chrono::milliseconds connect_timeout,
                        std::vector<std::string>& events) {
  std::vector<bool> done(all.size(), false);
  Result<std::string> want = Sha256OfFile(src.send_path);
  Result<std::string> key = RandomHex(kRelayKeyBytes);
  if (!want.ok() || !key.ok()) {
    return done;
  }
  std::vector<std::string> chain;
  for (const auto& w : all) {
    chain.push_back(w.address);
  }
  std::random_device rd;
  // An unprivileged port outside Linux's default ephemeral range (32768-60999).
  int port = 20000 + static_cast<int>(rd() % 12000);
  FanoutJob job = JobFor(world, all);
  job.stdin_path = src.send_path;
  job.stdin_header = *key + " " + *want + "\n";
  job.connect_timeout = connect_timeout;
  char mode[8];
  std::snprintf(mode, sizeof mode, "%o", src.mode);
  const auto deadline = kRelayDeadlineBase + std::chrono::seconds(src.size / kRelayMinRate);
  for (size_t i = 0; i < job.hosts.size(); ++i) {
    job.hosts[i].command = ShellJoin(
        {"python3", "-c", kRelayHopProgram, dest, src.name, std::to_string(src.size), mode,
         std::to_string(port), std::to_string(i), Join(chain, ","),
         std::to_string(kRelayHopWait.count()), std::to_string(kRelayAcceptWait.count()),
         std::to_string(kRelayHandshakeTimeout.count()), std::to_string(kRelayIoTimeout.count()),
         std::to_string(deadline.count())});
    job.hosts[i].no_input = i != 0;
  }
  Collect collect(all.size());
  if (!world.fanout.Run(job, collect).ok()) {
    return done;
  }
  const std::string expect = "TPUFLEET-RELAY " + *want + " " + std::to_string(src.size);
  constexpr std::string_view kAlert = "TPUFLEET-RELAY-ALERT ";
  for (size_t i = 0; i < all.size(); ++i) {
    std::string last;
    for (const std::string& line : Split(collect.Output(i), '\n')) {
      if (StartsWith(line, kAlert)) {
        events.push_back(all[i].name + ": " + line.substr(kAlert.size()));
      } else if (!Trim(line).empty()) {
        last = std::string(Trim(line));
      }
    }
    done[i] = collect.Failure(i).empty() && last == expect;
  }
  return done;
}

// Which of `workers` can be a relay hop (kRelayProbeCommand succeeded). A worker that
// did not answer at all is marked failed in `report` with why, so that nothing after
// (the chain, the direct send, the next source) waits for it again.
std::vector<bool> ProbeHops(World& world, const std::vector<WorkerTarget>& workers,
                            std::chrono::milliseconds connect_timeout, const Source& src,
                            CopyReport& report) {
  std::vector<bool> can_hop(workers.size(), false);
  FanoutJob job = JobFor(world, workers);
  for (FanoutHost& h : job.hosts) {
    h.command = kRelayProbeCommand;
  }
  job.connect_timeout = connect_timeout;
  Collect collect(workers.size());
  Status run = RunResolving(world, workers, job, collect);  // a moved worker is found here
  for (size_t i = 0; i < workers.size(); ++i) {
    const HostResult& r = collect.Outcome(i);
    if (!run.ok()) {
      continue;  // no answer about anyone: the direct send tries them all
    }
    if (r.outcome != HostOutcome::kExited) {
      report.workers[i].ok = false;
      report.workers[i].message = src.path + ": " + collect.Failure(i);
    }
    can_hop[i] = r.ok();
  }
  return can_hop;
}

// A directory is made into a tar in `scratch` (made in the system's temporary
// directory on first use), in a file created 0600 before tar writes it.
Result<Source> ReadSource(const std::string& path, PrivateDir& scratch, size_t index) {
  struct stat st{};
  if (::stat(path.c_str(), &st) != 0) {
    return ErrnoStatus(path, errno);
  }
  Source s;
  s.path = path;
  std::string trimmed = path;
  while (trimmed.size() > 1 && trimmed.back() == '/') {
    trimmed.pop_back();
  }
  s.name = fs::path(trimmed).filename().string();
  s.mode = st.st_mode & 07777;
  if (S_ISDIR(st.st_mode)) {
    s.directory = true;
    std::error_code ec;
    fs::path tmp = fs::temp_directory_path(ec);
    if (ec) {
      return InvalidArgumentError("no temporary directory for the tar of " + path + ": " +
                                  ec.message() + " (check TMPDIR)");
    }
    TPUFLEET_TRY(scratch.Make(tmp.string(), "tpufleet-cp-"));
    s.send_path = scratch.path() + "/" + std::to_string(index) + ".tar";
    UniqueFd tar(::open(s.send_path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600));
    if (tar.get() < 0) {
      return ErrnoStatus(s.send_path, errno);
    }
    SpawnOptions options;
    options.search_path = true;
    options.inherit_env = true;
    fs::path abs = fs::absolute(trimmed, ec);
    if (ec) {
      return ErrnoStatus(path, ec.value());
    }
    TPUFLEET_ASSIGN_OR_RETURN(
        ProgramResult r, RunSubprocess({"tar", "-c", "-f", s.send_path, "-C",
                                        abs.parent_path().string(), "--", abs.filename().string()},
                                       "", std::chrono::minutes(30), options));
    if (r.exit_code != 0) {
      return InternalError("tar of " + path + " failed: " + r.output);
    }
    if (::stat(s.send_path.c_str(), &st) != 0) {
      return ErrnoStatus(s.send_path, errno);
    }
  } else if (S_ISREG(st.st_mode)) {
    s.send_path = path;
  } else {
    return InvalidArgumentError(path + " is neither a file nor a directory");
  }
  s.size = static_cast<uint64_t>(st.st_size);
  return s;
}

Result<CopyReport> Upload(World& world, const CopyRequest& request, const RemotePath& dest) {
  TPUFLEET_ASSIGN_OR_RETURN(std::vector<WorkerTarget> workers,
                            ResolveTargets(world.store, {dest.target}));
  PrivateDir scratch;
  std::vector<Source> sources;
  for (const auto& path : request.sources) {
    TPUFLEET_ASSIGN_OR_RETURN(Source s, ReadSource(path, scratch, sources.size()));
    sources.push_back(std::move(s));
  }
  CopyReport report;
  for (const auto& w : workers) {
    report.workers.push_back(CopyOutcome{w, true, "ssh", ""});
  }
  std::vector<bool> can_hop;  // ProbeHops' answer, asked before the first relay
  for (const Source& src : sources) {
    report.bytes += src.size;
    std::vector<bool> relayed(workers.size(), false);
    if (request.relay && !src.directory && src.size >= kRelayMinBytes &&
        workers.size() >= kRelayMinWorkers) {
      if (can_hop.empty()) {
        can_hop = ProbeHops(world, workers, request.connect_timeout, src, report);
        // The probe refreshed the nodes of workers that moved: hops take the new addresses.
        TPUFLEET_ASSIGN_OR_RETURN(std::vector<WorkerTarget> now,
                                  ResolveTargets(world.store, {dest.target}));
        if (now.size() == workers.size()) {
          workers = std::move(now);
        }
      }
      std::vector<WorkerTarget> hops;
      std::vector<size_t> hop_index;
      for (size_t i = 0; i < workers.size(); ++i) {
        // A worker without a pinned host key is no hop: the direct copy fails it alone.
        if (can_hop[i] && report.workers[i].ok && !workers[i].host_key.empty()) {
          hops.push_back(workers[i]);
          hop_index.push_back(i);
        }
      }
      if (hops.size() >= kRelayMinWorkers) {
        std::vector<bool> done = Relay(world, src, hops, dest.path, request.connect_timeout,
                                       report.security_events);
        for (size_t k = 0; k < hops.size(); ++k) {
          relayed[hop_index[k]] = done[k];
        }
      }
    }
    std::vector<WorkerTarget> direct;
    std::vector<size_t> direct_index;
    for (size_t i = 0; i < workers.size(); ++i) {
      if (relayed[i]) {
        report.workers[i].how = "relay";
      } else if (report.workers[i].ok) {
        direct.push_back(workers[i]);
        direct_index.push_back(i);
      }
    }
    if (!direct.empty()) {
      FanoutJob job = JobFor(world, direct);
      job.stdin_path = src.send_path;
      job.connect_timeout = request.connect_timeout;
      job.input_stall_timeout = kFanoutInputStallTimeout;  // the receiver reads at once
      char mode[8];
      std::snprintf(mode, sizeof mode, "%o", src.mode);
      job.command = src.directory ? Script(kReceiveDir, {dest.path})
                                  : Script(kReceiveFile, {dest.path, src.name,
                                                          std::to_string(src.size), mode});
      Collect collect(direct.size());
      Status run = RunResolving(world, direct, job, collect);
      for (size_t k = 0; k < direct.size(); ++k) {
        CopyOutcome& o = report.workers[direct_index[k]];
        std::string why = run.ok() ? collect.Failure(k) : run.message();
        if (!why.empty()) {
          o.ok = false;
          o.message = src.path + ": " + why;
        }
      }
    }
    if (src.directory) {
      ::unlink(src.send_path.c_str());  // now, not only when the last source is sent
    }
  }
  return report;
}

}  // namespace

std::optional<RemotePath> ParseRemotePath(const std::string& word) {
  if (word.empty() || word[0] == '/' || word[0] == '.') {
    return std::nullopt;
  }
  size_t colon = word.find(':');
  if (colon == std::string::npos || colon == 0) {
    return std::nullopt;
  }
  RemotePath r{word.substr(0, colon), word.substr(colon + 1)};
  // NODE:3:PATH and NODE:1-3,5:PATH: the worker list belongs to the target.
  size_t second = r.path.find(':');
  if (second != std::string::npos && second > 0 &&
      r.path.find_first_not_of("0123456789,-") == second) {
    r.target += ":" + r.path.substr(0, second);
    r.path = r.path.substr(second + 1);
  }
  return r;
}

bool CopyReport::ok() const {
  if (!security_events.empty()) {
    return false;
  }
  for (const auto& w : workers) {
    if (!w.ok) {
      return false;
    }
  }
  return true;
}

Result<CopyReport> Copy(World& world, const CopyRequest& request) {
  if (request.sources.empty()) {
    return InvalidArgumentError("nothing to copy: give sources, then the destination");
  }
  std::optional<RemotePath> dest = ParseRemotePath(request.destination);
  std::vector<RemotePath> remote_sources;
  for (const auto& s : request.sources) {
    if (auto r = ParseRemotePath(s)) {
      remote_sources.push_back(*r);
    }
  }
  if (dest && remote_sources.empty()) {
    return Upload(world, request, *dest);
  }
  if (!dest && remote_sources.size() == 1 && request.sources.size() == 1) {
    return copy_internal::Download(world, request, remote_sources[0]);
  }
  return InvalidArgumentError(
      "cp copies local paths to TARGET:PATH, or one TARGET:PATH to a local path "
      "(e.g. cp ./src pod:~/code, cp pod:3:~/out .); write a local path with ':' as ./a:b");
}

}  // namespace tpufleet
