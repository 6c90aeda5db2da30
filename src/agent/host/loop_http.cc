#include "agent/host/loop_http.h"

#include <sys/socket.h>

#include <cerrno>
#include <cstring>

#include "agent/host/plain_http.h"

namespace tpufleet::agent::host {

void LoopHttpGet::Start(HttpRequest request, Done done) {
  request_ = std::move(request);
  done_ = std::move(done);
  connected_ = false;
  raw_.clear();
  // Errors found here reach `done` from the loop, as every other answer does.
  auto fail_soon = [this](Status error) {
    deadline_ = loop_.After(std::chrono::nanoseconds(0), [this, error](Clock::MonoTime) {
      deadline_ = 0;
      Finish(error);
    });
  };
  Result<HttpTarget> target = ParseHttpTarget(request_.url);
  if (!target.ok()) {
    fail_soon(target.status());
    return;
  }
  if (!request_.body.empty()) {
    fail_soon(InvalidArgumentError("LoopHttpGet sends no request bodies"));
    return;
  }
  out_ = HttpRequestText(request_, *target);
  fd_ = UniqueFd(::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
  if (fd_.get() < 0) {
    fail_soon(InternalError(std::string("socket: ") + std::strerror(errno)));
    return;
  }
  if (::connect(fd_.get(), reinterpret_cast<const sockaddr*>(&target->addr),
                sizeof target->addr) != 0 &&
      errno != EINPROGRESS) {
    fail_soon(UnavailableError(request_.url + ": " + std::strerror(errno)));
    return;
  }
  watch_ = loop_.Watch(fd_.get(), POLLOUT, [this](short revents, Clock::MonoTime) {
    OnReady(revents);
  });
  deadline_ = loop_.After(request_.timeout, [this](Clock::MonoTime) {
    deadline_ = 0;
    Finish(TimeoutError("no answer from " + request_.url + " in time"));
  });
}

void LoopHttpGet::Cancel() {
  if (watch_ != 0) {
    loop_.Remove(watch_);
    watch_ = 0;
  }
  if (deadline_ != 0) {
    loop_.Remove(deadline_);
    deadline_ = 0;
  }
  fd_.Reset();
  done_ = nullptr;
}

void LoopHttpGet::OnReady(short revents) {
  if (!connected_) {
    int err = 0;
    socklen_t len = sizeof err;
    ::getsockopt(fd_.get(), SOL_SOCKET, SO_ERROR, &err, &len);
    if (err != 0 || (revents & POLLOUT) == 0) {
      Finish(UnavailableError(request_.url + ": " + std::strerror(err != 0 ? err : ECONNREFUSED)));
      return;
    }
    connected_ = true;
  }
  if (!out_.empty()) {
    ssize_t n = ::send(fd_.get(), out_.data(), out_.size(), MSG_NOSIGNAL);
    if (n < 0 && errno != EAGAIN && errno != EINTR) {
      Finish(UnavailableError(request_.url + ": " + std::strerror(errno)));
      return;
    }
    out_.erase(0, n > 0 ? static_cast<size_t>(n) : 0);
    loop_.SetEvents(watch_, out_.empty() ? POLLIN : POLLOUT);
    return;
  }
  char buf[16384];
  ssize_t n = ::recv(fd_.get(), buf, sizeof buf, 0);
  if (n < 0) {
    if (errno != EAGAIN && errno != EINTR) {
      Finish(UnavailableError(request_.url + ": " + std::strerror(errno)));
    }
    return;
  }
  if (n == 0 && raw_.empty()) {
    Finish(UnavailableError(request_.url + ": the server closed the connection without an answer"));
    return;
  }
  raw_.append(buf, static_cast<size_t>(n));
  if (n == 0 || HttpAnswerComplete(raw_)) {
    Finish(ParseHttpAnswer(raw_, request_.url));
    return;
  }
  if (Status size = CheckHttpAnswerSize(raw_, request_); !size.ok()) {
    Finish(size);
  }
}

void LoopHttpGet::Finish(Result<HttpResponse> answer) {
  Done done = std::move(done_);
  Cancel();
  raw_.clear();
  if (done) {
    done(std::move(answer));
  }
}

}  // namespace tpufleet::agent::host
