#include "emulator/standin/standin.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/file.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>

#include "emulator/hosts/accelerators.h"
#include "emulator/standin/standin_metrics.h"
#include "util/file.h"
#include "util/strings.h"
#include "util/unique_fd.h"

namespace tpufleet::emulator::standin {
namespace {

using Mono = std::chrono::steady_clock;
using std::chrono::milliseconds;

constexpr const char* kUsage =
    "usage: tpu-standin [--burn | --idle | --input-bound] [--steps N] [--step-ms MS]\n"
    "                   [--checkpoint-dir D [--checkpoint-every K]] [--crash-after SECONDS]\n"
    "                   [--orphan] [--duty-cycle PERCENT] [--hbm-gib GIB]\n"
    "                   [--hbm-bandwidth PERCENT] [--hlo-queue N]\n";
constexpr double kGiB = 1 << 30;
constexpr const char* kCheckpointPrefix = "step_";

// SIGTERM is blocked from the start and seen as pending between steps: no handler and
// no flag, and a sleep sees it within kTermLatency.
bool Terminated() {
  sigset_t pending;
  ::sigpending(&pending);
  return ::sigismember(&pending, SIGTERM) == 1;
}

// --hlo-queue's ceiling: a queue of programs, not of steps.
constexpr int64_t kMaxHloQueue = 1000;

// How long a sleep goes without looking for SIGTERM.
constexpr std::chrono::microseconds kTermLatency{50'000};

void Out(const std::string& line) {
  std::string l = line + "\n";
  [[maybe_unused]] ssize_t n = ::write(1, l.data(), l.size());
}

void Err(const std::string& line) {
  std::string l = line + "\n";
  [[maybe_unused]] ssize_t n = ::write(2, l.data(), l.size());
}

std::optional<std::string> Env(const char* name) {
  const char* v = std::getenv(name);
  return v ? std::optional<std::string>(v) : std::nullopt;
}

Result<double> NumberFlag(const std::string& flag, const std::string& v, double lo, double hi) {
  double d = 0;
  if (!ParseDouble(v, &d) || d < lo || d > hi) {
    char range[64];
    std::snprintf(range, sizeof range, "%g to %g", lo, hi);
    return InvalidArgumentError(flag + " expects a number from " + range + ", got '" + v + "'");
  }
  return d;
}

// The newest checkpoint's step in `dir`, or 0.
int64_t NewestCheckpoint(const std::string& dir) {
  int64_t newest = 0;
  for (const std::string& name : ListDirectory(dir)) {
    long long step = 0;
    if (StartsWith(name, kCheckpointPrefix) &&
        ParseInt(name.substr(std::strlen(kCheckpointPrefix)), &step)) {
      newest = std::max<int64_t>(newest, step);
    }
  }
  return newest;
}

Status WriteCheckpoint(const std::string& dir, int64_t step) {
  return WriteFileAtomic(dir + "/" + kCheckpointPrefix + std::to_string(step),
                         "step " + std::to_string(step) + "\n", 0644);
}

// Busies this CPU until `until` (the host feeding a starved TPU).
void Spin(Mono::time_point until) {
  volatile uint64_t x = 0;
  while (Mono::now() < until && !Terminated()) {
    for (int i = 0; i < 100000; ++i) {
      x = x + static_cast<uint64_t>(i);
    }
  }
}

void SleepUntil(Mono::time_point until) {
  while (!Terminated()) {
    auto left = std::chrono::duration_cast<std::chrono::microseconds>(until - Mono::now());
    if (left.count() <= 0) {
      return;
    }
    ::usleep(static_cast<useconds_t>(std::min<int64_t>(left.count(), kTermLatency.count())));
  }
}

// Opens the chips' nodes; on VFIO families one open per group, as the kernel allows.
Result<std::vector<UniqueFd>> OpenChips(const std::vector<Chip>& chips) {
  std::vector<UniqueFd> fds;
  for (const Chip& c : chips) {
    UniqueFd fd(::open(c.node.c_str(), O_RDWR | O_CLOEXEC));
    if (fd.get() < 0) {
      return UnavailableError("TPU initialization failed: open(" + c.node +
                              "): " + std::strerror(errno));
    }
    if (c.vfio && ::flock(fd.get(), LOCK_EX | LOCK_NB) != 0) {
      return UnavailableError("TPU initialization failed: open(" + c.node +
                              "): Device or resource busy; Couldn't open iommu group " + c.node);
    }
    fds.push_back(std::move(fd));
  }
  return fds;
}

// The chips TPU_VISIBLE_CHIPS names ("0,2"), or all.
Result<std::vector<Chip>> VisibleChips(const std::vector<Chip>& all) {
  std::optional<std::string> visible = Env("TPU_VISIBLE_CHIPS");
  if (!visible || visible->empty()) {
    return all;
  }
  std::vector<Chip> out;
  for (const std::string& part : Split(*visible, ',')) {
    long long i = 0;
    if (!ParseInt(Trim(part), &i) || i < 0 || i >= static_cast<long long>(all.size())) {
      return InvalidArgumentError("TPU_VISIBLE_CHIPS=" + *visible + ": this host has " +
                                  std::to_string(all.size()) + " chips");
    }
    out.push_back(all[static_cast<size_t>(i)]);
  }
  return out;
}

// --orphan: a child in a session of its own keeps the devices (its copies of the
// descriptors, and on VFIO families their flocks) and never ends by itself.
void LeaveOrphan(const std::vector<Chip>& chips) {
  pid_t child = ::fork();
  if (child == 0) {
    sigset_t none;
    ::sigemptyset(&none);
    ::sigprocmask(SIG_SETMASK, &none, nullptr);  // an orphan dies of SIGTERM as usual
    ::setsid();
    ::signal(SIGHUP, SIG_IGN);
    Out("orphan: pid " + std::to_string(::getpid()) + " keeps " + chips.front().node + " open");
    int null = ::open("/dev/null", O_RDWR | O_CLOEXEC);
    for (int fd : {0, 1, 2}) {
      ::dup2(null, fd);  // the job's log pipes close when the parent exits
    }
    while (true) {
      ::pause();
    }
  }
  Err("tpu-standin: exiting with status 1, leaving pid " + std::to_string(child) +
      " holding the TPU");
}

}  // namespace

Result<StandinOptions> ParseStandinArgs(const std::vector<std::string>& args) {
  StandinOptions o;
  int modes = 0;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    auto value = [&]() -> Result<std::string> {
      if (i + 1 >= args.size()) {
        return InvalidArgumentError(a + " needs a value");
      }
      return args[++i];
    };
    if (a == "--burn" || a == "--idle" || a == "--input-bound") {
      o.mode = a == "--burn" ? Mode::kBurn : a == "--idle" ? Mode::kIdle : Mode::kInputBound;
      ++modes;
    } else if (a == "--orphan") {
      o.orphan = true;
    } else if (a == "--checkpoint-dir") {
      TPUFLEET_ASSIGN_OR_RETURN(o.checkpoint_dir, value());
    } else if (a == "--steps" || a == "--step-ms" || a == "--checkpoint-every") {
      TPUFLEET_ASSIGN_OR_RETURN(std::string v, value());
      long long n = 0;
      if (!ParseInt(v, &n) || n < 1 || n > INT_MAX) {
        return InvalidArgumentError(a + " expects a whole number above 0, got '" + v + "'");
      }
      if (a == "--steps") {
        o.steps = n;
      } else if (a == "--step-ms") {
        o.step_time = milliseconds(n);
      } else {
        o.checkpoint_every = n;
      }
    } else if (a == "--crash-after") {
      TPUFLEET_ASSIGN_OR_RETURN(std::string v, value());
      TPUFLEET_ASSIGN_OR_RETURN(double s, NumberFlag(a, v, 0, 86400));
      o.crash_after = milliseconds(static_cast<int64_t>(std::llround(s * 1000)));
    } else if (a == "--duty-cycle") {
      TPUFLEET_ASSIGN_OR_RETURN(std::string v, value());
      TPUFLEET_ASSIGN_OR_RETURN(o.duty_cycle, NumberFlag(a, v, 0, 100));
    } else if (a == "--hbm-gib") {
      TPUFLEET_ASSIGN_OR_RETURN(std::string v, value());
      TPUFLEET_ASSIGN_OR_RETURN(o.hbm_gib, NumberFlag(a, v, 0, 1024));
    } else if (a == "--hbm-bandwidth") {
      TPUFLEET_ASSIGN_OR_RETURN(std::string v, value());
      TPUFLEET_ASSIGN_OR_RETURN(o.hbm_bandwidth, NumberFlag(a, v, 0, 100));
    } else if (a == "--hlo-queue") {
      TPUFLEET_ASSIGN_OR_RETURN(std::string v, value());
      long long n = 0;
      if (!ParseInt(v, &n) || n < 0 || n > kMaxHloQueue) {
        return InvalidArgumentError(a + " expects a whole number from 0 to " +
                                    std::to_string(kMaxHloQueue) + ", got '" + v + "'");
      }
      o.hlo_queue = n;
    } else {
      return InvalidArgumentError("unknown argument '" + a + "'");
    }
  }
  if (modes > 1) {
    return InvalidArgumentError("give one of --burn, --idle and --input-bound");
  }
  return o;
}

std::vector<Chip> FindChips(const std::string& pci_devices) {
  std::vector<std::string> names = ListDirectory(pci_devices);
  std::sort(names.begin(), names.end());
  std::vector<Chip> chips;
  for (const std::string& name : names) {
    std::string dir = pci_devices + "/" + name;
    auto field = [&](const char* file) {
      Result<std::string> v = ReadFile(dir + "/" + file, 64);
      return v.ok() ? std::string(Trim(*v)) : std::string();
    };
    if (field("vendor") != hosts::kGoogleVendor || name.size() < 2 ||
        name.substr(name.size() - 2) != ".0") {
      continue;  // another vendor's device, or a chip's second function (7x)
    }
    const hosts::AcceleratorFamilyIds* ids =
        hosts::FindAcceleratorByPci(field("device"), field("subsystem_device"));
    if (ids == nullptr) {
      continue;
    }
    Chip c;
    c.index = static_cast<int>(chips.size());
    c.pci_address = name;
    c.family = std::string(ids->family);
    c.vfio = ids->vfio;
    c.hbm_gib = ids->hbm_gib;
    c.node = "/dev/accel" + std::to_string(c.index);
    if (ids->vfio) {
      char link[PATH_MAX];
      ssize_t n = ::readlink((dir + "/iommu_group").c_str(), link, sizeof link - 1);
      std::string group = n > 0 ? std::string(link, static_cast<size_t>(n)) : "";
      c.node = "/dev/vfio/" + group.substr(group.rfind('/') + 1);
    }
    chips.push_back(std::move(c));
  }
  return chips;
}

Result<int64_t> ParseRestarts(const std::optional<std::string>& value) {
  if (!value) {
    return int64_t{0};
  }
  long long n = 0;
  if (!ParseInt(*value, &n) || n < 0) {
    return InvalidArgumentError("TPUFLEET_RESTARTS expects a count of restarts (0, 1, …), got '" +
                                *value + "'");
  }
  return static_cast<int64_t>(n);
}

int StandinMain(int argc, char** argv) {
  if (argc == 2 && (std::string(argv[1]) == "--help" || std::string(argv[1]) == "-h")) {
    Out(std::string(kUsage) +
        "A stand-in for a JAX program on an emulated TPU worker: it takes libtpu's lock,\n"
        "opens the chips, serves their runtime metrics as libtpu does and prints a line per\n"
        "step (docs/emulator.md).");
    return 0;
  }
  Result<StandinOptions> parsed = ParseStandinArgs(std::vector<std::string>(argv + 1, argv + argc));
  if (!parsed.ok()) {
    Err("tpu-standin: " + parsed.status().message() + "\n" + kUsage);
    return 2;
  }
  const StandinOptions& o = *parsed;
  sigset_t term;
  ::sigemptyset(&term);
  ::sigaddset(&term, SIGTERM);
  ::sigprocmask(SIG_BLOCK, &term, nullptr);
  Out("tpu-standin: pid " + std::to_string(::getpid()) +
      " TPU_WORKER_ID=" + Env("TPU_WORKER_ID").value_or("unset") +
      " TPUFLEET_RANK=" + Env("TPUFLEET_RANK").value_or("unset"));
  Result<int64_t> restarts = ParseRestarts(Env("TPUFLEET_RESTARTS"));
  if (!restarts.ok()) {
    Err("tpu-standin: " + restarts.status().message());
    return 2;
  }
  // What a restarted training script logs first: how often it has been started again.
  Out("restarts " + std::to_string(*restarts));

  std::vector<Chip> all = FindChips(kPciDevices);
  if (all.empty()) {
    Err("TPU initialization failed: No ba16c7433 device found.");
    return 1;
  }
  LockDecision decision = DecideLibtpuLock(Env);
  if (decision.policy == LockPolicy::kRefuseToLoad) {
    Err("tpu-standin: " + decision.why + ": not loading libtpu.so");
    return 1;
  }
  UniqueFd lock;
  if (decision.policy == LockPolicy::kTake) {
    Result<UniqueFd> taken = TakeLibtpuLock(kLibtpuLockfile, all.front().node);
    if (!taken.ok()) {
      Err(taken.status().message());
      return 1;
    }
    lock = std::move(*taken);
  } else {
    Out("tpu-standin: " + decision.why + ": not taking " + kLibtpuLockfile);
  }
  Result<std::vector<Chip>> chips = VisibleChips(all);
  Result<std::vector<UniqueFd>> open = chips.ok() ? OpenChips(*chips) : chips.status();
  if (!open.ok()) {
    Err(open.status().message());
    return 1;
  }
  std::vector<std::string> nodes;
  for (const Chip& c : *chips) {
    nodes.push_back(c.node);
  }
  Out("tpu-standin: " + std::to_string(chips->size()) + " " + chips->front().family +
      " chip(s): " + Join(nodes, ","));
  if (o.orphan) {
    LeaveOrphan(*chips);
    return 1;
  }

  int64_t step = 0;
  if (!o.checkpoint_dir.empty()) {
    std::error_code ec;
    std::filesystem::create_directories(o.checkpoint_dir, ec);
    if (ec) {
      Err("tpu-standin: " + o.checkpoint_dir + ": " + ec.message());
      return 1;
    }
    step = NewestCheckpoint(o.checkpoint_dir);
    if (step > 0) {
      Out("resumed from step " + std::to_string(step));
    }
  }
  Result<int> port = MetricsPortFor(Env);
  Result<std::unique_ptr<tpu_metrics::RuntimeMetricsServer>> server =
      port.ok() ? ServeMetrics(o, *chips, *port) : port.status();
  if (!server.ok()) {
    Err("tpu-standin: TPU initialization failed: the runtime metrics server cannot start: " +
        server.status().message() +
        (port.ok() ? "; give this program a free port in TPU_RUNTIME_METRICS_PORTS" : ""));
    return 1;
  }
  Out("tpu-standin: runtime metrics on 127.0.0.1:" + std::to_string((*server)->port()));
  const tpu_metrics::RuntimeChipMetrics m0 = MetricsFor(o, *chips, {}).front();
  char shown[96];
  std::snprintf(shown, sizeof shown, "duty_cycle=%.1f%% hbm=%.1f/%.1fGiB",
                m0.duty_cycle_percent.value_or(0),
                static_cast<double>(m0.hbm_usage_bytes.value_or(0)) / kGiB,
                static_cast<double>(m0.hbm_total_bytes.value_or(0)) / kGiB);
  std::optional<Mono::time_point> crash_at;
  if (o.crash_after) {
    crash_at = Mono::now() + *o.crash_after;
  }
  std::string rank = Env("TPUFLEET_RANK").value_or(Env("TPU_WORKER_ID").value_or("0"));
  while (!Terminated() && (o.steps == 0 || step < o.steps)) {
    auto end = Mono::now() + o.step_time;
    if (crash_at && *crash_at < end) {
      end = *crash_at;
    }
    if (o.mode == Mode::kInputBound) {
      Spin(end);
    } else {
      SleepUntil(end);
    }
    if (crash_at && Mono::now() >= *crash_at) {
      Out("tpu-standin: crashing (SIGKILL)");
      ::raise(SIGKILL);
    }
    if (Terminated()) {
      break;
    }
    ++step;
    char loss[32];
    std::snprintf(loss, sizeof loss, "%.4f", 10.0 / (1.0 + 0.1 * static_cast<double>(step)));
    Out("step " + std::to_string(step) + (o.steps > 0 ? "/" + std::to_string(o.steps) : "") +
        " rank=" + rank + (o.mode == Mode::kIdle ? " idle" : std::string(" loss=") + loss) + " " +
        shown);
    if (!o.checkpoint_dir.empty() && step % o.checkpoint_every == 0) {
      if (Status s = WriteCheckpoint(o.checkpoint_dir, step); !s.ok()) {
        Err("tpu-standin: " + s.ToString());
        return 1;
      }
      Out("checkpoint saved at step " + std::to_string(step));
    }
  }
  if (Terminated() && !o.checkpoint_dir.empty() && step > 0) {
    if (WriteCheckpoint(o.checkpoint_dir, step).ok()) {
      Out("checkpoint saved at step " + std::to_string(step) + " (SIGTERM)");
    }
  }
  if (lock.get() >= 0) {
    ::unlink(kLibtpuLockfile);  // libtpu's atexit clean-up
  }
  Out(Terminated() ? "tpu-standin: terminated" : "tpu-standin: done");
  return Terminated() ? kExitTerminated : 0;
}

}  // namespace tpufleet::emulator::standin
