// libFuzzer target for the connection holder's wire protocol (src/ssh/holder_protocol.h,
// docs/holder-protocol.md): the input is what a client sent the holder, and also what a
// holder sent a client. On any bytes: a request decodes to a request that encodes back
// to itself, or to one InvalidArgument with a message (never a throw, the crash issue 11
// mended); a result or error payload decodes to a value (an error is never OK); frames
// are taken whole or refused. Run it as fuzz/README.md says.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "ssh/holder_protocol.h"

namespace {

using tpufleet::HolderFrame;
using tpufleet::HolderRequest;
using tpufleet::StatusCode;

void Require(bool ok) {
  if (!ok) {
    std::abort();  // a broken promise is a crash
  }
}

bool SameJob(const tpufleet::FanoutJob& a, const tpufleet::FanoutJob& b) {
  if (a.hosts.size() != b.hosts.size()) {
    return false;
  }
  for (size_t i = 0; i < a.hosts.size(); ++i) {
    const auto& x = a.hosts[i];
    const auto& y = b.hosts[i];
    if (x.name != y.name || x.address != y.address || x.port != y.port || x.user != y.user ||
        x.host_key != y.host_key || x.command != y.command || x.no_input != y.no_input) {
      return false;
    }
  }
  return a.command == b.command && a.key_path == b.key_path && a.stdin_path == b.stdin_path &&
         a.stdin_header == b.stdin_header && a.max_parallel == b.max_parallel &&
         a.connect_timeout == b.connect_timeout && a.command_timeout == b.command_timeout &&
         a.input_stall_timeout == b.input_stall_timeout && a.fail_fast == b.fail_fast &&
         a.hold_stdin == b.hold_stdin;
}

void CheckRequest(std::string_view bytes) {
  auto request = tpufleet::TakeHolderRequest(bytes);
  if (!request.ok()) {
    Require(request.status().code() == StatusCode::kInvalidArgument &&
            !request.status().message().empty());
    return;
  }
  if (!request->has_value()) {
    return;  // not all there
  }
  const HolderRequest& r = **request;
  Require(r.op != HolderRequest::Op::kRun || r.job.connect_timeout.count() >= 0);
  auto again = tpufleet::EncodeHolderRequest(r.op, r.op == HolderRequest::Op::kRun ? &r.job
                                                                                    : nullptr);
  Require(again.ok());  // what was decoded is UTF-8 and within bounds
  auto decoded = tpufleet::TakeHolderRequest(*again);
  Require(decoded.ok() && decoded->has_value() && (*decoded)->op == r.op &&
          SameJob((*decoded)->job, r.job));
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view input(reinterpret_cast<const char*>(data), size);
  CheckRequest(input);
  // The same bytes after a correct length, so the JSON decoder sees all of them.
  if (size <= tpufleet::kHolderMaxRequestBytes) {
    uint32_t n = static_cast<uint32_t>(size);
    std::string framed = {static_cast<char>(n >> 24), static_cast<char>(n >> 16),
                          static_cast<char>(n >> 8), static_cast<char>(n)};
    CheckRequest(framed + std::string(input));
  }
  tpufleet::HostResult result = tpufleet::DecodeHostResult(input);
  Require(static_cast<int>(result.outcome) >= 0 &&
          result.outcome <= tpufleet::HostOutcome::kCancelled);
  Require(!tpufleet::DecodeHolderError(input).ok());
  std::string frames(input);
  size_t taken = 0;
  auto status = tpufleet::TakeHolderFrames(frames, [&](HolderFrame, uint32_t, std::string_view p) {
    Require(p.size() <= tpufleet::kHolderMaxFrameBytes);
    taken += tpufleet::kHolderFrameHeaderBytes + p.size();
  });
  Require(frames.size() + taken == size);
  Require(status.ok() || status.code() == StatusCode::kFailedPrecondition);
  return 0;
}
