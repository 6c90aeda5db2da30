// The TLS identity of `tpufleet serve`'s API: a certificate and its private key, made by
// serve itself at first start (STATE/serve/tls.crt and tls.key) unless the operator
// gives one (--tls-cert FILE --tls-key FILE).
//
// What serve makes: an ECDSA P-256 key and a self-signed certificate (SHA-256, ten years)
// whose subjectAltName lists the names a client may use for this machine: localhost,
// 127.0.0.1, ::1, the --listen address when it is a specific one, and the host name when
// serve listens on every address. The pair is kept across restarts: clients pin the
// certificate on first use (remote/known_servers.h), and a new one would be refused by
// every one of them. A later --listen on another address keeps the same certificate
// (tpufleet's clients pin it rather than check names).
//
// The key is a credential, as the token is (token.h): STATE/serve must be the running
// user's and writable by no one else, and the key a regular file of the running user
// with no permission for its group or others (0600); a given --tls-key is held to the
// same. Anything else is refused with a message naming the path and what is wrong.
//
// Thread-safety: stateless functions.
#pragma once

#include <string>
#include <vector>

#include "util/status.h"

namespace tpufleet::server {

/// Validity of the certificate serve makes: clients pin it rather than let it expire.
inline constexpr int kServeCertificateDays = 3650;

struct TlsIdentity {
  std::string cert_pem;     // the certificate, then any chain certificates given with it
  std::string key_pem;      // its private key (PKCS #8)
  std::string fingerprint;  // "SHA256:…" of the (first) certificate's DER bytes
  std::string cert_path;    // where it was read or written
};

/// STATE/serve/tls.crt and STATE/serve/tls.key.
std::string ServeCertPath(const std::string& state_dir);
std::string ServeKeyPath(const std::string& state_dir);

/// The subjectAltName entries of the certificate serve makes for `listen_address`
/// ("DNS:localhost", "IP:127.0.0.1", …), `host_name` being this machine's.
std::vector<std::string> ServeCertificateNames(const std::string& listen_address,
                                               const std::string& host_name);

/// The identity in STATE/serve, made (key 0600, certificate 0644) when neither file
/// exists, or when one of the two is missing (an interrupted first start). Errors: as
/// the header says for the directory and the key; InvalidArgument when a file holds no
/// PEM certificate or key, or the key is not the certificate's.
Result<TlsIdentity> LoadOrMakeServeIdentity(const std::string& state_dir,
                                            const std::vector<std::string>& names);

/// The identity of --tls-cert `cert_path` (PEM: the certificate, then its chain) and
/// --tls-key `key_path` (PEM, unencrypted, private as the header says).
Result<TlsIdentity> LoadTlsIdentity(const std::string& cert_path, const std::string& key_path);

}  // namespace tpufleet::server
