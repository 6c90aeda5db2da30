#include "control/copy.h"

#include <fcntl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <map>
#include <random>

#include "control/copy_relay_hop.h"
#include "control/exec.h"
#include "control/resolve.h"
#include "control/tar_guard.h"
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

// $1 path: a tar of it on stdout.
constexpr const char* kSendPath =
    "[ -e \"$d\" ] || { echo \"no such file or directory: $1\" >&2; exit 1; }; "
    "cd \"$(dirname \"$d\")\" && exec tar -c -f - \"$(basename \"$d\")\"";

std::string Script(const std::string& body, const std::vector<std::string>& args) {
  std::vector<std::string> words = {"sh", "-c", std::string(kExpandPath) + body, "tpufleet"};
  words.insert(words.end(), args.begin(), args.end());
  return ShellJoin(words);
}

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

 private:
  static constexpr size_t kKeep = 4096;  // messages, not data
  std::vector<std::string> out_, err_;
  std::vector<HostResult> results_;
};

// A new directory that only this user can enter (mkdtemp makes it 0700), removed with
// what is in it when this goes: for what cp writes here that nobody else may read or
// plant (a directory's tar, a download's staging).
class PrivateDir {
 public:
  PrivateDir() = default;
  PrivateDir(const PrivateDir&) = delete;
  PrivateDir& operator=(const PrivateDir&) = delete;
  ~PrivateDir() {
    if (!path_.empty()) {
      std::error_code ec;
      fs::remove_all(path_, ec);
    }
  }
  /// Makes PARENT/PREFIXxxxxxx (once; later calls keep the first).
  Status Make(const std::string& parent, const std::string& prefix) {
    if (!path_.empty()) {
      return Status::Ok();
    }
    std::string name = parent + "/" + prefix + "XXXXXX";
    if (::mkdtemp(name.data()) == nullptr) {
      return ErrnoStatus("a private directory in " + parent, errno);
    }
    path_ = name;
    return Status::Ok();
  }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
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
  TPUFLEET_ASSIGN_OR_RETURN(SubprocessResult r,
                            RunSubprocess({"sha256sum", "--", path}, "",
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
    TPUFLEET_TRY(scratch.Make(fs::temp_directory_path().string(), "tpufleet-cp-"));
    s.send_path = scratch.path() + "/" + std::to_string(index) + ".tar";
    UniqueFd tar(::open(s.send_path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600));
    if (tar.get() < 0) {
      return ErrnoStatus(s.send_path, errno);
    }
    SpawnOptions options;
    options.search_path = true;
    options.inherit_env = true;
    fs::path abs = fs::absolute(trimmed);
    TPUFLEET_ASSIGN_OR_RETURN(
        SubprocessResult r,
        RunSubprocess({"tar", "-c", "-f", s.send_path, "-C", abs.parent_path().string(), "--",
                       abs.filename().string()},
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
  for (const Source& src : sources) {
    report.bytes += src.size;
    std::vector<bool> relayed(workers.size(), false);
    // A worker without a pinned host key is no hop of the chain: the direct copy below
    // fails it alone.
    std::vector<WorkerTarget> chain;
    std::vector<size_t> chain_index;
    for (size_t i = 0; i < workers.size(); ++i) {
      if (!workers[i].host_key.empty()) {
        chain.push_back(workers[i]);
        chain_index.push_back(i);
      }
    }
    if (request.relay && !src.directory && src.size >= kRelayMinBytes &&
        chain.size() >= kRelayMinWorkers) {
      std::vector<bool> got = Relay(world, src, chain, dest.path, request.connect_timeout,
                                    report.security_events);
      for (size_t k = 0; k < chain.size(); ++k) {
        relayed[chain_index[k]] = got[k];
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

// Who should own what cp makes here: the user behind sudo, when root runs cp with
// SUDO_UID and SUDO_GID set (to another user); else nobody in particular (nullopt: the
// files are the running user's, as tar makes them with --no-same-owner).
struct Owner {
  uid_t uid;
  gid_t gid;
};
std::optional<Owner> SudoOwner() {
  const char* uid = std::getenv("SUDO_UID");
  const char* gid = std::getenv("SUDO_GID");
  long long u = 0, g = 0;
  if (::geteuid() != 0 || uid == nullptr || gid == nullptr || !ParseInt(uid, &u) ||
      !ParseInt(gid, &g) || u <= 0 || g < 0) {
    return std::nullopt;
  }
  return Owner{static_cast<uid_t>(u), static_cast<gid_t>(g)};
}

// Gives the directories `made` and the `names` under `dir` (never following a symlink)
// to `owner`; "" or why not.
std::string GiveTo(const std::vector<std::string>& made, const std::string& dir,
                   const std::vector<std::string>& names, Owner owner) {
  std::vector<std::string> paths = made;
  for (const std::string& name : names) {
    paths.push_back(dir + "/" + name);
  }
  for (const std::string& path : paths) {
    if (::fchownat(AT_FDCWD, path.c_str(), owner.uid, owner.gid, AT_SYMLINK_NOFOLLOW) != 0 &&
        errno != ENOENT) {
      return ErrnoStatus("chown " + path, errno).message();
    }
  }
  return "";
}

// Writes each host's tar stream, checked by a TarGuard, into a `tar -x` of its own.
class Unpack final : public FanoutSink {
 public:
  explicit Unpack(std::vector<std::string> dirs) : dirs_(std::move(dirs)) {
    tars_.resize(dirs_.size());
    errors_.resize(dirs_.size());
    results_.resize(dirs_.size());
    guards_.resize(dirs_.size());
    made_.resize(dirs_.size());
  }
  ~Unpack() override {
    for (size_t i = 0; i < tars_.size(); ++i) {
      Close(i);
    }
  }
  void OnOutput(size_t host, OutputStream stream, std::string_view data) override {
    if (stream == OutputStream::kStderr) {
      std::string& e = errors_[host];  // what went wrong, not what the worker can print
      e.append(data.substr(0, kKeepErrorBytes - std::min(e.size(), kKeepErrorBytes)));
      return;
    }
    Tar& t = tars_[host];
    if (t.pid == 0 && !Open(host)) {
      return;
    }
    // Only what the guard lets through reaches tar; after a refusal, nothing more does.
    std::string safe;
    if (!guards_[host].Feed(data, safe).ok()) {
      t.in.Reset();
    }
    data = safe;
    while (!data.empty() && t.in.get() >= 0) {
      ssize_t n = ::send(t.in.get(), data.data(), data.size(), MSG_NOSIGNAL);
      if (n < 0 && errno == EINTR) {
        continue;
      }
      if (n <= 0) {
        t.in.Reset();  // tar gave up; its exit status says why
        break;
      }
      data.remove_prefix(static_cast<size_t>(n));
    }
  }
  void OnResult(size_t host, const HostResult& result) override {
    results_[host] = result;
    int tar_status = Close(host);
    std::string refused;
    if (Status s = guards_[host].Feed("", refused); !s.ok()) {
      errors_[host] = "refused: " + s.message();
    } else if (result.ok() && tar_status != 0) {
      errors_[host] += "tar could not unpack what the worker sent into " + dirs_[host];
    } else if (result.ok() && owner_) {
      errors_[host] = GiveTo(made_[host], dirs_[host], guards_[host].names(), *owner_);
    }
    if (result.ok() && !errors_[host].empty()) {
      results_[host].outcome = HostOutcome::kExited;
      results_[host].exit_code = 1;
    }
  }
  std::string Failure(size_t host) const {
    if (results_[host].ok()) {
      return "";
    }
    std::string why = std::string(Trim(errors_[host]));
    return why.empty() ? results_[host].message : why;
  }

 private:
  struct Tar {
    pid_t pid = 0;
    UniqueFd in;
  };
  bool Open(size_t host) {
    // A socket, not a pipe: written with MSG_NOSIGNAL, a tar that gave up early (a
    // directory it cannot write, a full disk) is EPIPE here, not a SIGPIPE that kills cp.
    int fds[2];
    if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds) != 0) {
      return false;
    }
    UniqueFd read_end(fds[0]);
    tars_[host].in = UniqueFd(fds[1]);
    std::error_code ec;
    for (fs::path p = dirs_[host]; !p.empty() && !fs::exists(p, ec); p = p.parent_path()) {
      made_[host].push_back(p.string());
    }
    fs::create_directories(dirs_[host], ec);
    SpawnOptions options;
    options.search_path = true;
    options.inherit_env = true;
    // --no-same-owner: run as root, tar would give the files the worker's uid, which
    // here is some other local account's.
    Result<pid_t> pid =
        SpawnSubprocess({"tar", "-x", "--no-same-owner", "-f", "-", "-C", dirs_[host]}, options,
                        {read_end.get(), -1});
    if (!pid.ok()) {
      errors_[host] = pid.status().message();
      tars_[host].in.Reset();
      return false;
    }
    tars_[host].pid = *pid;
    return true;
  }
  int Close(size_t host) {
    Tar& t = tars_[host];
    t.in.Reset();
    if (t.pid <= 0) {
      return 0;
    }
    int status = 0;
    ::waitpid(t.pid, &status, 0);
    t.pid = -1;
    return WIFEXITED(status) ? WEXITSTATUS(status) : 1;
  }
  std::vector<std::string> dirs_;
  std::optional<Owner> owner_ = SudoOwner();
  std::vector<TarGuard> guards_;
  std::vector<std::vector<std::string>> made_;  // the directories Open created
  std::vector<Tar> tars_;
  static constexpr size_t kKeepErrorBytes = 4096;  // a message, however much was printed
  std::vector<std::string> errors_;
  std::vector<HostResult> results_;
};

Result<CopyReport> Download(World& world, const CopyRequest& request, const RemotePath& src) {
  TPUFLEET_ASSIGN_OR_RETURN(std::vector<WorkerTarget> workers,
                            ResolveTargets(world.store, {src.target}));
  const std::string& dest = request.destination;
  std::string base = fs::path(src.path).filename().string();
  bool into_dir = fs::is_directory(dest);
  if (workers.size() > 1 && fs::exists(dest) && !into_dir) {
    return InvalidArgumentError(dest + " is a file; several workers need a directory");
  }
  // One worker: into DEST (a directory) or as DEST. Several: DEST/NODE-wN/ each.
  std::vector<std::string> dirs;
  // Staging beside DEST (for the rename) under a name nobody can guess or plant.
  PrivateDir staging;
  if (workers.size() == 1 && !into_dir) {
    std::string parent = fs::path(dest).has_parent_path() ? fs::path(dest).parent_path().string() : ".";
    std::error_code ec;
    fs::create_directories(parent, ec);
    TPUFLEET_TRY(staging.Make(parent, ".tpufleet-cp-"));
    dirs.push_back(staging.path());
  } else {
    for (const auto& w : workers) {
      dirs.push_back(workers.size() == 1 ? dest : dest + "/" + w.node + "-w" + std::to_string(w.worker));
    }
  }
  FanoutJob job = JobFor(world, workers);
  job.command = Script(kSendPath, {src.path});
  job.connect_timeout = request.connect_timeout;
  CopyReport report;
  report.download = true;
  {
    Unpack unpack(dirs);
    TPUFLEET_TRY(RunResolving(world, workers, job, unpack));
    for (size_t i = 0; i < workers.size(); ++i) {
      std::string why = unpack.Failure(i);
      report.workers.push_back(CopyOutcome{workers[i], why.empty(), "ssh", why});
    }
  }
  if (!staging.path().empty()) {
    std::error_code ec;
    if (report.workers[0].ok) {
      // The tar holds one entry, the remote path's base name (or "." for the home).
      fs::path got = staging.path() + "/" + (base.empty() || base == "~" ? "." : base);
      fs::rename(got, dest, ec);
      if (ec) {
        report.workers[0].ok = false;
        report.workers[0].message = "cannot move it to " + dest + ": " + ec.message();
      }
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
    return Download(world, request, remote_sources[0]);
  }
  return InvalidArgumentError(
      "cp copies local paths to TARGET:PATH, or one TARGET:PATH to a local path "
      "(e.g. cp ./src pod:~/code, cp pod:3:~/out .); write a local path with ':' as ./a:b");
}

}  // namespace tpufleet
