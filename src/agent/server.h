// Server: serve's Unix socket and the protocol's ops on it (docs/agent-protocol.md).
//
// One thread, one EventLoop: the listening socket, every connection, the job table's
// inotify and keepers' pidfds are all descriptors of the same loop. A connection carries
// one request: its line is read (at most kMaxAgentLineBytes), the caller is who
// SO_PEERCRED says, and the answer is written as it becomes known: at once for most
// ops; when the job has left `starting` for job.start, when it has ended for job.cancel;
// as the job writes and changes for job.logs --follow and job.watch, and as the notice
// changes for notice.watch (which never ends by itself). Then the connection is closed.
// A client that goes away ends its stream, never its job.
//
// Output waiting for a slow client is bounded (kMaxQueuedOutput): a log stream reads
// the files only while the client keeps up, so a follower costs a few descriptors and at
// most that much memory, whatever the job writes; a notice watcher that lets that much
// pile up is closed.
//
// Thread-safety: none; the loop's thread only.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>

#include "agent/host/host_paths.h"
#include "agent/host/metadata_guard.h"
#include "agent/job_table.h"
#include "agent/logs.h"
#include "agent/notice_watcher.h"
#include "agent/sampler/sampler.h"
#include "api/agent.h"
#include "api/metrics.h"
#include "util/event_loop.h"
#include "util/status.h"
#include "util/unique_fd.h"

namespace tpufleet::agent {

/// Connections served at once; one more is answered UNAVAILABLE and closed. Every
/// worker's CLI holds a few (a run's follower, a gang watcher, a jobs listing).
inline constexpr size_t kMaxConnections = 128;
/// Output queued for one client before its log stream stops reading the files.
inline constexpr size_t kMaxQueuedOutput = size_t{256} << 10;
/// How long job.start waits for the keeper to start the command before it answers with
/// the job as it is (starting).
inline constexpr std::chrono::seconds kStartAnswerWait{10};
/// How long job.cancel waits past the grace for the job to end before it answers.
inline constexpr std::chrono::seconds kCancelAnswerExtra{5};
/// The grace (TERM to KILL) of the jobs of an account accounts.apply removes: as long as
/// the host gives the account's other processes (host::kStopGrace).
inline constexpr int kRemovedJobGraceSeconds = 2;

/// What a non-root caller's metrics answer keeps of another user's (docs/security.md):
/// the jobs of `own` (the caller's job ids) alone in the sample's jobs; a chip holder
/// that is not theirs (of another's job, or of no job and not run by `user`) keeps its
/// pid and user, which `ps` shows anyone, but not its command line or job; the window's
/// job, when not theirs, is left out with its figures.
void KeepOwnJobs(MetricsReport& report, const std::set<std::string>& own,
                 const std::string& user);

/// What hello says of this agent (the rest it reads at each call).
struct AgentIdentity {
  std::string version;
  std::string binary_sha256;
};

class Server {
 public:
  /// `sampler` (null: the metrics op answers UNAVAILABLE) is told the running jobs as
  /// they change, and answers the metrics op; `notices` answers notice and feeds
  /// notice.watch. Both must outlive the Server. `guard` (null: none, as in a serve that
  /// is not root) is given the accounts without sudo after each accounts.apply, and
  /// reported by doctor; it must outlive the Server too.
  Server(EventLoop& loop, JobTable& jobs, AgentIdentity identity, host::HostPaths host,
         sampler::Sampler* sampler, NoticeWatcher& notices,
         host::MetadataGuard* guard = nullptr);
  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;
  ~Server();

  /// Listens on `socket_path` (a stale socket there is replaced), mode 0666.
  /// REQUIRES: the caller holds serve's lock, so no other serve uses that path.
  Status Listen(const std::string& socket_path);

 private:
  struct Conn {
    uint64_t key = 0;
    UniqueFd fd;
    uid_t uid = 0;
    EventLoop::Id watch = 0;
    std::string in;
    std::string out;
    bool answered = false;  // the last line is queued: close once it is written
    std::optional<api::AgentRequest> request;  // a request answered over time
    std::optional<LogReader> stdout_log;
    std::optional<LogReader> stderr_log;
    std::string followed;  // the job JobTable::Follow was asked for; "" when none
    EventLoop::Id timer = 0;
  };

  void Accept();
  void OnEvent(uint64_t key, short revents);
  void Handle(Conn& c, std::string_view line);
  void Queue(Conn& c, const std::string& line);
  void Finish(Conn& c, const std::string& line);
  void Flush(Conn& c);
  void Close(uint64_t key);
  void OnJobChange(const std::string& id, JobTable::Change change);
  // Sends the notice to every notice.watch.
  void OnNotice(const api::AgentNotice& notice);

  // The ops (ops.cc); each answers, or keeps c.request to answer later.
  api::AgentAnswer Hello(const Conn& c);
  api::AgentAnswer Devices();
  // From the sampler's snapshot: never waits for a sample. A non-root caller's shows
  // only its own jobs (KeepOwnJobs).
  api::AgentAnswer Metrics(const Conn& c, const api::MetricsQuery& query);
  // Tells the sampler the running jobs.
  void TellSampler();
  // Blocks the loop while the checks run (the metadata server's answers: up to three
  // host::kMetadataTimeout); doctor is asked rarely, by a person.
  api::AgentAnswer Doctor(const api::DoctorExpect& expect, int worker);
  // Blocks the loop while useradd, visudo, the removals' kills and nft (the metadata
  // guard) run. REQUIRES: the caller is root.
  api::AgentAnswer ApplyAccounts(const std::vector<api::AccountSpec>& users,
                                 const std::vector<api::AccountRemoval>& remove);
  api::AgentAnswer MountDisks(const std::vector<api::MountSpec>& mounts);
  void StartJob(Conn& c, const api::AgentRequest& r);
  void CancelJob(Conn& c, const api::AgentRequest& r);
  // Keeps `r` to answer when job `id` changes as it waits for (OnJobChange), or with the
  // job as it is after `at_most`.
  void AnswerLater(Conn& c, const api::AgentRequest& r, const std::string& id,
                   std::chrono::nanoseconds at_most);
  void StartLogs(Conn& c, const api::AgentRequest& r);
  void StartWatch(Conn& c, const api::AgentRequest& r);
  // Sends log data while the client keeps up; ends the stream when it is done.
  void PumpLogs(Conn& c);
  // The job `id` for caller c: NotFound, or PermissionDenied unless it is theirs or
  // they are root.
  Result<const JobEntry*> OwnJob(const Conn& c, const std::string& id);
  std::vector<api::JobOnWorker> States(const std::vector<std::string>& ids);

  EventLoop& loop_;
  JobTable& jobs_;
  AgentIdentity identity_;
  host::HostPaths host_;
  sampler::Sampler* sampler_;
  NoticeWatcher& notices_;
  host::MetadataGuard* guard_;
  UniqueFd listener_;
  EventLoop::Id listen_watch_ = 0;
  uint64_t next_key_ = 1;
  std::map<uint64_t, std::unique_ptr<Conn>> conns_;
};

}  // namespace tpufleet::agent
