#include "agent/serve.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <memory>
#include <optional>

#include "agent/export/metrics_http.h"
#include "agent/export/prometheus_text.h"
#include "agent/flags.h"
#include "agent/host/metadata_guard.h"
#include "agent/host/metadata_proxy.h"
#include "agent/host/mounts.h"
#include "agent/host/nvml.h"
#include "agent/host/plain_http.h"
#include "agent/job_table.h"
#include "agent/notice_watcher.h"
#include "agent/sampler/sampler.h"
#include "agent/server.h"
#include "api/agent.h"
#include "util/clock.h"
#include "util/event_loop.h"
#include "util/file.h"
#include "util/strings.h"
#include "util/subprocess.h"

#ifndef TPUFLEET_AGENT_VERSION
#define TPUFLEET_AGENT_VERSION "dev"
#endif

namespace tpufleet::agent {
namespace {

// The directory of the socket (0755 when made here) and the lock in it, held.
Result<UniqueFd> LockServe(const std::string& socket_path) {
  std::string dir = DirOf(socket_path);
  if (mkdir(dir.c_str(), 0755) == 0) {
    chmod(dir.c_str(), 0755);  // whatever the umask: callers must reach the socket
  } else if (errno != EEXIST) {
    return ErrnoStatus(dir, errno);
  }
  std::string attach = dir + "/attach";  // the jobs' terminals (attach.h)
  if (mkdir(attach.c_str(), 0755) == 0) {
    chmod(attach.c_str(), 0755);
  } else if (errno != EEXIST) {
    return ErrnoStatus(attach, errno);
  }
  std::string path = dir + "/lock";
  UniqueFd fd(open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600));
  if (fd.get() < 0) {
    return ErrnoStatus(path, errno);
  }
  if (flock(fd.get(), LOCK_EX | LOCK_NB) != 0) {
    if (errno == EWOULDBLOCK) {
      return FailedPreconditionError("another tpufleet-agent serve runs here (it holds " + path +
                                     ")");
    }
    return ErrnoStatus(path, errno);
  }
  return fd;
}

}  // namespace

std::string AgentVersion() { return TPUFLEET_AGENT_VERSION; }

Result<std::string> BinarySha256() {
  TPUFLEET_ASSIGN_OR_RETURN(
      ProgramResult r,
      RunSubprocess({"/usr/bin/sha256sum", "/proc/" + std::to_string(getpid()) + "/exe"}, "",
                    std::chrono::seconds(30), SpawnOptions{}));
  size_t space = r.output.find(' ');
  if (r.exit_code != 0 || space != 64) {
    return InternalError("sha256sum of the agent's binary failed: " + r.output);
  }
  return r.output.substr(0, space);
}

int ServeMain(const std::vector<std::string>& args) {
  Result<Flags> flags = ParseFlags(args, {"socket", "state-dir", "log-bytes", "host-root", "watch",
                                          "sample-interval", "nvml", "prometheus", "metadata"});
  const std::string watch = flags.ok() ? flags->Get("watch", "inotify") : "";
  long long log_bytes = 0;
  long long interval_ms = 0;
  if (!flags.ok() || !flags->positional.empty() ||
      !ParseInt(flags->Get("log-bytes", "0"), &log_bytes) || log_bytes < 0 ||
      !ParseInt(flags->Get("sample-interval", std::to_string(sampler::kDefaultSampleInterval.count())),
                &interval_ms) ||
      interval_ms < kMinSampleInterval.count() || (watch != "inotify" && watch != "poll")) {
    return Complain(kExitUsage, (flags.ok() ? std::string() : flags.status().message() + "\n") +
                                    "usage: tpufleet-agent serve [--socket PATH] [--state-dir DIR] "
                                    "[--watch inotify|poll] [--sample-interval MS (at least " +
                                    std::to_string(kMinSampleInterval.count()) +
                                    ")] [--nvml LIBRARY] [--prometheus [ADDR:]PORT] "
                                    "[--metadata IPV4:PORT]");
  }
  const std::string metadata = flags->Get("metadata", std::string(kDefaultMetadataAddress));
  if (Status usable = NoticeWatcher::Check(metadata); !usable.ok()) {
    return Complain(kExitUsage, usable.message());
  }
  signal(SIGPIPE, SIG_IGN);
  sigset_t stop;
  sigemptyset(&stop);
  sigaddset(&stop, SIGTERM);
  sigaddset(&stop, SIGINT);
  sigprocmask(SIG_BLOCK, &stop, nullptr);  // taken by the signalfd below

  std::string socket_path = flags->Get("socket", std::string(api::kAgentSocketPath));
  Result<UniqueFd> lock = LockServe(socket_path);
  if (!lock.ok()) {
    return Complain(kExitFailed, lock.status().message());
  }
  Result<std::string> sha = BinarySha256();
  if (!sha.ok()) {
    Complain(kExitOk, sha.status().message() + " (hello will say \"\")");
  }
  host::HostPaths host;
  if (std::string root = flags->Get("host-root", ""); !root.empty()) {
    host::HostPaths under = host::HostPaths::Under(root);
    host.sys = under.sys;
    host.dev = under.dev;
    host.lockfile = under.lockfile;
  }
  host.state = flags->Get("state-dir", std::string(api::kAgentStateDir));
  RealClock clock;
  EventLoop loop(clock);
  JobTableOptions options;
  options.state_dir = host.state;
  options.log_bytes = static_cast<size_t>(log_bytes);
  options.poll = watch == "poll";
  options.program = "/proc/self/exe";
  options.attach_dir = DirOf(socket_path) + "/attach";
  options.host = host;
  // The spec's data disks, mounted again after a reboot (the list disks.mount kept).
  if (geteuid() == 0) {
    for (const host::MountResult& r : host::ApplyMounts(host, host::SavedMounts(host))) {
      if (!r.error.empty()) {
        Complain(kExitOk, "disk " + r.disk + " at " + r.path + ": " + r.error);
      }
    }
  }
  JobTable jobs(loop, options);
  Status init = jobs.Init();
  if (!init.ok()) {
    return Complain(kExitFailed, init.ToString());
  }
  // The samples, on a thread of their own (a runtime metrics read may block).
  host::NvmlOptions nvml_options;
  nvml_options.library = flags->Get("nvml", "");
  std::unique_ptr<host::Nvml> nvml = host::Nvml::Open(nvml_options);
  if (!nvml->ok() && !nvml_options.library.empty()) {
    Complain(kExitOk, nvml->reason());
  }
  sampler::GrpcChipMetricsReader chip_metrics;
  sampler::NvmlGpuReader gpus(*nvml);
  sampler::Sampler sampler(clock, {host, std::chrono::milliseconds(interval_ms)}, &chip_metrics,
                           &gpus);
  // The worker's notices (preemption, maintenance), long-polled in this loop.
  NoticeWatcher notices(loop, metadata);
  // The metadata guard (root only: it changes the worker's nftables): its proxy on
  // 127.0.0.1, and the guard of the last accounts.apply put back.
  host::PlainHttpClient guard_http;
  std::optional<host::MetadataProxy> proxy;
  std::optional<host::MetadataGuard> guard;
  if (geteuid() == 0) {
    proxy.emplace(loop, "http://" + metadata, host);
    if (Status proxying = proxy->Listen(); !proxying.ok()) {
      return Complain(kExitFailed, "the metadata guard's proxy: " + proxying.message());
    }
    guard.emplace(host, host::GuardPrograms{}, "http://" + metadata, guard_http);
    guard->set_proxy_port(proxy->port());
    if (const host::GuardState& g = guard->Restore(); !g.error.empty()) {
      Complain(kExitOk, "metadata guard: " + g.error);
    }
  }
  Server server(loop, jobs, {AgentVersion(), sha.ok() ? *sha : ""}, host, &sampler, notices,
                guard ? &*guard : nullptr);
  sampler.Start();
  notices.Start();
  // GET /metrics for a Prometheus, from the sampler's snapshot (never a sample).
  std::optional<exporter::MetricsHttpServer> prometheus;
  if (std::string address = flags->Get("prometheus", ""); !address.empty()) {
    prometheus.emplace(loop, [&sampler] { return exporter::PrometheusText(sampler.Report({})); });
    Status listening_http = prometheus->Listen(address);
    if (!listening_http.ok()) {
      return Complain(kExitFailed, "--prometheus: " + listening_http.message());
    }
  }
  Status listening = server.Listen(socket_path);
  if (!listening.ok()) {
    return Complain(kExitFailed, listening.ToString());
  }
  UniqueFd stop_fd(signalfd(-1, &stop, SFD_CLOEXEC | SFD_NONBLOCK));
  if (stop_fd.get() < 0) {
    return Complain(kExitFailed, std::string("signalfd: ") + std::strerror(errno));
  }
  EventLoop::Id stop_watch = loop.Watch(stop_fd.get(), POLLIN, [&loop](short, Clock::MonoTime) {
    loop.Stop();
  });
  loop.Run();
  loop.Remove(stop_watch);
  return kExitOk;
}

int VersionMain(const std::vector<std::string>& args) {
  if (!args.empty()) {
    return Complain(kExitUsage, "usage: tpufleet-agent version");
  }
  Result<std::string> sha = BinarySha256();
  if (!sha.ok()) {
    return Complain(kExitFailed, sha.status().message());
  }
  std::string line = "tpufleet-agent " + AgentVersion() + " " + *sha + "\n";
  return write(STDOUT_FILENO, line.data(), line.size()) == static_cast<ssize_t>(line.size())
             ? kExitOk
             : kExitFailed;
}

}  // namespace tpufleet::agent
