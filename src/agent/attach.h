// Attaching to a job's terminal: a job started with `pty` runs on a pseudo-terminal its
// keeper holds, and `tpufleet-agent attach ID` (run over `ssh -t` by `tpufleet attach`)
// connects a terminal to it, detached again with Ctrl-] while the job goes on.
//
// The keeper listens on ATTACH_DIR/ID.sock (ATTACH_DIR is `attach` beside serve's
// socket, /run/tpufleet-agent/attach), a socket owned by the job's user, mode 0600: the
// kernel lets only that user (and root) connect. One client at a time; a new one takes
// the terminal over from the old. The client's first line is "ROWS COLS" (the size its
// terminal has; 0 0 when it has none), then its keystrokes raw; the keeper sends the
// terminal's output raw. What the job writes goes to its stdout.log too, attached or not
// (stdout and stderr are one stream on a terminal). A client that does not keep up is
// detached rather than holding the job up. Later window size changes are not passed on.
//
// Thread-safety: none; the keeper's loop thread (AttachPoint) or a whole program
// (AttachMain).
#pragma once

#include <sys/types.h>

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "util/event_loop.h"
#include "util/status.h"
#include "util/unique_fd.h"

namespace tpufleet::agent {

/// The key that detaches: Ctrl-] (0x1d), as telnet's.
inline constexpr char kDetachKey = 0x1d;
/// Output kept for an attached client that is slow; past it the client is detached.
inline constexpr size_t kMaxAttachBacklog = size_t{256} << 10;

/// ATTACH_DIR/ID.sock.
std::string AttachSocketPath(const std::string& attach_dir, const std::string& id);

/// The keeper's end: a listening socket for clients of the terminal `master`.
class AttachPoint {
 public:
  /// Listens on `path` (a stale socket there replaced), owned by uid:gid, mode 0600.
  static Result<std::unique_ptr<AttachPoint>> Open(EventLoop& loop, std::string path, int master,
                                                   uid_t uid, gid_t gid);
  AttachPoint(const AttachPoint&) = delete;
  AttachPoint& operator=(const AttachPoint&) = delete;
  /// Stops listening, detaches the client and removes the socket.
  ~AttachPoint();

  /// The terminal's output, passed on to the client attached, if any.
  void Output(std::string_view data);

 private:
  AttachPoint(EventLoop& loop, std::string path, int master)
      : loop_(loop), path_(std::move(path)), master_(master) {}
  void Accept();
  void OnClient(short revents);
  void Detach();

  EventLoop& loop_;
  std::string path_;
  int master_;
  UniqueFd listener_;
  EventLoop::Id listen_watch_ = 0;
  UniqueFd client_;
  EventLoop::Id client_watch_ = 0;
  bool header_read_ = false;
  std::string header_;
  std::string backlog_;  // output the client has not taken yet
};

/// `tpufleet-agent attach ID [--attach-dir DIR]`: relays this terminal to job ID's until
/// Ctrl-] (exit 0) or the job's end (exit 0, said); 1 when the job has no terminal here.
int AttachMain(const std::vector<std::string>& args);

}  // namespace tpufleet::agent
