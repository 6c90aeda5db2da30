// The wire types of POST /v1/command, by which `tpufleet --server URL COMMAND …` runs a
// command on the team server (server/http_api.h; docs/serve.md): the words after
// `tpufleet` go up, with the files the command reads (the fleet spec of `up`, a key of
// `users --key`), and what the command prints comes back as it prints it, then its exit
// status, so the caller sees exactly what the same command prints on the server's
// machine, when it prints it.
//
// The answer is a stream (application/x-ndjson, sent chunked): one JSON object a line,
//   {"stdout": "TEXT"}   what the command wrote to stdout (a piece of it)
//   {"stderr": "TEXT"}   likewise for stderr
//   {}                   nothing: the server is there and the command still runs
//   {"exit_code": N}     the command ended (0 ok, 1 failure, 2 usage, 130 interrupted):
//                        the last line
// A stream that ends without the exit_code line was cut (the server stopped, the
// connection broke): an error, never a success.
//
// Thread-safety: plain values and pure functions; a CommandStreamReader is one
// stream's, on one thread.
#pragma once

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "util/status.h"

namespace tpufleet::api {

/// Most words one request carries, and most bytes in all: a command line, not a file.
inline constexpr size_t kMaxCommandWords = 256;
/// Most bytes of output (stdout and stderr together) one answer carries; the rest is
/// cut, and said so on stderr. A `logs -f` that passes it ends there.
inline constexpr size_t kMaxServedOutputBytes = 16 << 20;
/// Most bytes of output one line carries: more goes in several lines, so that a reader
/// holds one bounded line at a time.
inline constexpr size_t kMaxStreamTextBytes = 16 << 10;
/// Most bytes of one line a reader takes: kMaxStreamTextBytes escaped (JSON writes a
/// control byte as 6), and the rest of the object.
inline constexpr size_t kMaxStreamLineBytes = 6 * kMaxStreamTextBytes + 64;
/// The line sent while the command prints nothing.
inline constexpr std::string_view kKeepAliveLine = "{}\n";
/// Most files one request carries: a spec and a key file or two.
inline constexpr size_t kMaxCommandFiles = 8;
/// Most bytes of the files' contents in all: a fleet spec (at most 1 MiB,
/// core/fleet_spec.h kMaxSpecBytes) and keys (64 KiB each) fit with room.
inline constexpr size_t kMaxCommandFileBytes = 2 << 20;
/// Most bytes of a request's JSON body: the files escaped (a newline takes two bytes),
/// and the words. The server reads no more (server/http_server.h).
inline constexpr size_t kMaxCommandRequestBytes = 2 * kMaxCommandFileBytes + (64 << 10);

/// Most seconds a request's max_age_seconds may be.
inline constexpr int kMaxAnswerAgeSeconds = 300;

/// {"argv": ["up", "F.yaml"], "files": {"F.yaml": "fleet: lab\n…"}}: the words after
/// `tpufleet`, without --server, and the files the command reads, by the path as the
/// client typed it ("-": its stdin). "files" is left out when there are none.
///
/// "max_age_seconds": N (1 to kMaxAnswerAgeSeconds), for a caller that asks the same
/// thing again and again (the dashboard): an answer the server made for the same person
/// and words at most N seconds ago will do (server/answer_cache.h says for which
/// commands). Left out: the command runs now, as the CLI's always do.
struct CommandRequest {
  std::vector<std::string> argv;
  std::map<std::string, std::string> files = {};
  std::optional<int> max_age_seconds = std::nullopt;
};

/// Where a piece of output goes.
enum class OutputStream { kStdout, kStderr };

/// What a command printed, and how it ended: a whole answer at once.
struct CommandResult {
  int exit_code = 0;
  std::string out;  // "stdout"
  std::string err;  // "stderr"
};

/// One line, no final newline. A file's bytes that are not UTF-8 are sent as U+FFFD:
/// the files are text (YAML, OpenSSH keys).
std::string ToJson(const CommandRequest& request);
/// InvalidArgument, naming what is wrong, for anything but the object above (a word
/// that is not a string, more than kMaxCommandWords words, no words at all; files not
/// an object of strings, an empty path, more than kMaxCommandFiles of them or
/// kMaxCommandFileBytes in all; a max_age_seconds that is no whole number from 1 to
/// kMaxAnswerAgeSeconds; a body over kMaxCommandRequestBytes).
Result<CommandRequest> ParseCommandRequest(std::string_view json);

/// `text` as {"stdout"|"stderr": …} lines, each ending in a newline and carrying at
/// most kMaxStreamTextBytes of it, cut between UTF-8 characters; "" for no text.
std::string FrameOutput(OutputStream stream, std::string_view text);
/// {"exit_code": N} and a newline.
std::string FrameExit(int exit_code);
/// The whole stream of `result`: its stdout, its stderr, its exit code.
std::string ToJson(const CommandResult& result);

/// The longest prefix of `text` no longer than `max` bytes that does not end inside a
/// UTF-8 character (a sequence cut short at its end is held back; bytes that are no
/// UTF-8 are taken as they are).
size_t Utf8Prefix(std::string_view text, size_t max);

/// Reads an answer's stream as it arrives, in pieces cut anywhere.
class CommandStreamReader {
 public:
  using Output = std::function<void(OutputStream stream, std::string_view text)>;
  /// `output` gets each piece of output, in order, as its line completes.
  explicit CommandStreamReader(Output output) : output_(std::move(output)) {}

  /// Takes the next bytes of the stream. InvalidArgument for a line that is none of
  /// the lines above, one longer than kMaxStreamLineBytes, or one after the exit code.
  Status Feed(std::string_view bytes);
  /// At the stream's end: the command's exit code; Unavailable "the server closed the
  /// connection before the command ended" when no exit_code line came.
  Result<int> Finish() const;

 private:
  Status Line(std::string_view line);

  Output output_;
  std::string partial_;  // the line under way
  std::optional<int> exit_code_;
};

/// A whole stream read at once (as CommandStreamReader does).
Result<CommandResult> ParseCommandResult(std::string_view stream);

}  // namespace tpufleet::api
