#include "server/token.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>

#include "util/file.h"
#include "util/secret.h"
#include "util/strings.h"
#include "util/unique_fd.h"

namespace tpufleet::server {
namespace {

// A token line is the prefix and 43 characters; anything much longer is not ours.
constexpr size_t kMaxTokenFileBytes = 256;

// The token in `path`, checked as the header says; NotFound when there is no file.
Result<std::string> ReadToken(const std::string& path) {
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK));
  if (fd.get() < 0) {
    if (errno == ELOOP) {
      return FailedPreconditionError(path + " is a symbolic link; serve's token must be a "
                                            "file of its own");
    }
    return ErrnoStatus(path, errno);
  }
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0) {
    return ErrnoStatus(path, errno);
  }
  if (!S_ISREG(st.st_mode)) {
    return FailedPreconditionError(path + " is not a regular file");
  }
  TPUFLEET_TRY(CheckOwnedByMe(path, st, 077));
  char buf[kMaxTokenFileBytes];
  ssize_t n;
  do {
    n = ::read(fd.get(), buf, sizeof buf);
  } while (n < 0 && errno == EINTR);
  if (n < 0) {
    return ErrnoStatus(path, errno);
  }
  std::string token(Trim(std::string_view(buf, static_cast<size_t>(n))));
  if (token.rfind(kServeTokenPrefix, 0) != 0 || token.size() <= kServeTokenPrefix.size() ||
      token.find_first_of(" \t\r\n") != std::string::npos) {
    return InvalidArgumentError(path + " does not hold a serve token; remove it and serve "
                                       "makes a new one");
  }
  return token;
}

}  // namespace

std::string ServeTokenPath(const std::string& state_dir) {
  return state_dir + "/serve/token";
}

Result<std::string> LoadOrMakeServeToken(const std::string& state_dir) {
  TPUFLEET_TRY(MakePrivateDirs(state_dir + "/serve"));
  std::string path = ServeTokenPath(state_dir);
  Result<std::string> token = ReadToken(path);
  if (token.ok() || token.status().code() != StatusCode::kNotFound) {
    return token;
  }
  TPUFLEET_ASSIGN_OR_RETURN(std::string fresh, NewSecretToken(kServeTokenPrefix));
  TPUFLEET_TRY(WriteFileAtomic(path, fresh + "\n", 0600));
  return fresh;
}

}  // namespace tpufleet::server
