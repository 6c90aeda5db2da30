// The init of a worker (worker_init.h) as a class, shared by worker_init.cc (boot, the
// loop, documents, children) and worker_serve.cc (the metadata server's connections).
// Not for other callers.
//
// Thread-safety: the single-threaded init.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "emulator/hosts/accelerators.h"
#include "emulator/hosts/boot_units.h"
#include "emulator/hosts/guest_agent.h"
#include "emulator/hosts/metadata_server.h"
#include "emulator/hosts/worker_disks.h"
#include "emulator/hosts/worker_document.h"
#include "emulator/hosts/worker_setup.h"

namespace tpufleet::emulator::hosts::init {

using Mono = std::chrono::steady_clock;

// Metadata clients are the worker's own processes; a few hundred connections is plenty.
inline constexpr size_t kMaxConnections = 512;
// Request heads are a few hundred bytes; more is not a metadata client.
inline constexpr size_t kMaxRequestHead = 16 * 1024;
// A keep-alive metadata connection idle this long is closed (GCE's server does too).
inline constexpr std::chrono::seconds kIdleTimeout{60};

// One metadata client connection.
struct Conn {
  int fd = -1;
  std::string in;
  std::string out;
  bool close_after_write = false;
  bool parked = false;  // a long-poll waiting for a change
  HttpRequest request;
  std::string wait_etag;
  Mono::time_point wait_deadline{};
  Mono::time_point last_active{};
};

class Worker {
 public:
  explicit Worker(WorkerPaths paths);

  [[noreturn]] void Run();

 private:
  void Boot();
  Result<std::string> ReadDocument(WorkerDocument* doc);
  void ApplyDocument(const std::string& text, const WorkerDocument& doc);
  void Reload();
  void WriteApplied();
  void Reap();
  void StartUnits();
  void BeginShutdown();
  void Accept();
  void ServeInput(Conn& c);
  void Flush(Conn& c);
  void Send(Conn& c, const HttpResponse& r, bool head_only);
  // Answers 400 to a request head that is too long or malformed, and closes after it.
  void SendBadRequest(Conn& c);
  void ExpireWaits(Mono::time_point now);

  WorkerPaths paths_;
  MetadataServer server_;
  WorkerAccelerators accelerators_;
  WorkerDisks disks_;
  UnitSupervisor units_;
  GuestAgent agent_;
  WorkerDocument doc_;
  std::string sshd_path_;
  pid_t sshd_pid_ = -1;
  Mono::time_point sshd_restart_at_{};
  bool shutting_down_ = false;
  Mono::time_point shutdown_deadline_{};
  int signal_fd_ = -1;
  int listen_fd_ = -1;
  std::vector<std::unique_ptr<Conn>> conns_;
};

}  // namespace tpufleet::emulator::hosts::init
