#include "api/remote_command.h"

#include "api/json_internal.h"

namespace tpufleet::api {
namespace {

using nlohmann::json;

std::string_view Name(OutputStream stream) {
  return stream == OutputStream::kStdout ? "stdout" : "stderr";
}

}  // namespace

std::string ToJson(const CommandRequest& request) {
  json j{{"argv", request.argv}};
  if (!request.files.empty()) {
    j["files"] = request.files;
  }
  if (request.max_age_seconds) {
    j["max_age_seconds"] = *request.max_age_seconds;
  }
  return internal::Dump(j, -1);
}

Result<CommandRequest> ParseCommandRequest(std::string_view text) {
  if (text.size() > kMaxCommandRequestBytes) {
    return InvalidArgumentError("a command request has at most " +
                                std::to_string(kMaxCommandRequestBytes) + " bytes");
  }
  json j = json::parse(text, nullptr, /*allow_exceptions=*/false);
  auto argv = j.is_object() ? j.find("argv") : j.end();
  if (!j.is_object() || argv == j.end() || !argv->is_array()) {
    return InvalidArgumentError("a command request is {\"argv\": [\"WORD\", …]}");
  }
  if (argv->empty() || argv->size() > kMaxCommandWords) {
    return InvalidArgumentError("a command request has from 1 to " +
                                std::to_string(kMaxCommandWords) + " words");
  }
  CommandRequest r;
  for (const json& word : *argv) {
    if (!word.is_string()) {
      return InvalidArgumentError("every word of a command request's argv is a string");
    }
    r.argv.push_back(word.get<std::string>());
  }
  if (auto age = j.find("max_age_seconds"); age != j.end()) {
    if (!age->is_number_integer() || *age < 1 || *age > kMaxAnswerAgeSeconds) {
      return InvalidArgumentError(
          "a command request's max_age_seconds is a whole number from 1 to " +
          std::to_string(kMaxAnswerAgeSeconds));
    }
    r.max_age_seconds = age->get<int>();
  }
  auto files = j.find("files");
  if (files == j.end()) {
    return r;
  }
  if (!files->is_object() || files->size() > kMaxCommandFiles) {
    return InvalidArgumentError("a command request's files are {\"PATH\": \"CONTENTS\", …}, "
                                "at most " + std::to_string(kMaxCommandFiles) + " of them");
  }
  size_t bytes = 0;
  for (auto it = files->begin(); it != files->end(); ++it) {
    if (it.key().empty() || !it.value().is_string()) {
      return InvalidArgumentError(
          "every file of a command request has a path and its contents as a string");
    }
    bytes += it.value().get_ref<const std::string&>().size();
    if (bytes > kMaxCommandFileBytes) {
      return InvalidArgumentError("a command request's files hold at most " +
                                  std::to_string(kMaxCommandFileBytes >> 20) + " MiB in all");
    }
    r.files[it.key()] = it.value().get<std::string>();
  }
  return r;
}

size_t Utf8Prefix(std::string_view text, size_t max) {
  size_t n = std::min(text.size(), max);
  // Back to the start of the last character begun before n (at most 3 continuation
  // bytes), and keep it only when it is whole.
  size_t start = n;
  while (start > 0 && n - start < 3 &&
         (static_cast<unsigned char>(text[start - 1]) & 0xC0) == 0x80) {
    --start;
  }
  if (start == 0) {
    return n;
  }
  auto lead = static_cast<unsigned char>(text[start - 1]);
  size_t length = lead >= 0xF0 ? 4 : lead >= 0xE0 ? 3 : lead >= 0xC0 ? 2 : 1;
  size_t have = n - (start - 1);
  return length > have && lead >= 0xC0 && lead < 0xF8 ? start - 1 : n;
}

std::string FrameOutput(OutputStream stream, std::string_view text) {
  std::string out;
  while (!text.empty()) {
    size_t n = Utf8Prefix(text, kMaxStreamTextBytes);
    n = n == 0 ? std::min(text.size(), kMaxStreamTextBytes) : n;
    out += internal::Dump(json{{Name(stream), text.substr(0, n)}}, -1) + "\n";
    text.remove_prefix(n);
  }
  return out;
}

std::string FrameExit(int exit_code) {
  return internal::Dump(json{{"exit_code", exit_code}}, -1) + "\n";
}

std::string ToJson(const CommandResult& result) {
  return FrameOutput(OutputStream::kStdout, result.out) +
         FrameOutput(OutputStream::kStderr, result.err) + FrameExit(result.exit_code);
}

Status CommandStreamReader::Feed(std::string_view bytes) {
  while (!bytes.empty()) {
    size_t newline = bytes.find('\n');
    size_t take = newline == std::string_view::npos ? bytes.size() : newline;
    if (partial_.size() + take > kMaxStreamLineBytes) {
      return InvalidArgumentError("the server sent a line over " +
                                  std::to_string(kMaxStreamLineBytes) + " bytes");
    }
    partial_.append(bytes.substr(0, take));
    if (newline == std::string_view::npos) {
      return Status::Ok();
    }
    bytes.remove_prefix(newline + 1);
    std::string line = std::move(partial_);
    partial_.clear();
    TPUFLEET_TRY(Line(line));
  }
  return Status::Ok();
}

Status CommandStreamReader::Line(std::string_view line) {
  json j = json::parse(line, nullptr, /*allow_exceptions=*/false);
  if (exit_code_) {
    return InvalidArgumentError("the server sent more after the command's exit code");
  }
  if (j.is_object() && j.empty()) {
    return Status::Ok();  // kKeepAliveLine
  }
  if (j.is_object() && j.size() == 1) {
    auto it = j.begin();
    if (it.key() == "exit_code" && it->is_number_integer()) {
      exit_code_ = it->get<int>();
      return Status::Ok();
    }
    for (OutputStream s : {OutputStream::kStdout, OutputStream::kStderr}) {
      if (it.key() == Name(s) && it->is_string()) {
        output_(s, it->get_ref<const std::string&>());
        return Status::Ok();
      }
    }
  }
  return InvalidArgumentError(
      "a command's answer is lines of {\"stdout\": \"…\"}, {\"stderr\": \"…\"}, {} and "
      "{\"exit_code\": N}; the server sent another");
}

Result<int> CommandStreamReader::Finish() const {
  if (!exit_code_ || !partial_.empty()) {
    return UnavailableError("the server closed the connection before the command ended");
  }
  return *exit_code_;
}

Result<CommandResult> ParseCommandResult(std::string_view stream) {
  CommandResult r;
  CommandStreamReader reader([&r](OutputStream s, std::string_view text) {
    (s == OutputStream::kStdout ? r.out : r.err).append(text);
  });
  TPUFLEET_TRY(reader.Feed(stream));
  TPUFLEET_ASSIGN_OR_RETURN(r.exit_code, reader.Finish());
  return r;
}

}  // namespace tpufleet::api
