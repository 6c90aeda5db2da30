#include "emulator/hosts/namespace_hosts.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
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
#include "emulator/hosts/worker_setup.h"
#include "util/file.h"
#include "util/log.h"
#include "util/strings.h"
#include "util/unique_fd.h"

namespace tpufleet::emulator {

using hosts::Errno;
using hosts::FormatIpv4;
using hosts::HostNetwork;
using hosts::InitSpawner;
using hosts::kHostPollInterval;
using hosts::kProbeAttempt;
using hosts::kWorkerProgram;
using hosts::Reaped;
using std::chrono::milliseconds;

namespace {

namespace fs = std::filesystem;

// The worker program's stderr, on its disk.
constexpr const char* kWorkerLog = "worker.log";

// The last `lines` lines of the worker's log, on the worker's disk (worker_disk.h).
std::string LogTail(const std::string& disk, size_t lines) {
  Result<std::string> text = hosts::ReadDiskFile(disk, kWorkerLog, hosts::kMaxDiskRead, true);
  if (!text.ok()) {
    return "";
  }
  std::vector<std::string> all = Split(Trim(*text), '\n');
  size_t from = all.size() > lines ? all.size() - lines : 0;
  std::vector<std::string> tail(all.begin() + static_cast<long>(from), all.end());
  return Join(tail, " | ");
}

}  // namespace

std::string NamespaceHosts::bridge() const {
  std::lock_guard<std::mutex> l(mu_);
  return network_ ? network_->bridge() : "";
}

std::vector<pid_t> NamespaceHosts::InitPids(const std::string& name) const {
  std::vector<pid_t> out;
  std::shared_ptr<Node> node = FindNode(name);
  if (node == nullptr) {
    return out;
  }
  std::lock_guard<std::mutex> l(node->op_mu);
  for (const Worker& w : node->workers) {
    out.push_back(w.pid);
  }
  return out;
}

std::vector<WorkerInfo> NamespaceHosts::Infos(const Node& node) const {
  std::vector<WorkerInfo> out;
  for (const Worker& w : node.workers) {
    out.push_back({FormatIpv4(w.address), w.hostname, w.host_key});
  }
  return out;
}

Status NamespaceHosts::WriteDocuments(Node& node) {
  ++node.version;
  hosts::WorkerDocumentInput in;
  in.version = node.version;
  in.node_name = node.spec.name;
  in.node_id = node.spec.id;
  in.accelerator_type = node.spec.accelerator_type;
  in.accelerator_family = node.spec.family;
  in.chips_per_worker = node.spec.chips_per_worker;
  in.metadata = node.spec.metadata;
  in.preempted = node.preempted;
  in.maintenance = node.maintenance;
  for (const NodeDisk& d : node.disks) {
    in.disks.push_back({d.device, d.spec.name, major(d.loop.device()), minor(d.loop.device()),
                        d.spec.read_only});
  }
  {
    std::lock_guard<std::mutex> l(mu_);
    if (network_ == nullptr) {
      return FailedPreconditionError("the worker hosts are shut down");
    }
    in.project_metadata = project_metadata_[ProjectOfNode(node.spec.name)];
    in.prefix_length = network_->pool().prefix_length();
    in.gateway = FormatIpv4(network_->pool().gateway());
  }
  for (const Worker& w : node.workers) {
    in.workers.push_back({w.hostname, FormatIpv4(w.address)});
  }
  for (size_t i = 0; i < node.workers.size(); ++i) {
    in.index = static_cast<int>(i);
    in.removed_devices = node.workers[i].removed_devices;
    TPUFLEET_TRY(hosts::WriteDiskFile(node.workers[i].dir, "meta", hosts::kDocumentName,
                                      hosts::BuildWorkerDocument(in)));
  }
  return Status::Ok();
}

void NamespaceHosts::SignalReload(Node& node) {
  for (Worker& w : node.workers) {
    if (w.pid > 0) {
      ::kill(w.pid, SIGHUP);  // the init rereads its document (worker_init.h)
    }
  }
}

Status NamespaceHosts::WaitApplied(Node& node) {
  auto deadline = clock_.MonotonicNow() + kApplyTimeout;
  while (true) {
    std::vector<std::string> late;
    for (size_t i = 0; i < node.workers.size(); ++i) {
      Worker& w = node.workers[i];
      if (w.pid < 0) {
        continue;
      }
      Result<std::string> applied = hosts::ReadDiskFile(w.dir, "meta/applied");
      long long v = 0;
      if (applied.ok() && ParseInt(Trim(*applied), &v) && v >= node.version) {
        continue;
      }
      if (Reaped(w.pid)) {
        w.pid = -1;
        return UnavailableError("worker " + std::to_string(i) + " of " + node.spec.name +
                                " is down: " + LogTail(w.dir, 3));
      }
      late.push_back(std::to_string(i));
    }
    if (late.empty()) {
      return Status::Ok();
    }
    if (clock_.MonotonicNow() >= deadline) {
      return TimeoutError("workers " + Join(late, ",") + " of " + node.spec.name +
                          " did not load the new metadata in time");
    }
    clock_.SleepFor(kHostPollInterval);
  }
}

void NamespaceHosts::KillWorkers(Node& node) {
  for (Worker& w : node.workers) {
    if (w.pid > 0) {
      ::kill(w.pid, SIGKILL);
      int status = 0;
      while (::waitpid(w.pid, &status, 0) < 0 && errno == EINTR) {
      }
    }
    w.pid = -1;
    w.veth.clear();
  }
  node.running = false;
  node.disks.clear();  // the loop devices go once the workers' mounts have gone
}

Status NamespaceHosts::HaltLocked(Node& node) {
  std::vector<Worker*> live;
  for (Worker& w : node.workers) {
    if (w.pid > 0) {
      ::kill(w.pid, SIGTERM);
      live.push_back(&w);
    }
  }
  auto deadline = clock_.MonotonicNow() + kHaltTimeout;
  while (!live.empty()) {
    std::vector<Worker*> still;
    for (Worker* w : live) {
      if (Reaped(w->pid)) {
        w->pid = -1;
        w->veth.clear();
      } else {
        still.push_back(w);
      }
    }
    live = std::move(still);
    if (live.empty() || clock_.MonotonicNow() >= deadline) {
      break;
    }
    clock_.SleepFor(kHostPollInterval);
  }
  KillWorkers(node);  // whatever ignored SIGTERM
  return Status::Ok();
}

Status NamespaceHosts::BootWorkers(Node& node) {
  std::shared_ptr<HostNetwork> net;  // kept alive even if Shutdown runs meanwhile
  {
    std::lock_guard<std::mutex> l(mu_);
    net = network_;
  }
  if (net == nullptr) {
    return FailedPreconditionError("the worker hosts are shut down");
  }
  const size_t n = node.workers.size();
  for (size_t i = 0; i < n; ++i) {
    Worker& w = node.workers[i];
    std::error_code ec;
    fs::create_directories(w.dir, ec);
    if (ec) {
      return InternalError(w.dir + ": " + ec.message());
    }
    // The worker is down: its disk is the machine's to repair (worker_disk.h).
    TPUFLEET_TRY(hosts::RepairDiskDir(w.dir, "meta"));
    ::unlink((w.dir + "/meta/applied").c_str());  // meta is a real directory now
  }
  std::vector<NodeDisk> none;
  TPUFLEET_TRY(AttachNodeDisks(&node.disks, node.spec.data_disks, &none));
  TPUFLEET_TRY(WriteDocuments(node));

  // Pipes: status (init → machine), go (machine → init; a socket pair, so that a worker
  // that died at boot is an error to send to, not a SIGPIPE). All close-on-exec here.
  std::vector<UniqueFd> status_r(n), status_w(n), go_r(n), go_w(n), logs(n);
  std::vector<InitSpawner::Request> requests(n);
  for (size_t i = 0; i < n; ++i) {
    int p[2];
    int q[2];
    if (::pipe2(p, O_CLOEXEC) != 0 ||
        ::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, q) != 0) {
      return InternalError(Errno("pipe"));
    }
    status_r[i] = UniqueFd(p[0]);
    status_w[i] = UniqueFd(p[1]);
    go_r[i] = UniqueFd(q[0]);
    go_w[i] = UniqueFd(q[1]);
    TPUFLEET_ASSIGN_OR_RETURN(logs[i], hosts::CreateDiskLog(node.workers[i].dir, kWorkerLog));
    requests[i].binary = options_.worker_binary;
    requests[i].argv = {kWorkerProgram, "--disk=" + node.workers[i].dir,
                        "--state=" + options_.state_dir};
    if (!options_.standin_binary.empty()) {
      requests[i].argv.push_back("--standin=" + options_.standin_binary);
    }
    if (!options_.bucket_dir.empty()) {
      requests[i].argv.push_back("--bucket=" + options_.bucket_dir);
    }
    if (!options_.hidden_dir.empty()) {
      requests[i].argv.push_back("--hide=" + options_.hidden_dir);
    }
    requests[i].log_fd = logs[i].get();
    requests[i].status_fd = status_w[i].get();
    requests[i].go_fd = go_r[i].get();
  }
  std::vector<InitSpawner::Started> started = spawner_->Spawn(requests);
  Status spawn_error;
  for (size_t i = 0; i < n; ++i) {
    if (started[i].pid > 0) {
      node.workers[i].pid = started[i].pid;
    } else if (spawn_error.ok()) {
      spawn_error = started[i].error;
    }
    status_w[i].Reset();
    go_r[i].Reset();
    logs[i].Reset();
  }
  TPUFLEET_TRY(spawn_error);

  std::vector<HostNetwork::Veth> veths;
  for (Worker& w : node.workers) {
    w.veth = net->NewVethName();
    veths.push_back({w.veth, w.pid, !w.cut});
  }
  TPUFLEET_TRY(net->AddVeths(veths));
  for (size_t i = 0; i < n; ++i) {
    char go = 'g';
    if (::send(go_w[i].get(), &go, 1, MSG_NOSIGNAL) != 1) {
      return InternalError(Errno("starting worker " + std::to_string(i)));
    }
    go_w[i].Reset();
  }

  // Each init answers READY <host key> once its sshd listens, or ERROR <why>.
  auto deadline =
      clock_.MonotonicNow() + kBootTimeoutBase + kBootTimeoutPerWorker * static_cast<int64_t>(n);
  std::vector<std::string> lines(n);
  std::vector<bool> done(n, false);
  size_t left = n;
  while (left > 0) {
    if (clock_.MonotonicNow() >= deadline) {
      std::vector<std::string> late;
      for (size_t i = 0; i < n; ++i) {
        if (!done[i]) {
          late.push_back(std::to_string(i));
        }
      }
      return TimeoutError("workers " + Join(late, ",") + " of " + node.spec.name +
                          " did not come up in time");
    }
    std::vector<pollfd> fds;
    std::vector<size_t> index;
    for (size_t i = 0; i < n; ++i) {
      if (!done[i]) {
        fds.push_back({status_r[i].get(), POLLIN, 0});
        index.push_back(i);
      }
    }
    if (::poll(fds.data(), fds.size(), static_cast<int>(kProbeAttempt.count())) < 0 &&
        errno != EINTR) {
      return InternalError(Errno("poll"));
    }
    for (size_t k = 0; k < fds.size(); ++k) {
      if (fds[k].revents == 0) {
        continue;
      }
      size_t i = index[k];
      char buf[1024];
      ssize_t r = ::read(status_r[i].get(), buf, sizeof buf);
      if (r > 0) {
        lines[i].append(buf, static_cast<size_t>(r));
      }
      size_t nl = lines[i].find('\n');
      if (nl == std::string::npos && r > 0) {
        continue;
      }
      std::string line = lines[i].substr(0, nl);
      Worker& w = node.workers[i];
      if (StartsWith(line, "READY ")) {
        w.host_key = line.substr(6);
        done[i] = true;
        --left;
        continue;
      }
      std::string why = StartsWith(line, "ERROR ") ? line.substr(6) : "its init exited";
      std::string tail = LogTail(w.dir, 3);
      return UnavailableError("worker " + std::to_string(i) + " of " + node.spec.name +
                              " failed to boot: " + why + (tail.empty() ? "" : " [" + tail + "]"));
    }
  }

  std::vector<std::string> reachable;
  for (const Worker& w : node.workers) {
    if (!w.cut) {
      reachable.push_back(FormatIpv4(w.address));
    }
  }
  return hosts::WaitForSshdsListening(reachable, clock_, deadline);
}

Result<std::vector<WorkerInfo>> NamespaceHosts::Boot(const NodeHostSpec& spec, bool new_addresses) {
  TPUFLEET_TRY(hosts::ValidateNodeSpec(spec));
  TPUFLEET_TRY(hosts::ValidateDataDisks(spec.data_disks));
  std::shared_ptr<Node> node;
  {
    // One critical section for the check and the insertion, so Shutdown either sees
    // this node (and halts it after this Boot) or this Boot sees Shutdown.
    std::lock_guard<std::mutex> l(mu_);
    if (shut_down_) {
      return FailedPreconditionError("the worker hosts are shut down");
    }
    if (network_ == nullptr) {
      TPUFLEET_ASSIGN_OR_RETURN(std::unique_ptr<HostNetwork> net, HostNetwork::Claim());
      network_ = std::move(net);
    }
    std::shared_ptr<Node>& slot = nodes_[spec.name];
    if (slot == nullptr) {
      slot = std::make_shared<Node>();
      slot->spec = spec;
    }
    node = slot;
  }
  std::lock_guard<std::mutex> op(node->op_mu);
  std::string dir = options_.state_dir + "/nodes/" + spec.id;
  if (!node->dir.empty() && node->dir != dir) {
    // A node of the same name but another id (deleted and made again while this or an
    // earlier emulator was down): the old one's workers and disk go.
    TPUFLEET_TRY(HaltLocked(*node));
    TPUFLEET_TRY(MoveToTrash(node->dir, node->spec.id));
    node->workers.clear();
  }
  node->dir = dir;
  if (node->running) {
    bool alive = node->workers.size() == static_cast<size_t>(spec.workers);
    for (const Worker& w : node->workers) {
      alive = alive && w.pid > 0 && !Reaped(w.pid);
    }
    if (alive && !new_addresses) {
      return Infos(*node);
    }
    TPUFLEET_TRY(HaltLocked(*node));
  }
  node->spec = spec;
  node->preempted = false;
  node->maintenance = false;
  {
    std::lock_guard<std::mutex> l(mu_);
    if (network_ == nullptr) {
      return FailedPreconditionError("the worker hosts are shut down");
    }
    hosts::AddressPool& pool = network_->pool();
    while (node->workers.size() > static_cast<size_t>(spec.workers)) {
      pool.Release(node->workers.back().address);
      node->workers.pop_back();
    }
    node->workers.resize(static_cast<size_t>(spec.workers));
    std::vector<uint32_t> old;
    for (size_t i = 0; i < node->workers.size(); ++i) {
      Worker& w = node->workers[i];
      w.dir = dir + "/w" + std::to_string(i);
      w.hostname = hosts::WorkerHostname(spec.id, static_cast<int>(i));
      if (w.address == 0 || new_addresses) {
        TPUFLEET_ASSIGN_OR_RETURN(uint32_t a, pool.Allocate());
        if (w.address != 0) {
          old.push_back(w.address);
        }
        w.address = a;
      }
    }
    for (uint32_t a : old) {
      pool.Release(a);
    }
  }
  std::error_code ec;
  fs::create_directories(dir, ec);
  nlohmann::json record = {{"name", spec.name},
                           {"id", spec.id},
                           {"accelerator_type", spec.accelerator_type},
                           {"workers", spec.workers}};
  TPUFLEET_TRY(WriteFileAtomic(dir + "/node.json", record.dump(2) + "\n", 0600));
  Status s = BootWorkers(*node);
  if (!s.ok()) {
    KillWorkers(*node);
    return s;
  }
  node->running = true;
  return Infos(*node);
}

Status NamespaceHosts::SetMetadata(const std::string& name,
                                   const std::map<std::string, std::string>& metadata) {
  std::shared_ptr<Node> node = FindNode(name);
  if (node == nullptr) {
    return NotFoundError("worker hosts: no node " + name);
  }
  std::lock_guard<std::mutex> op(node->op_mu);
  node->spec.metadata = metadata;
  if (!node->running) {
    return Status::Ok();  // the next Boot writes it
  }
  TPUFLEET_TRY(WriteDocuments(*node));
  SignalReload(*node);
  return WaitApplied(*node);
}

Status NamespaceHosts::Notify(const std::string& name, HostEvent event) {
  std::shared_ptr<Node> node = FindNode(name);
  if (node == nullptr) {
    return NotFoundError("worker hosts: no node " + name);
  }
  std::lock_guard<std::mutex> op(node->op_mu);
  if (event == HostEvent::kPreemptionNotice) {
    node->preempted = true;
  } else {
    node->maintenance = true;
  }
  if (!node->running) {
    return Status::Ok();
  }
  TPUFLEET_TRY(WriteDocuments(*node));
  SignalReload(*node);
  return WaitApplied(*node);
}

Status NamespaceHosts::Halt(const std::string& name) {
  std::shared_ptr<Node> node = FindNode(name);
  if (node == nullptr) {
    return Status::Ok();  // never booted: nothing runs
  }
  std::lock_guard<std::mutex> op(node->op_mu);
  return HaltLocked(*node);
}

Result<std::shared_ptr<NamespaceHosts::Node>> NamespaceHosts::LockNodeWithWorker(
    const std::string& name, int worker, std::unique_lock<std::mutex>* op) const {
  std::shared_ptr<Node> node = FindNode(name);
  if (node == nullptr) {
    return NotFoundError("worker hosts: no node " + name);
  }
  *op = std::unique_lock<std::mutex>(node->op_mu);
  if (worker < 0 || static_cast<size_t>(worker) >= node->workers.size()) {
    return InvalidArgumentError("worker hosts: " + name + " has no worker " +
                                std::to_string(worker));
  }
  return node;
}

Status NamespaceHosts::SetCutOff(const std::string& name, int worker, bool cut) {
  std::unique_lock<std::mutex> op;
  TPUFLEET_ASSIGN_OR_RETURN(std::shared_ptr<Node> node, LockNodeWithWorker(name, worker, &op));
  Worker& w = node->workers[static_cast<size_t>(worker)];
  w.cut = cut;
  if (!node->running || w.veth.empty()) {
    return Status::Ok();  // applied at the next Boot
  }
  std::shared_ptr<HostNetwork> net;
  {
    std::lock_guard<std::mutex> l(mu_);
    net = network_;
  }
  if (net == nullptr) {
    return FailedPreconditionError("the worker hosts are shut down");
  }
  return net->SetLinkUp(w.veth, !cut);
}

Status NamespaceHosts::SetDeviceRemoved(const std::string& name, int worker, int device,
                                        bool removed) {
  std::unique_lock<std::mutex> op;
  TPUFLEET_ASSIGN_OR_RETURN(std::shared_ptr<Node> node, LockNodeWithWorker(name, worker, &op));
  if (device < 0 || device >= node->spec.chips_per_worker) {
    return InvalidArgumentError("worker hosts: the workers of " + name + " have no device " +
                                std::to_string(device));
  }
  std::set<int>& gone = node->workers[static_cast<size_t>(worker)].removed_devices;
  if (removed) {
    gone.insert(device);
  } else {
    gone.erase(device);
  }
  if (!node->running) {
    return Status::Ok();  // the next Boot writes it
  }
  TPUFLEET_TRY(WriteDocuments(*node));
  SignalReload(*node);
  return WaitApplied(*node);
}

Status NamespaceHosts::Destroy(const std::string& name) {
  std::shared_ptr<Node> node = FindNode(name);
  if (node == nullptr) {
    return Status::Ok();
  }
  std::lock_guard<std::mutex> op(node->op_mu);
  TPUFLEET_TRY(HaltLocked(*node));
  {
    std::lock_guard<std::mutex> l(mu_);
    if (network_ != nullptr) {
      for (const Worker& w : node->workers) {
        network_->pool().Release(w.address);
      }
    }
    auto it = nodes_.find(name);
    if (it != nodes_.end() && it->second == node) {
      nodes_.erase(it);
    }
  }
  node->workers.clear();
  return MoveToTrash(node->dir, node->spec.id);
}

void NamespaceHosts::Shutdown() {
  std::vector<std::shared_ptr<Node>> all;
  {
    std::lock_guard<std::mutex> l(mu_);
    if (shut_down_) {
      return;
    }
    shut_down_ = true;
    for (auto& [name, node] : nodes_) {
      all.push_back(node);
    }
  }
  for (auto& node : all) {
    std::lock_guard<std::mutex> op(node->op_mu);
    [[maybe_unused]] Status s = HaltLocked(*node);
  }
  std::shared_ptr<HostNetwork> net;
  {
    std::lock_guard<std::mutex> l(mu_);
    net = std::move(network_);
  }
  net.reset();  // deletes the bridge and frees the slot (once no Boot holds it)
}

}  // namespace tpufleet::emulator
