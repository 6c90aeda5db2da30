// cp's downloads: each worker's tar stream, checked by a TarGuard, unpacked here by a
// `tar -x` of its own (see copy.h).
#include <fcntl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <filesystem>
#include <optional>

#include "control/copy_internal.h"
#include "control/exec.h"
#include "control/resolve.h"
#include "control/tar_guard.h"
#include "util/file.h"
#include "util/strings.h"
#include "util/subprocess.h"
#include "util/unique_fd.h"

namespace tpufleet::copy_internal {

namespace {

namespace fs = std::filesystem;

// $1 path: a tar of it on stdout.
constexpr const char* kSendPath =
    "[ -e \"$d\" ] || { echo \"no such file or directory: $1\" >&2; exit 1; }; "
    "cd \"$(dirname \"$d\")\" && exec tar -c -f - \"$(basename \"$d\")\"";

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

}  // namespace

Result<CopyReport> Download(World& world, const CopyRequest& request, const RemotePath& src) {
  TPUFLEET_ASSIGN_OR_RETURN(std::vector<WorkerTarget> workers,
                            ResolveTargets(world.store, {src.target}));
  const std::string& dest = request.destination;
  std::string base = fs::path(src.path).filename().string();
  std::error_code ec;  // a DEST that cannot be looked at is one that is not there yet
  bool into_dir = fs::is_directory(dest, ec);
  if (workers.size() > 1 && fs::exists(dest, ec) && !into_dir) {
    return InvalidArgumentError(dest + " is a file; several workers need a directory");
  }
  // One worker: into DEST (a directory) or as DEST. Several: DEST/NODE-wN/ each.
  std::vector<std::string> dirs;
  // Staging beside DEST (for the rename) under a name nobody can guess or plant.
  PrivateDir staging;
  if (workers.size() == 1 && !into_dir) {
    std::string parent = fs::path(dest).has_parent_path() ? fs::path(dest).parent_path().string() : ".";
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

}  // namespace tpufleet::copy_internal
