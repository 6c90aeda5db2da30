// Copy: files and directories to every worker the targets name, and back.
//
//   cp ./src pod:~/code            a directory to every worker of pod (tar, unpacked there)
//   cp data.bin all:/tmp/          a file into a directory on every worker
//   cp pod:3:~/out.zarr .          from one worker
//   cp pod:~/log.txt ./logs        from every worker of pod into ./logs/pod-w0/, …
//
// A remote side is TARGET:PATH, TARGET as exec takes it (all, NODE, NODE:3, NODE:1-3,5,
// key=value); a local path with a ':' in it is written ./like:this. PATH ~ and ~/x are
// the login's home; relative paths are too.
//
// Uploads stream over the fan-out engine's exec channels (`cat` into a temporary name,
// size checked, then renamed, so a worker never sees half a file under the real name).
// A large file to many workers goes through a relay chain instead, so that the sender's
// link and crypto carry it once, not once per worker: the first worker gets it over
// SSH, and each worker writes it and forwards it to the next over TCP (a short Python
// program on the worker; hops accept only earlier workers of the chain). Before the
// chain is made, one short command on every worker (kRelayProbeCommand) finds who can
// run a hop: a worker that does not answer costs its connect timeout there, once, and
// is reported failed; no chain goes through it and no direct send waits for it again. Each worker reports the SHA-256 of what it wrote; any worker whose
// digest or size differs from the local file's, or that the chain missed, gets the
// file again directly over SSH. The chain is authenticated: each copy makes a random key
// that the hops get on stdin (never in argv), every connection proves it before data
// flows, and each hop checks the source's SHA-256 before its file takes the real name;
// whatever fails that is reported as a security event (CopyReport::security_events).
//
// Thread-safety: as World's members.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "control/targets.h"
#include "control/world.h"

namespace tpufleet {

/// A file this large or larger, to at least kRelayMinWorkers workers, is relayed: below
/// it, connecting the chain costs more than sending it N times.
inline constexpr uint64_t kRelayMinBytes = 16ull << 20;
inline constexpr size_t kRelayMinWorkers = 4;
/// How long a relay hop waits for the next worker's listener before skipping it.
inline constexpr std::chrono::seconds kRelayHopWait{15};
/// How long a hop listens for an earlier worker to connect and prove the key: a hop
/// wait for the worker before it, and time for the chain's start behind that.
inline constexpr std::chrono::seconds kRelayAcceptWait{45};
/// A connection (either end) that has not proved the copy's key in this long is closed
/// and reported: the honest handshake is two round trips between running hops.
inline constexpr std::chrono::seconds kRelayHandshakeTimeout{10};
/// Once data flows, a hop whose upstream sends nothing for this long gives up (and one
/// whose downstream takes nothing drops it); the direct send then covers those workers.
inline constexpr std::chrono::seconds kRelayIoTimeout{60};
/// Every hop ends by kRelayDeadlineBase plus the size at kRelayMinRate, whatever its
/// peers do: slower than that, the direct send is the better way anyway.
inline constexpr std::chrono::seconds kRelayDeadlineBase{120};
inline constexpr uint64_t kRelayMinRate = 1ull << 20;  // bytes per second
/// Run on every worker before a chain is made: a worker where it succeeds can be a hop
/// (it answers over SSH and has python3); one that answers without python3 gets the
/// file directly; one that does not answer is failed, without being tried again.
inline constexpr const char* kRelayProbeCommand = "command -v python3 >/dev/null";
/// The per-copy key each hop gets on stdin: 32 bytes from the kernel's CSPRNG.
inline constexpr size_t kRelayKeyBytes = 32;

/// "pod:3:~/x" -> {"pod:3", "~/x"}; nullopt for a local path ("./a:b", "/x", "file").
struct RemotePath {
  std::string target;  // a ResolveTargets word
  std::string path;
};
std::optional<RemotePath> ParseRemotePath(const std::string& word);

struct CopyRequest {
  std::vector<std::string> sources;  // local paths (upload) or one TARGET:PATH (download)
  std::string destination;           // TARGET:PATH (upload) or a local path (download)
  bool relay = true;                 // allow the relay chain for large files
  std::chrono::milliseconds connect_timeout{10'000};
};

/// What happened on one worker.
struct CopyOutcome {
  WorkerTarget worker;
  bool ok = false;
  std::string how;      // "relay", "ssh"
  std::string message;  // why it failed
};

struct CopyReport {
  std::vector<CopyOutcome> workers;
  bool download = false;
  uint64_t bytes = 0;  // sent to each worker (uploads)
  /// "pod/w1: unauthenticated-connector 10.0.0.9: …": relay connections that did not
  /// prove the copy's key, and data whose SHA-256 was not the source's. Each is a
  /// security event: the workers concerned got the file directly, but ok() is false.
  std::vector<std::string> security_events;
  bool ok() const;
};

/// Does the copy. Errors for what stops it before anything moves (bad paths, unknown
/// targets, an unreadable source); per-worker failures are in the report.
Result<CopyReport> Copy(World& world, const CopyRequest& request);

}  // namespace tpufleet
