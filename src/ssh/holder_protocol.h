// The connection holder's wire protocol: what its client and the holder (holder.h) send
// each other over the holder's Unix socket, as docs/holder-protocol.md specifies. This
// file is the only place that encodes or decodes it.
//
//   holder -> client  the greeting "TPUFLEET-HOLDER 1\n"
//   client -> holder  one request: u32 length (big-endian), then that many bytes of a
//                     JSON object: {"op":"run","job":{…}} | {"op":"status"} | {"op":"stop"}
//   holder -> client  frames: u8 type, u32 host, u32 length (big-endian), payload
//
// Decoding never throws and never trusts a size or a number: a request that is not
// what the spec says is an InvalidArgument naming what is wrong (the holder answers it
// with an error frame and closes the socket); a frame or result the client cannot read
// is reported as such, never a crash.
//
// Thread-safety: pure functions.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "ssh/fanout.h"
#include "util/status.h"

namespace tpufleet {

/// Bumped when either side's bytes change meaning; the greeting carries it, and a client
/// that reads another version runs its job in its own process instead.
inline constexpr int kHolderProtocolVersion = 1;
inline constexpr std::string_view kHolderGreeting = "TPUFLEET-HOLDER 1\n";
/// The longest greeting a client reads before it gives up on the peer.
inline constexpr size_t kHolderMaxGreetingBytes = 64;
/// A request longer than this is not a job description (16k hosts take about 4 MiB).
inline constexpr uint32_t kHolderMaxRequestBytes = 64u << 20;
/// A frame carries one read of a channel (kFanoutIoChunk) or a small JSON object: a
/// longer one did not come from a holder, and the client does not buffer toward it.
inline constexpr uint32_t kHolderMaxFrameBytes = 16u << 20;
/// Bytes before a request's JSON (its length) and before a frame's payload (type, host,
/// length).
inline constexpr size_t kHolderLengthBytes = 4;
inline constexpr size_t kHolderFrameHeaderBytes = 9;
/// The longest timeout a request may carry: far beyond any real command, and far from
/// where "now + timeout" would overflow the monotonic clock (about 292 years).
inline constexpr std::chrono::hours kHolderMaxTimeout{24 * 365 * 10};

enum class HolderFrame : uint8_t {
  kStdout = 1,  // payload: bytes the host wrote to stdout
  kStderr = 2,  // payload: bytes the host wrote to stderr
  kResult = 3,  // payload: the host's result (JSON: outcome, exit_code, signal, message)
  kDone = 4,    // the job has finished (every host had its result); the socket closes
  kError = 5,   // the request was refused (JSON: code, message); the socket closes
  kStatus = 6,  // payload: the holder's status (JSON: pid, connections, busy,
                // peak_backlog_bytes); the socket closes
};

struct HolderRequest {
  enum class Op { kRun, kStatus, kStop };
  Op op = Op::kStatus;
  FanoutJob job;  // kRun only
};

/// The bytes a client sends: the length, then the request's JSON. InvalidArgument when
/// the job's strings are not UTF-8 (JSON cannot carry them unchanged: the caller runs
/// such a job itself) or the request would be over kHolderMaxRequestBytes.
Result<std::string> EncodeHolderRequest(HolderRequest::Op op, const FanoutJob* job = nullptr);

/// The request at the front of what a client sent: nullopt while it is not all there;
/// InvalidArgument when the length is over kHolderMaxRequestBytes or the JSON is not a
/// request of the spec (the message names the field).
Result<std::optional<HolderRequest>> TakeHolderRequest(std::string_view received);

/// Appends one frame. REQUIRES: payload.size() <= kHolderMaxFrameBytes.
void AppendHolderFrame(std::string& out, HolderFrame type, size_t host,
                       std::string_view payload);

/// Calls on_frame(type, host, payload) for each whole frame at the front of `buf` and
/// removes them. FailedPrecondition (nothing removed past the bad header) when a frame
/// says it is longer than kHolderMaxFrameBytes. Types are not checked: a client skips
/// those it does not know.
template <typename F>
Status TakeHolderFrames(std::string& buf, F on_frame);

std::string EncodeHostResult(const HostResult& result);
/// A result frame's payload; one the client cannot read is a kUnreachable result that
/// says the holder sent a malformed one.
HostResult DecodeHostResult(std::string_view payload);

std::string EncodeHolderError(const Status& status);
/// An error frame's payload, as the Status it carried; never OK (an unreadable one is
/// Internal "the connection holder refused the job").
Status DecodeHolderError(std::string_view payload);

struct HolderStats {
  int64_t pid = 0;
  size_t connections = 0;
  bool busy = false;
  size_t peak_backlog_bytes = 0;
};
std::string EncodeHolderStats(const HolderStats& stats);

// ---- implementation ----

uint32_t DecodeHolderU32(const char* p);

template <typename F>
Status TakeHolderFrames(std::string& buf, F on_frame) {
  size_t pos = 0;
  Status status;
  while (buf.size() - pos >= kHolderFrameHeaderBytes) {
    uint32_t len = DecodeHolderU32(buf.data() + pos + 5);
    if (len > kHolderMaxFrameBytes) {
      status = FailedPreconditionError("the connection holder sent a malformed frame");
      break;
    }
    if (buf.size() - pos - kHolderFrameHeaderBytes < len) {
      break;
    }
    on_frame(static_cast<HolderFrame>(buf[pos]), DecodeHolderU32(buf.data() + pos + 1),
             std::string_view(buf).substr(pos + kHolderFrameHeaderBytes, len));
    pos += kHolderFrameHeaderBytes + len;
  }
  buf.erase(0, pos);
  return status;
}

}  // namespace tpufleet
