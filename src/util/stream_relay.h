// RelayStreams: what an OpenSSH ProxyCommand does once it has a connection: it copies
// what ssh writes to it (its stdin) to the socket and what the socket sends to its
// stdout, as `ssh -W` or `nc` would, until the server closes the connection.
//
// Thread-safety: one call per set of descriptors; it blocks until the relay ends.
#pragma once

#include "util/status.h"

namespace tpufleet {

/// Relays `in` to `socket` and `socket` to `out` until the socket's end of file (OK).
/// At `in`'s end the socket is shut down for writing and its answers still relayed.
/// Unavailable when the socket fails (reset); Internal when `in` or `out` does (ssh
/// went away). Blocking descriptors; none is closed.
Status RelayStreams(int in, int out, int socket);

}  // namespace tpufleet
