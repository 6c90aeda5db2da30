// CommandStream: the answer of POST /v1/command (api/remote_command.h's stream) as the
// command makes it. The command runs on a thread of its own, printing into two
// ostreams whose buffers feed this stream; the HTTP binding reads it with Next, which
// frames what was printed into {"stdout"}/{"stderr"} lines:
//   - a complete line at once, a partial one after kPartialLineFlush;
//   - {} after kKeepAliveInterval without anything, so a client tells a quiet command
//     from a dead server (it gives up after remote/server_client.h kStreamIdleTimeout);
//   - {"exit_code": N} once the command returned, after all it printed.
// Bounds: api::kMaxServedOutputBytes of output in all (stdout and stderr): past it the
// rest is cut, said on stderr, and the command interrupted (nothing more would be
// sent); at most kMaxPendingOutputBytes waiting to be sent: a command that prints
// faster than its client reads waits for it.
//
// End (the client gone, the server stopping, or the answer complete) sets the
// command's interrupt flag, when it still runs, and waits for it to return: commands
// that wait for long (logs -f) watch the flag, the others end on their own. What the
// command prints after End is dropped.
//
// Thread-safety: Next and End from one thread (the binding's); the command's streams
// from the command's thread. The constructor starts the thread; the destructor ends it.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <ostream>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "api/remote_command.h"
#include "server/http_api.h"

namespace tpufleet::server {

/// A line not yet ended is sent after this long: a progress line ("… 40%") shows
/// while it is drawn, and a command's lines are not sent one TCP packet each.
inline constexpr std::chrono::milliseconds kPartialLineFlush{100};
/// The keep-alive's period: a quarter of the client's patience (kStreamIdleTimeout).
inline constexpr std::chrono::seconds kKeepAliveInterval{15};
/// Most output waiting to be sent before the command's next write waits.
inline constexpr size_t kMaxPendingOutputBytes = 1 << 20;

class CommandStream final : public ApiStream {
 public:
  using Run = std::function<int(std::ostream& out, std::ostream& err,
                                const std::atomic<bool>& interrupt)>;

  /// Starts `run` on a thread of its own; `ended(exit_code)` is called on that thread
  /// once `run` returned (before the exit_code line is sent).
  CommandStream(Run run, std::function<void(int exit_code)> ended);
  ~CommandStream() override;  // End()
  CommandStream(const CommandStream&) = delete;
  CommandStream& operator=(const CommandStream&) = delete;

  std::optional<std::string> Next() override;
  void End() override;

 private:
  class Buffer;  // a std::streambuf that Appends to one stream
  // From the command's thread: `bytes` printed on `stream`.
  void Append(api::OutputStream stream, std::string_view bytes);

  std::mutex mu_;
  std::condition_variable changed_;  // output came, was taken, or the end
  std::vector<std::pair<api::OutputStream, std::string>> pending_;  // guarded by mu_
  size_t pending_bytes_ = 0;                   // guarded by mu_
  size_t total_bytes_ = 0;                     // guarded by mu_
  bool newline_pending_ = false;               // guarded by mu_
  bool cut_ = false;                           // guarded by mu_: past kMaxServedOutputBytes
  bool ended_ = false;                         // guarded by mu_: End called
  std::optional<int> exit_code_;               // guarded by mu_: the command returned
  bool done_ = false;                          // the binding's: exit_code line given
  std::chrono::steady_clock::time_point last_sent_ = std::chrono::steady_clock::now();
  std::atomic<bool> interrupt_{false};
  std::unique_ptr<Buffer> out_buffer_;
  std::unique_ptr<Buffer> err_buffer_;
  std::ostream out_;
  std::ostream err_;
  std::thread thread_;
};

}  // namespace tpufleet::server
