// emulator_hosts_bench: how long real worker hosts take to come up and what they cost.
//
//   emulator_hosts_bench [--sizes=16,64,256] [--state=DIR]
//   emulator_hosts_bench --clean --state=DIR
//
// For each size N it measures, on a fresh state dir:
//   - one node of N workers, cold (first boot: host keys, users) and warm (restart),
//     from Boot to every sshd accepting connections from the machine;
//   - N/4 nodes of 4 workers (a fleet of v4-32s) booted from 4 threads at once;
//   - Halt of all of them, and Destroy plus Shutdown (the disks are deleted after, in
//     the background);
// and the memory per worker: the RSS and PSS of every process on the workers (init and
// sshd), and the drop in the machine's MemAvailable, which also counts the kernel's
// share (namespaces, mounts, sockets). Needs root. Prints a Markdown table.
// Cleanup: everything is destroyed at the end; if the bench is killed its workers die
// with it (their death signal) and `--clean` removes the bridge and the disks.
// The state dir is a fresh /tmp/tpufleet-hosts-bench.XXXXXX unless --state names one,
// which must be root's and unwritable by others.
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <set>
#include <thread>

#include "emulator/hosts/host_checks.h"
#include "emulator/hosts/namespace_hosts.h"
#include "emulator/hosts/system_programs.h"
#include "util/clock.h"
#include "util/file.h"
#include "util/strings.h"

namespace tpufleet::emulator {
namespace {

namespace fs = std::filesystem;

constexpr int kBootThreads = 4;  // concurrent Boot calls, like an API server's workers

long long FieldKb(const std::string& text, const std::string& name) {
  for (const std::string& line : Split(text, '\n')) {
    if (StartsWith(line, name)) {
      long long kb = 0;
      std::string digits;
      for (char c : line.substr(name.size())) {
        if (c >= '0' && c <= '9') {
          digits += c;
        }
      }
      ParseInt(digits, &kb);
      return kb;
    }
  }
  return 0;
}

long long MemAvailableKb() {
  Result<std::string> m = ReadFile("/proc/meminfo");
  return m.ok() ? FieldKb(*m, "MemAvailable:") : 0;
}

struct Memory {
  long long rss_kb = 0;
  long long pss_kb = 0;
  int processes = 0;
};

// RSS and PSS of every process whose PID namespace is one of the inits'.
Memory MeasureWorkers(const std::vector<pid_t>& inits) {
  std::set<std::string> spaces;
  std::error_code ec;
  for (pid_t p : inits) {
    spaces.insert(fs::read_symlink("/proc/" + std::to_string(p) + "/ns/pid", ec).string());
  }
  Memory m;
  for (const fs::directory_entry& e : fs::directory_iterator("/proc", ec)) {
    long long pid = 0;
    if (!ParseInt(e.path().filename().string(), &pid)) {
      continue;
    }
    if (spaces.count(fs::read_symlink(e.path() / "ns/pid", ec).string()) == 0) {
      continue;
    }
    Result<std::string> status = ReadFile(e.path().string() + "/status");
    Result<std::string> rollup = ReadFile(e.path().string() + "/smaps_rollup");
    if (status.ok()) {
      m.rss_kb += FieldKb(*status, "VmRSS:");
    }
    if (rollup.ok()) {
      m.pss_kb += FieldKb(*rollup, "Pss:");
    }
    ++m.processes;
  }
  return m;
}

NodeHostSpec Spec(int index, int workers, const std::string& keys) {
  NodeHostSpec s;
  s.name = "projects/bench/locations/us-central2-b/nodes/n" + std::to_string(index);
  s.id = std::to_string(7000 + index);
  s.accelerator_type = workers == 4 ? "v4-32" : "v4-" + std::to_string(workers * 8);
  s.workers = workers;
  s.metadata = {{"ssh-keys", keys}};
  return s;
}

double Seconds(std::chrono::steady_clock::duration d) {
  return std::chrono::duration<double>(d).count();
}

int Run(const std::vector<int>& sizes, const std::string& state) {
  RealClock clock;
  std::string keygen = *hosts::FindProgram("ssh-keygen");
  fs::create_directories(state);
  std::string key = state + "/bench_key";
  fs::remove(key);
  fs::remove(key + ".pub");
  if (!hosts::RunChecked({keygen, "-q", "-t", "ed25519", "-N", "", "-f", key}).ok()) {
    std::fprintf(stderr, "ssh-keygen failed\n");
    return 1;
  }
  std::string keys = "bench:" + std::string(Trim(*ReadFile(key + ".pub")));

  std::printf(
      "| workers | layout | cold boot | warm boot | halt | destroy + shutdown | "
      "RSS/worker | PSS/worker | MemAvailable drop/worker |\n"
      "|---|---|---|---|---|---|---|---|---|\n");
  for (int n : sizes) {
    for (bool fleet : {false, true}) {
      std::string dir = state + "/run-" + std::to_string(n) + (fleet ? "-fleet" : "-node");
      NamespaceHostsOptions o;
      o.state_dir = dir;
      o.worker_binary = TPUFLEET_EMULATOR_WORKER;
      Result<std::unique_ptr<NamespaceHosts>> h = NamespaceHosts::Create(o, clock);
      if (!h.ok()) {
        std::fprintf(stderr, "%s\n", h.status().ToString().c_str());
        return 1;
      }
      NamespaceHosts& hosts = **h;
      std::vector<NodeHostSpec> specs;
      if (fleet) {
        for (int i = 0; i < n / 4; ++i) {
          specs.push_back(Spec(i, 4, keys));
        }
      } else {
        specs.push_back(Spec(0, n, keys));
      }
      auto boot_all = [&]() -> Status {
        std::vector<Status> results(specs.size());
        std::vector<std::thread> threads;
        std::atomic<size_t> next{0};
        for (int t = 0; t < kBootThreads; ++t) {
          threads.emplace_back([&] {
            for (size_t i = next++; i < specs.size(); i = next++) {
              results[i] = hosts.Boot(specs[i], false).status();
            }
          });
        }
        for (std::thread& t : threads) {
          t.join();
        }
        for (const Status& s : results) {
          TPUFLEET_TRY(s);
        }
        return Status::Ok();
      };
      long long avail_before = MemAvailableKb();
      auto t0 = std::chrono::steady_clock::now();
      Status cold = boot_all();
      double cold_s = Seconds(std::chrono::steady_clock::now() - t0);
      if (!cold.ok()) {
        std::fprintf(stderr, "boot of %d workers failed: %s\n", n, cold.ToString().c_str());
        return 1;
      }
      std::vector<pid_t> inits;
      for (const NodeHostSpec& s : specs) {
        for (pid_t p : hosts.InitPids(s.name)) {
          inits.push_back(p);
        }
      }
      Memory mem = MeasureWorkers(inits);
      long long avail_after = MemAvailableKb();
      t0 = std::chrono::steady_clock::now();
      for (const NodeHostSpec& s : specs) {
        (void)hosts.Halt(s.name);
      }
      double halt_s = Seconds(std::chrono::steady_clock::now() - t0);
      t0 = std::chrono::steady_clock::now();
      Status warm = boot_all();
      double warm_s = Seconds(std::chrono::steady_clock::now() - t0);
      if (!warm.ok()) {
        std::fprintf(stderr, "warm boot of %d workers failed: %s\n", n, warm.ToString().c_str());
        return 1;
      }
      t0 = std::chrono::steady_clock::now();
      for (const NodeHostSpec& s : specs) {
        (void)hosts.Destroy(s.name);
      }
      h->reset();
      double destroy_s = Seconds(std::chrono::steady_clock::now() - t0);
      std::error_code ec;
      fs::remove_all(dir, ec);
      std::printf(
          "| %d | %s | %.1f s | %.1f s | %.1f s | %.1f s | %.1f MiB | %.1f MiB | %.1f MiB |\n", n,
          fleet ? (std::to_string(n / 4) + " nodes × 4").c_str() : "1 node", cold_s, warm_s, halt_s,
          destroy_s, mem.rss_kb / 1024.0 / n, mem.pss_kb / 1024.0 / n,
          (avail_before - avail_after) / 1024.0 / n);
      std::fflush(stdout);
    }
  }
  fs::remove(key);
  fs::remove(key + ".pub");
  std::error_code ec;
  fs::remove_all(state, ec);
  return 0;
}

}  // namespace
}  // namespace tpufleet::emulator

int main(int argc, char** argv) {
  using namespace tpufleet;
  std::vector<int> sizes = {16, 64, 256};
  // No fixed default under /tmp: another user could make it first (issue 10); a fresh
  // private directory is made below unless --state names one.
  std::string state;
  bool clean = false;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (StartsWith(a, "--sizes=")) {
      sizes.clear();
      for (const std::string& s : Split(a.substr(8), ',')) {
        long long v = 0;
        if (!ParseInt(s, &v) || v < 4 || v % 4 != 0) {
          std::fprintf(stderr, "sizes are multiples of 4\n");
          return 2;
        }
        sizes.push_back(static_cast<int>(v));
      }
    } else if (StartsWith(a, "--state=")) {
      state = a.substr(8);
    } else if (a == "--clean") {
      clean = true;
    } else {
      std::fprintf(stderr, "usage: %s [--sizes=16,64,256] [--state=DIR] [--clean]\n", argv[0]);
      return 2;
    }
  }
  if (::geteuid() != 0) {
    std::fprintf(stderr, "emulator_hosts_bench: needs root (worker hosts are namespaces)\n");
    return 77;
  }
  if (state.empty()) {
    if (clean) {
      std::fprintf(stderr, "--clean needs --state=DIR\n");
      return 2;
    }
    char tmpl[] = "/tmp/tpufleet-hosts-bench.XXXXXX";
    if (::mkdtemp(tmpl) == nullptr) {
      std::perror("mkdtemp");
      return 1;
    }
    state = tmpl;
  }
  // Root makes keys, disks and mounts under it: it must be root's, unwritable by others.
  if (Status s = emulator::hosts::CheckStateDirOwner(state); !s.ok()) {
    std::fprintf(stderr, "%s\n", s.ToString().c_str());
    return 1;
  }
  if (clean) {
    std::error_code ec;
    for (const auto& e : std::filesystem::directory_iterator(state, ec)) {
      if (e.is_directory()) {
        Status s = emulator::NamespaceHosts::CleanStale(e.path().string());
        if (!s.ok()) {
          std::fprintf(stderr, "%s\n", s.ToString().c_str());
        }
      }
    }
    Status s = emulator::NamespaceHosts::CleanStale(state);
    std::filesystem::remove_all(state, ec);
    return s.ok() ? 0 : 1;
  }
  return emulator::Run(sizes, state);
}
