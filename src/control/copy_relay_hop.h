// The program each worker of cp's relay chain runs (python3 -c), kept apart from
// copy.cc because it is long. Its interface (argv, stdin, what it prints) is below;
// control/copy.cc builds the command lines and reads the output.
//
// The relay hop, run with python3 on every worker of the chain. argv (nothing secret):
// dest, name, size, mode (octal), port, my index, the chain's addresses (comma-separated),
// and in seconds the hop wait, the accept wait, the handshake timeout, the I/O timeout and
// the deadline. stdin: "KEY DIGEST\n" (hex: the copy's key and the source's SHA-256), then
// for the first hop the file. It listens on its own address (unless first) and connects
// on to the next worker that answers. Each connection starts with a challenge/response:
// the connector sends a nonce, the listener answers with its own nonce and an HMAC over
// both, and only then does the connector prove the key the same way and send data; so
// nothing is read from or sent to a party that does not hold the key. The listener serves
// several connections at once, each with the handshake timeout, so a silent connector
// delays nobody. It copies upstream to a private temporary file and downstream, checks
// the SHA-256 against DIGEST before the rename (a mismatch deletes the file), and prints
// the digest; each connection that fails to prove the key, and a mismatch, is a
// TPUFLEET-RELAY-ALERT line.
#pragma once

namespace tpufleet {

extern const char* const kRelayHopProgram;

}  // namespace tpufleet
