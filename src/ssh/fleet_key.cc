#include "ssh/fleet_key.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>

#include "ssh/openssh.h"
#include "util/encoding.h"
#include "util/file.h"
#include "util/strings.h"

namespace tpufleet {
namespace {

/// ssh-keygen makes an ed25519 key in a few milliseconds; this is for a stalled disk.
constexpr std::chrono::milliseconds kKeygenTimeout{30'000};

/// An OpenSSH ed25519 private key is about 400 bytes; an RSA one of 16384 bits under 13 KiB.
constexpr size_t kMaxKeyFileBytes = 64 * 1024;

constexpr std::string_view kKeyName = "id_ed25519";
constexpr std::string_view kComment = "tpufleet";

// One length-prefixed string of the SSH wire format (RFC 4253 §5) from the front of
// `data`.
bool TakeString(std::string_view& data, std::string_view* out) {
  if (data.size() < 4) {
    return false;
  }
  uint32_t n = (uint32_t{static_cast<unsigned char>(data[0])} << 24) |
               (uint32_t{static_cast<unsigned char>(data[1])} << 16) |
               (uint32_t{static_cast<unsigned char>(data[2])} << 8) |
               uint32_t{static_cast<unsigned char>(data[3])};
  data.remove_prefix(4);
  if (n > data.size()) {
    return false;
  }
  *out = data.substr(0, n);
  data.remove_prefix(n);
  return true;
}

// The public half, "TYPE BASE64", read from the unencrypted header of an OpenSSH
// private key file (PROTOCOL.key), so the .pub file is never trusted to match.
Result<std::string> PublicKeyOf(const std::string& path, std::string_view pem) {
  Status bad = FailedPreconditionError(path +
                                       " is not an OpenSSH private key; move it away "
                                       "and tpufleet will make a new one");
  constexpr std::string_view kBegin = "-----BEGIN OPENSSH PRIVATE KEY-----";
  constexpr std::string_view kEnd = "-----END OPENSSH PRIVATE KEY-----";
  size_t begin = pem.find(kBegin);
  size_t end = pem.find(kEnd);
  if (begin == std::string_view::npos || end == std::string_view::npos || end < begin) {
    return bad;
  }
  std::string body;
  for (char c : pem.substr(begin + kBegin.size(), end - begin - kBegin.size())) {
    if (c != '\n' && c != '\r' && c != ' ') {
      body += c;
    }
  }
  Result<std::string> raw = Base64Decode(body);
  constexpr std::string_view kMagic{"openssh-key-v1\0", 15};
  if (!raw.ok() || !StartsWith(*raw, kMagic)) {
    return bad;
  }
  std::string_view data(*raw);
  data.remove_prefix(kMagic.size());
  std::string_view cipher, kdf, kdf_options, type;
  if (!TakeString(data, &cipher) || !TakeString(data, &kdf) || !TakeString(data, &kdf_options) ||
      data.size() < 4) {
    return bad;
  }
  data.remove_prefix(4);  // the number of keys; the first is the one
  std::string_view blob_view;
  if (!TakeString(data, &blob_view)) {
    return bad;
  }
  std::string_view in_blob = blob_view;
  if (!TakeString(in_blob, &type) || type.empty()) {
    return bad;
  }
  return std::string(type) + " " + Base64Encode(blob_view);
}

// Generates a key pair under a temporary name in `dir` and links it into place. When
// another process got there first, link() fails with EEXIST and its key stands.
Status Generate(const std::string& dir, const std::string& key_path) {
  std::string tmp_template = dir + "/.keygen-XXXXXX";
  if (::mkdtemp(tmp_template.data()) == nullptr) {
    return ErrnoStatus("mkdtemp in " + dir, errno);
  }
  const std::string tmp_dir = tmp_template;
  const std::string tmp_key = tmp_dir + "/" + std::string(kKeyName);
  auto clean_up = [&] {
    ::unlink(tmp_key.c_str());
    ::unlink((tmp_key + ".pub").c_str());
    ::rmdir(tmp_dir.c_str());
  };
  Result<ProgramResult> r = RunOpenSsh(
      {"ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", std::string(kComment), "-f", tmp_key},
      "", kKeygenTimeout);
  if (!r.ok() || r->exit_code != 0) {
    clean_up();
    if (!r.ok()) {
      return r.status();
    }
    return InternalError("ssh-keygen failed (exit " + std::to_string(r->exit_code) +
                         "): " + std::string(Trim(r->output)));
  }
  Status s;
  if (::link(tmp_key.c_str(), key_path.c_str()) == 0) {
    // The .pub is a copy for people; a failure to place it does not matter to tpufleet.
    ::rename((tmp_key + ".pub").c_str(), (key_path + ".pub").c_str());
  } else if (errno != EEXIST) {
    s = ErrnoStatus("link " + key_path, errno);
  }
  clean_up();
  return s;
}

}  // namespace

Result<FleetKey> EnsureFleetKey(const std::string& dir) {
  TPUFLEET_TRY(MakePrivateDirs(dir));
  std::string key_path = dir + "/" + std::string(kKeyName);
  struct stat st;
  if (::lstat(key_path.c_str(), &st) != 0) {
    if (errno != ENOENT) {
      return ErrnoStatus(key_path, errno);
    }
    TPUFLEET_TRY(Generate(dir, key_path));
    if (::lstat(key_path.c_str(), &st) != 0) {
      return ErrnoStatus(key_path, errno);
    }
  }
  // A key someone else owns (or links us to) is theirs to read or swap: never log in
  // with it, nor hand its public half to a node.
  if (!S_ISREG(st.st_mode)) {
    return FailedPreconditionError(key_path + " is not a regular file; move it away and "
                                   "tpufleet will make a new key");
  }
  if (Status s = CheckOwnedByMe(key_path, st, 0); !s.ok()) {
    return FailedPreconditionError(s.message() + "; the fleet key must be yours alone: move "
                                   "it away and tpufleet will make a new one");
  }
  if ((st.st_mode & 077) != 0) {
    char mode[8];
    std::snprintf(mode, sizeof mode, "%04o", static_cast<unsigned>(st.st_mode & 07777));
    return FailedPreconditionError(key_path + ": permissions " + mode +
                                   " are too open; a private key must be readable by its "
                                   "owner only (chmod 600 " +
                                   key_path + ")");
  }
  TPUFLEET_ASSIGN_OR_RETURN(std::string pem, ReadFile(key_path, kMaxKeyFileBytes));
  TPUFLEET_ASSIGN_OR_RETURN(std::string public_key, PublicKeyOf(key_path, pem));
  return FleetKey{key_path, public_key + " " + std::string(kComment)};
}

std::string FleetKeyFiles::PrivateKeyPath() const {
  return dir_ + "/" + std::string(kKeyName);
}

}  // namespace tpufleet
