#include "agent/host/plain_http.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "util/strings.h"
#include "util/unique_fd.h"

namespace tpufleet::agent::host {
namespace {

using Clock = std::chrono::steady_clock;

// Waits until `fd` is ready for `events` or the deadline passes.
Status WaitFor(int fd, short events, Clock::time_point deadline, const std::string& url) {
  while (true) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
    if (left.count() <= 0) {
      return TimeoutError("no answer from " + url + " in time");
    }
    struct pollfd p = {fd, events, 0};
    int n = ::poll(&p, 1, static_cast<int>(left.count()));
    if (n > 0) {
      return Status::Ok();
    }
    if (n < 0 && errno != EINTR) {
      return InternalError(std::string("poll: ") + std::strerror(errno));
    }
  }
}

}  // namespace

Result<HttpTarget> ParseHttpTarget(const std::string& url) {
  constexpr std::string_view kScheme = "http://";
  if (!StartsWith(url, kScheme)) {
    return InvalidArgumentError("only http:// URLs are spoken here: " + url);
  }
  std::string rest = url.substr(kScheme.size());
  size_t slash = rest.find('/');
  HttpTarget t;
  t.host = rest.substr(0, slash);
  t.path = slash == std::string::npos ? "/" : rest.substr(slash);
  std::string ip = t.host;
  long long port = 80;
  if (size_t colon = t.host.find(':'); colon != std::string::npos) {
    ip = t.host.substr(0, colon);
    if (!ParseInt(t.host.substr(colon + 1), &port) || port < 1 || port > 65535) {
      return InvalidArgumentError("bad port in " + url);
    }
  }
  t.addr.sin_family = AF_INET;
  t.addr.sin_port = htons(static_cast<uint16_t>(port));
  if (::inet_pton(AF_INET, ip.c_str(), &t.addr.sin_addr) != 1) {
    return InvalidArgumentError("the host of " + url + " must be an IPv4 address (no DNS here)");
  }
  for (char c : t.path) {
    if (c == '\r' || c == '\n' || c == ' ') {
      return InvalidArgumentError("bad character in the path of " + url);
    }
  }
  return t;
}

std::string HttpRequestText(const HttpRequest& request, const HttpTarget& t) {
  std::string out = request.method + " " + t.path + " HTTP/1.0\r\n";
  bool has_host = false;
  for (const auto& [name, value] : request.headers) {
    has_host = has_host || AsciiLower(name) == "host";
    out += name + ": " + value + "\r\n";
  }
  if (!has_host) {
    out += "Host: " + t.host + "\r\n";
  }
  return out + "\r\n";
}

Status CheckHttpAnswerSize(const std::string& raw, const HttpRequest& request) {
  const size_t max = request.max_response_bytes + kMaxHttpHeaderBytes;
  if (raw.size() > max) {
    return InternalError("the answer from " + request.url + " is larger than " +
                         FormatBytes(max) + "; it was cut off");
  }
  return Status::Ok();
}

bool HttpAnswerComplete(const std::string& raw) {
  size_t head_end = raw.find("\r\n\r\n");
  if (head_end == std::string::npos) {
    return false;
  }
  for (const std::string& line : Split(std::string_view(raw).substr(0, head_end), '\n')) {
    long long length = 0;
    if (AsciiLower(line.substr(0, line.find(':'))) == "content-length" &&
        ParseInt(Trim(line.substr(line.find(':') + 1)), &length)) {
      return raw.size() - head_end - 4 >= static_cast<size_t>(length);
    }
  }
  return false;
}

Result<HttpResponse> ParseHttpAnswer(const std::string& raw, const std::string& url) {
  size_t head_end = raw.find("\r\n\r\n");
  if (head_end == std::string::npos) {
    return InternalError("a malformed answer from " + url);
  }
  std::vector<std::string> lines = Split(std::string_view(raw).substr(0, head_end), '\n');
  std::vector<std::string> status = Split(Trim(lines[0]), ' ');
  long long code = 0;
  if (status.size() < 2 || !StartsWith(status[0], "HTTP/1.") || !ParseInt(status[1], &code)) {
    return InternalError("a malformed status line from " + url);
  }
  HttpResponse r;
  r.status = static_cast<int>(code);
  for (size_t i = 1; i < lines.size(); ++i) {
    size_t colon = lines[i].find(':');
    if (colon != std::string::npos) {
      r.headers[AsciiLower(Trim(std::string_view(lines[i]).substr(0, colon)))] =
          std::string(Trim(std::string_view(lines[i]).substr(colon + 1)));
    }
  }
  r.body = raw.substr(head_end + 4);
  if (auto it = r.headers.find("content-length"); it != r.headers.end()) {
    long long length = 0;
    if (!ParseInt(it->second, &length) || static_cast<size_t>(length) > r.body.size()) {
      return InternalError("the answer from " + url + " ended early");
    }
    r.body.resize(static_cast<size_t>(length));
  }
  return r;
}


Result<HttpResponse> PlainHttpClient::Send(const HttpRequest& request) {
  TPUFLEET_ASSIGN_OR_RETURN(HttpTarget t, ParseHttpTarget(request.url));
  if (!request.body.empty()) {
    return InvalidArgumentError("PlainHttpClient sends no request bodies");
  }
  const Clock::time_point deadline = Clock::now() + request.timeout;
  UniqueFd fd(::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
  if (fd.get() < 0) {
    return InternalError(std::string("socket: ") + std::strerror(errno));
  }
  if (::connect(fd.get(), reinterpret_cast<const sockaddr*>(&t.addr), sizeof t.addr) != 0) {
    if (errno != EINPROGRESS) {
      return UnavailableError(request.url + ": " + std::strerror(errno));
    }
    TPUFLEET_TRY(WaitFor(fd.get(), POLLOUT, deadline, request.url));
    int err = 0;
    socklen_t len = sizeof err;
    ::getsockopt(fd.get(), SOL_SOCKET, SO_ERROR, &err, &len);
    if (err != 0) {
      return UnavailableError(request.url + ": " + std::strerror(err));
    }
  }
  std::string out = HttpRequestText(request, t);
  for (size_t done = 0; done < out.size();) {
    TPUFLEET_TRY(WaitFor(fd.get(), POLLOUT, deadline, request.url));
    ssize_t n = ::send(fd.get(), out.data() + done, out.size() - done, MSG_NOSIGNAL);
    if (n < 0 && errno != EAGAIN && errno != EINTR) {
      return UnavailableError(request.url + ": " + std::strerror(errno));
    }
    done += n > 0 ? static_cast<size_t>(n) : 0;
  }
  std::string raw;
  char buf[16384];
  while (true) {
    TPUFLEET_TRY(WaitFor(fd.get(), POLLIN, deadline, request.url));
    ssize_t n = ::recv(fd.get(), buf, sizeof buf, 0);
    if (n == 0) {
      break;
    }
    if (n < 0) {
      if (errno == EAGAIN || errno == EINTR) {
        continue;
      }
      return UnavailableError(request.url + ": " + std::strerror(errno));
    }
    raw.append(buf, static_cast<size_t>(n));
    if (HttpAnswerComplete(raw)) {
      break;  // a server that keeps the connection open has said all it will
    }
    TPUFLEET_TRY(CheckHttpAnswerSize(raw, request));
  }
  return ParseHttpAnswer(raw, request.url);
}

}  // namespace tpufleet::agent::host
