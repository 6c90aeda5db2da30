#include "server/command_stream.h"

#include <algorithm>

#include "util/strings.h"

namespace tpufleet::server {

// Unbuffered: every write goes to Append at once, under the stream's lock.
class CommandStream::Buffer final : public std::streambuf {
 public:
  Buffer(CommandStream* stream, api::OutputStream which) : stream_(stream), which_(which) {}

 protected:
  std::streamsize xsputn(const char* s, std::streamsize n) override {
    stream_->Append(which_, std::string_view(s, static_cast<size_t>(n)));
    return n;
  }
  int_type overflow(int_type c) override {
    if (!traits_type::eq_int_type(c, traits_type::eof())) {
      char ch = traits_type::to_char_type(c);
      stream_->Append(which_, std::string_view(&ch, 1));
    }
    return traits_type::not_eof(c);
  }

 private:
  CommandStream* const stream_;
  const api::OutputStream which_;
};

CommandStream::CommandStream(Run run, std::function<void(int)> ended)
    : out_buffer_(std::make_unique<Buffer>(this, api::OutputStream::kStdout)),
      err_buffer_(std::make_unique<Buffer>(this, api::OutputStream::kStderr)),
      out_(out_buffer_.get()),
      err_(err_buffer_.get()) {
  thread_ = std::thread([this, run = std::move(run), ended = std::move(ended)] {
    int code = run(out_, err_, interrupt_);
    ended(code);
    std::lock_guard<std::mutex> lock(mu_);
    exit_code_ = code;
    changed_.notify_all();
  });
}

CommandStream::~CommandStream() {
  End();
}

void CommandStream::Append(api::OutputStream stream, std::string_view bytes) {
  std::unique_lock<std::mutex> lock(mu_);
  changed_.wait(lock, [this] { return pending_bytes_ < kMaxPendingOutputBytes || ended_; });
  if (ended_ || bytes.empty()) {
    return;  // nobody reads any more
  }
  if (bytes.size() > api::kMaxServedOutputBytes - total_bytes_) {
    bytes = bytes.substr(0, api::kMaxServedOutputBytes - total_bytes_);
    if (!cut_) {
      cut_ = true;
      interrupt_ = true;  // nothing more it prints would be sent
    }
  }
  if (bytes.empty()) {
    return;
  }
  total_bytes_ += bytes.size();
  pending_bytes_ += bytes.size();
  newline_pending_ = newline_pending_ || bytes.find('\n') != std::string_view::npos;
  if (!pending_.empty() && pending_.back().first == stream) {
    pending_.back().second.append(bytes);
  } else {
    pending_.emplace_back(stream, std::string(bytes));
  }
  changed_.notify_all();
}

std::optional<std::string> CommandStream::Next() {
  if (done_) {
    return std::nullopt;
  }
  std::unique_lock<std::mutex> lock(mu_);
  changed_.wait_for(lock, kPartialLineFlush, [this] {
    return newline_pending_ || exit_code_.has_value() ||
           pending_bytes_ >= api::kMaxStreamTextBytes;
  });
  std::string out;
  for (size_t i = 0; i < pending_.size(); ++i) {
    std::string& text = pending_[i].second;
    // A character cut between two writes waits for its end (unless nothing will come).
    size_t n = i + 1 < pending_.size() || exit_code_ ? text.size()
                                                     : api::Utf8Prefix(text, text.size());
    out += api::FrameOutput(pending_[i].first, std::string_view(text).substr(0, n));
    pending_bytes_ -= n;
    text.erase(0, n);
  }
  pending_.erase(std::remove_if(pending_.begin(), pending_.end(),
                                [](const auto& p) { return p.second.empty(); }),
                 pending_.end());
  newline_pending_ = false;
  if (exit_code_ && pending_.empty()) {
    if (cut_) {
      out += api::FrameOutput(api::OutputStream::kStderr,
                              "tpufleet: the output passed " +
                                  FormatBytes(api::kMaxServedOutputBytes) +
                                  ", the most a team server sends back; the rest was cut\n");
    }
    out += api::FrameExit(*exit_code_);
    done_ = true;
  }
  changed_.notify_all();  // room for the command's next write
  auto now = std::chrono::steady_clock::now();
  if (out.empty() && now - last_sent_ >= kKeepAliveInterval) {
    out = std::string(api::kKeepAliveLine);
  }
  if (!out.empty()) {
    last_sent_ = now;
  }
  return out;
}

void CommandStream::End() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    ended_ = true;
    if (!exit_code_) {
      interrupt_ = true;
    }
    changed_.notify_all();
  }
  if (thread_.joinable()) {
    thread_.join();
  }
}

}  // namespace tpufleet::server
