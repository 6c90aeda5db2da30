// The certificates of the team servers this user talks to (`tpufleet --server URL`),
// pinned: $XDG_CONFIG_HOME/tpufleet/known_servers (~/.config/tpufleet/known_servers
// without it), as OpenSSH's known_hosts is for hosts.
//
// One line per server: "HOST:PORT SHA256:…" (the URL's host in lower case, IPv6 in
// brackets; the certificate's Sha256Fingerprint, util/fingerprint.h); '#' starts a comment.
// The file says whom the user trusts, so it is read only when it is a regular file of
// the user's own with no permission for group or others (0600), and written so
// (util/private_file.h, util/file.h WriteFileAtomic); anything else is refused, naming the
// file and what is wrong.
//
// Thread-safety: stateless functions; two processes pinning at once: the last write wins
// (each writes the whole file atomically).
#pragma once

#include <map>
#include <optional>
#include <string>

#include "util/status.h"

namespace tpufleet::remote {

/// The file for `env`'s XDG_CONFIG_HOME or HOME; FailedPrecondition when neither is set.
Result<std::string> KnownServersPath(const std::map<std::string, std::string>& env);

/// The fingerprint pinned for `server` ("host:port") in `path`; nullopt when none is
/// (or there is no file yet). InvalidArgument naming path:line for a line that is not
/// "HOST:PORT SHA256:…".
Result<std::optional<std::string>> PinnedFingerprint(const std::string& path,
                                                     const std::string& server);

/// Pins `fingerprint` for `server` in `path`: the line replaced, or added; the other
/// lines kept as they are. The directory is made (0700) when missing.
Status PinFingerprint(const std::string& path, const std::string& server,
                      const std::string& fingerprint);

}  // namespace tpufleet::remote
