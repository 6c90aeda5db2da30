#include "ssh/fanout_engine.h"

#include <libssh2.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>

#include "ssh/fanout_engine_internal.h"

namespace tpufleet {

using std::chrono::milliseconds;

namespace {

// OpenSSH's channel to a Unix socket on the server (its PROTOCOL file, 2.4).
constexpr std::string_view kStreamLocalChannel = "direct-streamlocal@openssh.com";

void PutU32(std::string& out, uint32_t v) {
  for (int shift = 24; shift >= 0; shift -= 8) {
    out.push_back(static_cast<char>((v >> shift) & 0xff));
  }
}

// What the channel open request carries after its common fields: the socket's path,
// then a reserved string and a reserved uint32.
std::string StreamLocalOpenMessage(const std::string& path) {
  std::string out;
  PutU32(out, static_cast<uint32_t>(path.size()));
  out += path;
  PutU32(out, 0);
  PutU32(out, 0);
  return out;
}

}  // namespace

// One step of one host's channel; true when it moved and may move again.
bool FanoutEngine::DriveTask(Task& t) {
  Conn& c = *t.conn;
  Job& job = *t.job;
  auto conn_error = [&](const std::string& what) {
    FailConn(c, HostOutcome::kUnreachable, what + ": " + SessionError(c.session));
    return false;
  };
  switch (t.state) {
    case Task::kWaiting: {
      t.state = Task::kOpen;
      t.deadline = now_ + job.spec.connect_timeout;  // for the channel and the exec
      const std::string& socket = job.spec.hosts[t.host].unix_socket;
      t.over_socket = !socket.empty() && !c.sockets_refused;
      if (t.over_socket) {
        t.open_message = StreamLocalOpenMessage(socket);
      }
      [[fallthrough]];
    }
    case Task::kOpen: {
      t.channel = t.over_socket
                      ? libssh2_channel_open_ex(
                            c.session, kStreamLocalChannel.data(),
                            static_cast<unsigned>(kStreamLocalChannel.size()),
                            LIBSSH2_CHANNEL_WINDOW_DEFAULT, LIBSSH2_CHANNEL_PACKET_DEFAULT,
                            t.open_message.data(), static_cast<unsigned>(t.open_message.size()))
                      : libssh2_channel_open_session(c.session);
      if (!t.channel) {
        int err = libssh2_session_last_errno(c.session);
        if (err == LIBSSH2_ERROR_EAGAIN) {
          return false;
        }
        if (t.over_socket && err == LIBSSH2_ERROR_CHANNEL_FAILURE) {
          // Refused: the command runs instead, and its exit says why. A server that
          // does not connect such channels at all is not asked again; a socket nobody
          // listens on ("connect failed") may be listened on next time.
          if (SessionError(c.session).find("connect failed") == std::string::npos) {
            c.sockets_refused = true;
          }
          t.over_socket = false;
          return true;
        }
        return conn_error(t.over_socket ? "opening a channel to a Unix socket"
                                        : "opening a session channel");
      }
      c.served = true;
      if (t.over_socket) {
        t.deadline = job.spec.command_timeout.count() > 0 ? now_ + job.spec.command_timeout
                                                          : Clock::MonoTime::max();
        t.state = Task::kRun;
        return true;
      }
      t.state = Task::kExec;
      [[fallthrough]];
    }
    case Task::kExec: {
      const FanoutHost& host = job.spec.hosts[t.host];
      const std::string& command = host.command.empty() ? job.spec.command : host.command;
      int rc = libssh2_channel_exec(t.channel, command.c_str());
      if (rc == LIBSSH2_ERROR_EAGAIN) {
        return false;
      }
      if (rc != 0) {
        return conn_error("starting the command");
      }
      t.deadline = job.spec.command_timeout.count() > 0 ? now_ + job.spec.command_timeout
                                                        : Clock::MonoTime::max();
      t.state = Task::kRun;
      return true;
    }
    case Task::kRun: {
      if (job.sink->Backlogged()) {
        t.held = true;
        t.input_deadline = Clock::MonoTime::max();  // our side is behind, not the worker
        return false;
      }
      bool moved = false;
      bool window_shut = false;  // the write waited for the worker's window to open
      // stdin is the job's header, then (unless no_input) the payload; t.sent counts both.
      // The socket's input is its own: the job's is for the command's.
      const FanoutHost& host = job.spec.hosts[t.host];
      const std::string& header = t.over_socket ? host.socket_input : job.spec.stdin_header;
      const Payload* in = host.no_input || t.over_socket ? nullptr : job.payload.get();
      const size_t total = header.size() + (in ? in->size : 0);
      const auto stall = job.spec.input_stall_timeout;
      if (t.sent < total && stall.count() > 0 && t.input_deadline == Clock::MonoTime::max()) {
        t.input_deadline = now_ + stall;
      }
      if (t.sent < total) {
        const char* from = t.sent < header.size() ? header.data() + t.sent
                                                  : in->data + (t.sent - header.size());
        size_t left = t.sent < header.size() ? header.size() - t.sent : total - t.sent;
        ssize_t n = libssh2_channel_write(t.channel, from, std::min(kFanoutIoChunk, left));
        if (n > 0) {
          t.sent += static_cast<size_t>(n);
          moved = true;
          t.input_deadline = t.sent < total && stall.count() > 0 ? now_ + stall
                                                                 : Clock::MonoTime::max();
        } else if (n == LIBSSH2_ERROR_EAGAIN) {
          window_shut = libssh2_channel_window_write(t.channel) == 0;
        } else {
          return conn_error("sending input");
        }
      }
      if (!t.eof_sent && t.sent >= total && !job.spec.hold_stdin) {
        int rc = libssh2_channel_send_eof(t.channel);
        if (rc == 0) {
          t.eof_sent = true;
          moved = true;
        } else if (rc != LIBSSH2_ERROR_EAGAIN) {
          return conn_error("closing the command's input");
        }
      }
      static thread_local char buf[kFanoutIoChunk];
      unsigned long waiting_before = 0;  // unread bytes libssh2 holds after the stdout reads
      for (int stream : {0, SSH_EXTENDED_DATA_STDERR}) {
        if (stream != 0) {
          libssh2_channel_window_read_ex(t.channel, &waiting_before, nullptr);
        }
        while (!job.sink->Backlogged()) {
          ssize_t n = libssh2_channel_read_ex(t.channel, stream, buf, sizeof buf);
          if (n > 0) {
            moved = true;
            job.sink->OnOutput(t.host, stream ? OutputStream::kStderr : OutputStream::kStdout,
                               std::string_view(buf, static_cast<size_t>(n)));
            continue;
          }
          if (n < 0 && n != LIBSSH2_ERROR_EAGAIN) {
            return conn_error("reading output");
          }
          break;
        }
      }
      if (job.sink->Backlogged()) {
        return moved;  // unread data may remain: not at its end yet
      }
      if (libssh2_channel_eof(t.channel)) {
        t.state = Task::kClosing;
        return true;
      }
      // libssh2 reads ahead: each read above drains the socket into its own buffers, so
      // a window adjustment that came after the write, or stdout data that came after
      // the stdout reads, now waits where poll cannot see it, and the worker, waiting
      // for us, sends nothing more. Each case is one more pass, then poll is right again.
      unsigned long waiting_after = 0;
      libssh2_channel_window_read_ex(t.channel, &waiting_after, nullptr);
      if (window_shut && libssh2_channel_window_write(t.channel) > 0) {
        return true;
      }
      if (waiting_after > waiting_before) {
        return true;
      }
      return moved;
    }
    case Task::kClosing: {
      int rc = libssh2_channel_close(t.channel);
      if (rc == LIBSSH2_ERROR_EAGAIN) {
        return false;
      }
      if (rc != 0) {
        return conn_error("closing the channel");
      }
      t.state = Task::kWaitClosed;
      [[fallthrough]];
    }
    case Task::kWaitClosed: {
      int rc = libssh2_channel_wait_closed(t.channel);
      if (rc == LIBSSH2_ERROR_EAGAIN) {
        return false;
      }
      char* sig = nullptr;
      size_t sig_len = 0;
      libssh2_channel_get_exit_signal(t.channel, &sig, &sig_len, nullptr, nullptr, nullptr,
                                      nullptr);
      if (sig && sig_len > 0) {
        t.result.outcome = HostOutcome::kSignaled;
        t.result.signal.assign(sig, sig_len);
        t.result.message = "killed by SIG" + t.result.signal;
      } else {
        t.result.outcome = HostOutcome::kExited;
        // A socket's channel has no exit status: its end is the answer's end.
        t.result.exit_code = t.over_socket ? 0 : libssh2_channel_get_exit_status(t.channel);
        if (t.result.exit_code != 0) {
          t.result.message = "exit " + std::to_string(t.result.exit_code);
        }
      }
      if (sig) {
        libssh2_free(c.session, sig);
      }
      libssh2_channel_free(t.channel);
      t.channel = nullptr;
      c.task = nullptr;
      t.conn = nullptr;
      FinishTask(t);
      return false;
    }
    default:
      return false;
  }
}

// Ends a host that has not finished: its result is reported now and its connection
// (if it has one) closed, which ends a command that watches stdin.
void FanoutEngine::CancelTask(Task& t, HostOutcome outcome, const std::string& message) {
  t.result.outcome = outcome;
  t.result.message = message;
  if (t.state == Task::kQueued) {  // never admitted: Admit skips it
    t.state = Task::kDone;
    ++t.job->finished;
    t.job->sink->OnResult(t.host, t.result);
    return;
  }
  if (t.conn) {
    CloseConn(*t.conn);
  }
  FinishTask(t);
}

void FanoutEngine::FinishTask(Task& t) {
  if (t.state == Task::kDone) {
    return;
  }
  if (t.conn) {
    t.conn->task = nullptr;
    t.conn->idle_since = now_;
    t.conn = nullptr;
  }
  t.state = Task::kDone;
  Job& job = *t.job;
  --job.active;  // a queued task ends in CancelTask instead
  ++job.finished;
  job.sink->OnResult(t.host, t.result);
  if (job.spec.fail_fast && !t.result.ok() && t.result.outcome != HostOutcome::kCancelled) {
    for (auto& other : job.tasks) {
      if (other.state != Task::kDone) {
        CancelTask(other, HostOutcome::kCancelled,
                   "stopped: " + job.spec.hosts[t.host].name + " failed (--fail-fast)");
      }
    }
  }
}

}  // namespace tpufleet
