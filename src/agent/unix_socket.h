// What serve, call and attach share about Unix sockets and writing.
//
// Thread-safety: stateless.
#pragma once

#include <sys/un.h>

#include <string>
#include <string_view>

#include "util/status.h"

namespace tpufleet::agent {

/// The address of the socket at `path`; InvalidArgument when the path does not fit.
Result<sockaddr_un> UnixAddress(const std::string& path);

/// Writes all of `data` to `fd` (blocking), retrying EINTR; false when it cannot.
bool WriteAll(int fd, std::string_view data);

}  // namespace tpufleet::agent
