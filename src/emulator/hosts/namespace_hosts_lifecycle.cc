// NamespaceHosts' life: Create (the machine's checks, the state dir's lock, the bridge,
// the records of nodes an earlier run left), the trash that a destroyed worker's files
// go to and a thread empties, and CleanStale for a crashed emulator's leftovers.
#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <filesystem>
#include <thread>

#include <nlohmann/json.hpp>

#include "emulator/hosts/host_checks.h"
#include "emulator/hosts/host_network.h"
#include "emulator/hosts/init_spawner.h"
#include "emulator/hosts/namespace_hosts_internal.h"
#include "emulator/hosts/system_programs.h"
#include "emulator/hosts/worker_disk.h"
#include "emulator/hosts/worker_document.h"
#include "util/file.h"
#include "util/log.h"
#include "util/strings.h"

namespace tpufleet::emulator {

using hosts::Errno;
using hosts::HostNetwork;
using hosts::InitSpawner;
using hosts::kWorkerProgram;

namespace {
namespace fs = std::filesystem;
}  // namespace

NamespaceHosts::NamespaceHosts(NamespaceHostsOptions options, Clock& clock, int lock_fd)
    : options_(std::move(options)),
      clock_(clock),
      lock_fd_(lock_fd),
      spawner_(std::make_unique<InitSpawner>()) {}

NamespaceHosts::~NamespaceHosts() {
  Shutdown();
  {
    std::lock_guard<std::mutex> l(trash_mu_);
    trash_stop_ = true;
  }
  trash_cv_.notify_all();
  if (trash_thread_.joinable()) {
    trash_thread_.join();
  }
  spawner_.reset();
  ::close(lock_fd_);
}

Status NamespaceHosts::MoveToTrash(const std::string& dir, const std::string& id) {
  std::error_code ec;
  if (dir.empty() || !fs::exists(dir, ec)) {
    return Status::Ok();
  }
  std::string to;
  {
    std::lock_guard<std::mutex> l(trash_mu_);
    to = options_.state_dir + "/trash/" + id + "." + std::to_string(::getpid()) + "." +
         std::to_string(trash_serial_++);
  }
  if (::rename(dir.c_str(), to.c_str()) != 0) {
    return InternalError(Errno("moving " + dir + " to the trash"));
  }
  trash_cv_.notify_all();
  return Status::Ok();
}

void NamespaceHosts::EmptyTrash() {
  const fs::path trash = options_.state_dir + "/trash";
  std::unique_lock<std::mutex> l(trash_mu_);
  while (!trash_stop_) {
    std::error_code ec;
    std::vector<fs::path> entries;
    for (const std::string& name : ListDirectory(trash.string())) {
      entries.push_back(trash / name);
    }
    if (entries.empty()) {
      trash_cv_.wait(l);
      continue;
    }
    l.unlock();
    for (const fs::path& entry : entries) {
      // Worker by worker, so a stop request waits for one worker's files at most.
      std::vector<fs::path> parts;
      for (const std::string& name : ListDirectory(entry.string())) {
        parts.push_back(entry / name);
      }
      for (const fs::path& part : parts) {
        {
          std::lock_guard<std::mutex> stop(trash_mu_);
          if (trash_stop_) {
            return;
          }
        }
        fs::remove_all(part, ec);
      }
      fs::remove_all(entry, ec);
    }
    l.lock();
  }
}

namespace {

// The program installed beside the running one; its bare name (found on PATH) when the
// kernel does not say where this one is.
std::string BesideUs(const char* program) {
  Result<std::string> path = BesideThisProgram(program);
  return path.ok() ? *path : program;
}

}  // namespace

std::string NamespaceHosts::DefaultWorkerBinary() {
  return BesideUs(kWorkerProgram);
}

std::string NamespaceHosts::DefaultStandinBinary() {
  return BesideUs(hosts::kStandinProgram);
}

Status NamespaceHosts::CheckSupport() {
  return hosts::CheckMachineSupport();
}

Status NamespaceHosts::CleanStale(const std::string& state_dir) {
  std::string dir = fs::path(state_dir).lexically_normal().string();
  while (dir.size() > 1 && dir.back() == '/') {
    dir.pop_back();
  }
  std::error_code ec;
  if (fs::is_directory(dir, ec)) {
    dir = fs::canonical(dir, ec).string();
    TPUFLEET_TRY(hosts::CheckStateDirOwner(dir));
    TPUFLEET_ASSIGN_OR_RETURN(int fd, hosts::LockStateDir(dir));
    hosts::KillStaleInits(dir);
    ::close(fd);
  }
  return HostNetwork::CleanStaleSlots();
}

Result<std::unique_ptr<NamespaceHosts>> NamespaceHosts::Create(const NamespaceHostsOptions& o,
                                                               Clock& clock) {
  NamespaceHostsOptions options = o;
  std::string dir = fs::path(options.state_dir).lexically_normal().string();
  while (dir.size() > 1 && dir.back() == '/') {
    dir.pop_back();
  }
  TPUFLEET_TRY(hosts::ValidateStateDir(dir));
  TPUFLEET_TRY(hosts::CheckStateDirOwner(dir));
  TPUFLEET_TRY(CheckSupport());
  if (::access(options.worker_binary.c_str(), X_OK) != 0 || options.worker_binary[0] != '/') {
    return FailedPreconditionError(
        "the worker program " + options.worker_binary +
        " is missing or not executable (build tpufleet-emulator-worker)");
  }
  if (!options.standin_binary.empty() &&
      (options.standin_binary[0] != '/' || ::access(options.standin_binary.c_str(), X_OK) != 0)) {
    return FailedPreconditionError("the stand-in program " + options.standin_binary +
                                   " is missing or not executable (build tpu-standin)");
  }
  std::error_code ec;
  fs::create_directories(dir + "/nodes", ec);
  if (ec) {
    return FailedPreconditionError(dir + "/nodes: " + ec.message());
  }
  ::chmod(dir.c_str(), 0700);
  dir = fs::canonical(dir, ec).string();
  TPUFLEET_TRY(hosts::ValidateStateDir(dir));  // again, with symlinks resolved
  TPUFLEET_TRY(hosts::CheckStateDirOwner(dir));
  options.state_dir = dir;
  TPUFLEET_ASSIGN_OR_RETURN(int lock_fd, hosts::LockStateDir(dir));
  hosts::KillStaleInits(dir);
  if (Status s = HostNetwork::CleanStaleSlots(); !s.ok()) {
    ::close(lock_fd);
    return s;
  }
  fs::create_directories(dir + "/trash", ec);
  if (!options.bucket_dir.empty()) {
    options.bucket_dir = fs::path(options.bucket_dir).lexically_normal().string();
    if (Status s = hosts::MakeBucketDir(options.bucket_dir); !s.ok()) {
      ::close(lock_fd);
      return s;
    }
  }
  if (!options.hidden_dir.empty()) {
    // As the workers' mounts will find it, links resolved (like the state dir above).
    fs::path hidden = fs::canonical(options.hidden_dir, ec);
    if (ec || !hidden.is_absolute()) {
      ::close(lock_fd);
      return FailedPreconditionError("worker hosts: the directory to hide from the workers, " +
                                     options.hidden_dir + ": " + ec.message());
    }
    options.hidden_dir = hidden.string();
  }
  std::unique_ptr<NamespaceHosts> h(new NamespaceHosts(options, clock, lock_fd));
  TPUFLEET_TRY(h->spawner_->status());
  h->LoadNodeRecords();
  NamespaceHosts* self = h.get();
  h->trash_thread_ = std::thread([self] { self->EmptyTrash(); });
  return h;
}

void NamespaceHosts::LoadNodeRecords() {
  const std::string nodes = options_.state_dir + "/nodes";
  for (const std::string& name : ListDirectory(nodes)) {
    Result<std::string> text = ReadFile(nodes + "/" + name + "/node.json");
    if (!text.ok()) {
      continue;
    }
    nlohmann::json j = nlohmann::json::parse(*text, nullptr, false);
    if (j.is_discarded() || !j.is_object()) {
      continue;
    }
    auto node = std::make_shared<Node>();
    node->spec.name = j.value("name", "");
    node->spec.id = j.value("id", "");
    node->spec.accelerator_type = j.value("accelerator_type", "");
    node->spec.workers = j.value("workers", 0);
    if (!hosts::ValidateNodeSpec(node->spec).ok() || name != node->spec.id) {
      continue;
    }
    node->dir = nodes + "/" + name;
    nodes_[node->spec.name] = node;
  }
}

std::shared_ptr<NamespaceHosts::Node> NamespaceHosts::FindNode(const std::string& name) const {
  std::lock_guard<std::mutex> l(mu_);
  auto it = nodes_.find(name);
  return it == nodes_.end() ? nullptr : it->second;
}

}  // namespace tpufleet::emulator
