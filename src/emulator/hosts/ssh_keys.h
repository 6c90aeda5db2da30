// The `ssh-keys` metadata value, as the guest agent of a TPU VM reads it.
//
// One entry per line, `user:key`, where key is `<type> <base64> [comment]`, e.g.
// `alice:ssh-ed25519 AAAAC3Nz… alice` (what `gcloud compute tpus tpu-vm ssh` adds). The
// value comes from whoever may patch the node, so it is untrusted: user names must match
// `[a-z_][a-z0-9_-]{0,31}`, the key type must be a known OpenSSH public key type, the
// blob must be base64, and no authorized_keys options can be smuggled in (the line
// written is rebuilt from those three parts). Anything else is skipped, not fatal, as
// the real agent does.
//
// Thread-safety: pure functions.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace tpufleet::emulator::hosts {

struct SshKeyEntry {
  std::string user;  // "alice"
  std::string key;   // "ssh-ed25519 AAAA… alice": one authorized_keys line, no options
};

/// True for a name the guest agent may create: `[a-z_][a-z0-9_-]{0,31}`.
bool IsValidUserName(std::string_view name);

/// The entries of an ssh-keys value, in order. Lines that are blank or start with '#'
/// are ignored; invalid ones are skipped and, if `skipped` is given, described there
/// ("line 3: bad user name \"Bob\"").
std::vector<SshKeyEntry> ParseSshKeys(std::string_view text,
                                      std::vector<std::string>* skipped = nullptr);

}  // namespace tpufleet::emulator::hosts
