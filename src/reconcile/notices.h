// NoticeWatch: serve's ears on the workers. It keeps one `notice.watch` stream open to
// the agent of every worker of the nodes it is told to watch (serve: the READY ones),
// and remembers what each worker last said: its metadata server's `preempted` and
// `maintenance-event` (api::AgentNotice), or that it could not be reached.
//
// The streams run on a FanoutSession (ssh/fanout.h) of the World's local fan-out on
// serve's EventLoop: FanoutSession hands each host's output to the sink as it arrives,
// from the loop's turns, so an endless stream costs the loop nothing while it is quiet
// and its lines are read on the loop's thread like everything else serve does. That is
// why there is no thread here (the alternative, one thread holding a blocking CallAgents
// over all workers and posting lines to the loop, would have to be restarted whole
// whenever the set of workers changes, and its lines would cross threads). One fan-out
// job per worker: a worker that is cut off or rebooted ends its own stream, which is
// started again kNoticeRetry later, while its node's other workers keep theirs; a job
// of the same session reuses the SSH connection a previous one to that worker made.
//
// `on_notice` runs (on the loop) whenever a worker's notice changes from what serve knew,
// so serve can decide on that node at once rather than at its next pass.
//
// Thread-safety: none; the loop's thread uses it.
#pragma once

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "api/agent.h"
#include "control/world.h"
#include "ssh/fanout.h"
#include "util/event_loop.h"

namespace tpufleet {

/// A worker's stream that ended (the worker rebooted, was cut off, its agent restarted)
/// is opened again this much later: soon enough that a notice given meanwhile is heard
/// within seconds, rarely enough that an unreachable worker costs one connect attempt
/// (kFanoutConnectTimeout, 10 s) every few seconds at most.
inline constexpr std::chrono::seconds kNoticeRetry{5};
/// A stream's connect: a worker not logged in within this is unreachable for now (the
/// fan-out's own 10 s would make a cut-off worker's verdict slow).
inline constexpr std::chrono::seconds kNoticeConnectTimeout{5};

/// What the workers of one node said, as of now.
struct NodeNotices {
  int workers = 0;        // the node's workers being watched
  int preempted = 0;      // whose notice says preempted
  int maintenance = 0;    // whose notice names a maintenance event (not "NONE")
  int unreachable = 0;    // whose stream could not be opened or broke, not yet back
  /// Whose agent gave a notice since its stream opened (at this address) or last broke:
  /// its sshd and agent answer, so a call to it returns at once, not after a connect
  /// timeout (a worker moved by a maintenance is a new stream, silent until it boots).
  int answering = 0;
  /// The earliest time (the workers' own clocks) a preempted notice took its value.
  std::optional<Clock::WallTime> preempted_since;
};

class NoticeWatch {
 public:
  using OnNotice = std::function<void(const std::string& fleet, const std::string& node)>;

  /// REQUIRES: `world` and `loop` outlive the watch.
  NoticeWatch(World& world, EventLoop& loop, OnNotice on_notice);
  ~NoticeWatch();
  NoticeWatch(const NoticeWatch&) = delete;
  NoticeWatch& operator=(const NoticeWatch&) = delete;

  /// Watches exactly the workers of `nodes` (their records, workers included): streams
  /// of workers not among them (a node deleted, recreated with other workers, no longer
  /// READY) are closed and forgotten; new ones are opened.
  void Watch(const std::vector<NodeRecord>& nodes);
  /// What node `node` of `fleet`'s workers said (zeros when it is not watched).
  NodeNotices Of(const std::string& fleet, const std::string& node) const;

 private:
  class Stream;

  void Open(Stream& stream);
  // A worker's notice changed: on_notice_, on a later turn (the sink's caller must not
  // see the streams change under it).
  void Changed(const std::string& fleet, const std::string& node);
  void Ended(Stream* stream);

  World& world_;
  EventLoop& loop_;
  OnNotice on_notice_;
  std::unique_ptr<FanoutSession> session_;
  /// By "fleet/node/index/address/host key": a recreated or moved worker is a new stream.
  std::map<std::string, std::unique_ptr<Stream>> streams_;
  /// Streams closed but whose fan-out job has not ended yet (its sink must live on).
  std::vector<std::unique_ptr<Stream>> closing_;
};

}  // namespace tpufleet
