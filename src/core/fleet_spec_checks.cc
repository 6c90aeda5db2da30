// The single-value checks of fleet_spec.h (names, SSH keys, labels, host addresses):
// strict, because these strings later reach shells, authorized_keys files and argv.
#include <arpa/inet.h>

#include <algorithm>
#include <string>
#include <vector>

#include "core/fleet_spec.h"
#include "util/encoding.h"
#include "util/strings.h"

namespace tpufleet {
namespace {

bool IsLower(char c) {
  return c >= 'a' && c <= 'z';
}
bool IsDigit(char c) {
  return c >= '0' && c <= '9';
}

}  // namespace

std::string QuoteForMessage(std::string_view s) {
  constexpr size_t kMaxShown = 64;
  std::string out = "\"";
  for (size_t i = 0; i < s.size() && i < kMaxShown; ++i) {
    unsigned char c = static_cast<unsigned char>(s[i]);
    if (c < 0x20 || c == 0x7f) {
      const char* hex = "0123456789abcdef";
      out += std::string("\\x") + hex[c >> 4] + hex[c & 15];
    } else {
      if (c == '"' || c == '\\') {
        out += '\\';
      }
      out += static_cast<char>(c);
    }
  }
  return out + (s.size() > kMaxShown ? "...\"" : "\"");
}

// Cloud TPU node ids follow the GCE resource-name rule, [a-z]([-a-z0-9]*[a-z0-9])?.
Status CheckNodeName(std::string_view name, int count) {
  const std::string rule =
      "use a lowercase letter, then lowercase letters, digits and "
      "hyphens, not ending in a hyphen";
  if (name.empty() || !IsLower(name.front())) {
    return InvalidArgumentError(QuoteForMessage(name) +
                                " must start with a lowercase "
                                "letter; " +
                                rule);
  }
  for (char c : name) {
    if (!IsLower(c) && !IsDigit(c) && c != '-') {
      return InvalidArgumentError(QuoteForMessage(name) +
                                  " has a character that is not "
                                  "allowed; " +
                                  rule);
    }
  }
  if (name.back() == '-') {
    return InvalidArgumentError(QuoteForMessage(name) + " ends in a hyphen; " + rule);
  }
  size_t suffix = count > 1 ? 1 + std::to_string(count - 1).size() : 0;
  if (name.size() + suffix > 63) {
    return InvalidArgumentError(
        QuoteForMessage(name) + " is too long: a name has at most 63 characters" +
        (suffix ? ", and with count " + std::to_string(count) + " tpufleet adds \"-" +
                      std::to_string(count - 1) + "\", so at most " + std::to_string(63 - suffix)
                : std::string()));
  }
  return Status::Ok();
}

Status CheckLoginName(std::string_view name) {
  auto first_ok = [](char c) { return IsLower(c) || c == '_'; };
  auto rest_ok = [](char c) { return IsLower(c) || IsDigit(c) || c == '_' || c == '-'; };
  if (name.empty() || name.size() > 32 || !first_ok(name.front()) ||
      !std::all_of(name.begin(), name.end(), rest_ok)) {
    return InvalidArgumentError(QuoteForMessage(name) +
                                " is not a valid user name: 1 to 32 characters, a lowercase "
                                "letter or _ first, then lowercase letters, digits, _ and -");
  }
  return Status::Ok();
}

Status CheckUserName(std::string_view name) {
  // Accounts that Ubuntu TPU images already have, and tpufleet's own.
  // clang-format off
  static constexpr std::string_view kReserved[] = {
      "root", "daemon", "bin", "sys", "sync", "games", "man", "lp", "mail", "news", "uucp",
      "proxy", "www-data", "backup", "list", "irc", "gnats", "nobody", "sshd", "syslog",
      "messagebus", "_apt", "polkitd", "systemd-network", "systemd-resolve",
      "systemd-timesync", "tpufleet"};
  // clang-format on
  TPUFLEET_TRY(CheckLoginName(name));
  if (std::find(std::begin(kReserved), std::end(kReserved), name) != std::end(kReserved)) {
    return InvalidArgumentError(QuoteForMessage(name) +
                                " is a system account on TPU VMs; choose a person's name");
  }
  return Status::Ok();
}

namespace {

// Splits an SSH wire-format blob into its length-prefixed strings; false when the
// lengths do not add up to the blob exactly.
bool SplitSshBlob(std::string_view blob, std::vector<std::string_view>* fields) {
  while (!blob.empty()) {
    if (blob.size() < 4) {
      return false;
    }
    size_t n = (static_cast<size_t>(static_cast<unsigned char>(blob[0])) << 24) |
               (static_cast<size_t>(static_cast<unsigned char>(blob[1])) << 16) |
               (static_cast<size_t>(static_cast<unsigned char>(blob[2])) << 8) |
               static_cast<size_t>(static_cast<unsigned char>(blob[3]));
    if (n > blob.size() - 4) {
      return false;
    }
    fields->push_back(blob.substr(4, n));
    blob.remove_prefix(4 + n);
  }
  return true;
}

}  // namespace

Status CheckSshPublicKey(std::string_view key) {
  // The base64 part is the key in SSH wire format (RFC 4253 6.6, RFC 5656 3.1, and
  // OpenSSH's PROTOCOL.u2f): length-prefixed strings, the first naming the type.
  // Key type -> how many strings its blob holds, and the curve name when it has one.
  struct KeyType {
    std::string_view name;
    size_t fields;
    std::string_view curve;
  };
  static constexpr KeyType kTypes[] = {
      {"ssh-ed25519", 2, ""},
      {"ssh-rsa", 3, ""},
      {"ecdsa-sha2-nistp256", 3, "nistp256"},
      {"ecdsa-sha2-nistp384", 3, "nistp384"},
      {"ecdsa-sha2-nistp521", 3, "nistp521"},
      {"sk-ssh-ed25519@openssh.com", 3, ""},
      {"sk-ecdsa-sha2-nistp256@openssh.com", 4, "nistp256"},
  };
  if (key.size() > kMaxSshKeyBytes) {
    return InvalidArgumentError("the key is " + std::to_string(key.size()) +
                                " bytes; a public key line is at most 8 KiB");
  }
  for (char c : key) {
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) {
      // A newline here would let one "key" add a second line to authorized_keys.
      return InvalidArgumentError(
          "the key contains a line break or control character; give "
          "one key per list item");
    }
  }
  if (key.find("PRIVATE KEY") != std::string_view::npos) {
    return InvalidArgumentError(
        "this is a private key; give the public key (the .pub file) "
        "and keep the private key secret");
  }
  std::vector<std::string> words;
  for (const std::string& w : Split(Trim(key), ' ')) {
    if (!w.empty()) {
      words.push_back(w);
    }
  }
  std::vector<std::string> names;
  const KeyType* type = nullptr;
  for (const KeyType& t : kTypes) {
    names.emplace_back(t.name);
    if (!words.empty() && words[0] == t.name) {
      type = &t;
    }
  }
  std::string expected =
      "expected an OpenSSH public key line: TYPE BASE64 [COMMENT], as in "
      "~/.ssh/id_ed25519.pub";
  if (words.empty()) {
    return InvalidArgumentError(expected);
  }
  if (type == nullptr) {
    bool options =
        words[0].find('=') != std::string::npos || words[0].find(',') != std::string::npos;
    return InvalidArgumentError((options ? "options before the key type are not accepted; "
                                         : "unknown key type " + QuoteForMessage(words[0]) +
                                               DidYouMean(words[0], names) + "; ") +
                                expected + " with TYPE one of " + Join(names, ", "));
  }
  Result<std::string> blob = Base64Decode(words.size() < 2 ? std::string_view() : words[1]);
  if (!blob.ok()) {
    return InvalidArgumentError("the key data after " + words[0] +
                                " is not base64; was the key cut short when pasted?");
  }
  std::vector<std::string_view> fields;
  if (!SplitSshBlob(*blob, &fields) || fields.empty()) {
    return InvalidArgumentError(
        "the key data is damaged or cut short (it does not decode to "
        "an SSH key); paste the whole line of the .pub file");
  }
  if (fields[0] != type->name) {
    return InvalidArgumentError("the line says " + std::string(type->name) +
                                " but the key data is a " + std::string(fields[0]) +
                                " key; paste the line of the .pub file unchanged");
  }
  if (fields.size() != type->fields || (!type->curve.empty() && fields[1] != type->curve) ||
      (type->name.find("ed25519") != std::string_view::npos && fields[1].size() != 32)) {
    return InvalidArgumentError("the key data is damaged or cut short (a " +
                                std::string(type->name) +
                                " key does not look like this); paste "
                                "the whole line of the .pub file");
  }
  return Status::Ok();
}

Status CheckDiskName(std::string_view name) {
  bool ok = !name.empty() && name.size() <= 63 && std::all_of(name.begin(), name.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-';
  });
  return ok ? Status::Ok()
            : InvalidArgumentError("expected a disk name: lowercase letters, digits and '-', "
                                   "at most 63, not " + QuoteForMessage(name));
}

// Places a data disk must not cover: the system's own, and where the worker's tools,
// users and the agent keep their files.
constexpr std::string_view kSystemDirs[] = {"/bin",  "/boot", "/dev", "/etc", "/lib", "/lib32",
                                            "/lib64", "/proc", "/run", "/sbin", "/sys", "/usr",
                                            "/var",  "/tmp",  "/root", "/home"};

Status CheckMountPath(std::string_view path) {
  std::vector<std::string> parts = Split(path, '/');
  bool clean = path.size() > 1 && path.size() <= 255 && path[0] == '/' && path.back() != '/' &&
               std::all_of(parts.begin() + 1, parts.end(), [](const std::string& p) {
                 return !p.empty() && p != "." && p != ".." &&
                        std::all_of(p.begin(), p.end(), [](char c) {
                          return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
                                 (c >= '0' && c <= '9') || c == '-' || c == '_' || c == '.';
                        });
               });
  if (!clean) {
    return InvalidArgumentError(
        "expected an absolute directory such as /data or /mnt/disks/imagenet (letters, "
        "digits, '-', '_' and '.', no '..', no trailing '/'), not " + QuoteForMessage(path));
  }
  for (std::string_view dir : kSystemDirs) {
    if (path == dir || StartsWith(path, std::string(dir) + "/")) {
      return InvalidArgumentError("a disk must not be mounted over " + std::string(dir) +
                                  ": choose a directory of its own, such as /data or "
                                  "/mnt/disks/NAME");
    }
  }
  return Status::Ok();
}

Status CheckLabelKey(std::string_view key) {
  auto ok = [](char c) { return IsLower(c) || IsDigit(c) || c == '_' || c == '-'; };
  if (key.empty() || key.size() > 63 || !IsLower(key.front()) ||
      !std::all_of(key.begin(), key.end(), ok)) {
    return InvalidArgumentError("label key " + QuoteForMessage(key) +
                                " is not valid: a "
                                "lowercase letter, then lowercase letters, digits, _ and -, at "
                                "most 63 characters");
  }
  if (StartsWith(key, "tpufleet")) {
    return InvalidArgumentError(
        "label keys starting with \"tpufleet\" are reserved for the "
        "labels tpufleet sets itself");
  }
  return Status::Ok();
}

Status CheckLabelValue(std::string_view value) {
  auto ok = [](char c) { return IsLower(c) || IsDigit(c) || c == '_' || c == '-'; };
  if (value.empty() || value.size() > 63 || !std::all_of(value.begin(), value.end(), ok)) {
    return InvalidArgumentError("label value " + QuoteForMessage(value) +
                                " is not valid: "
                                "lowercase letters, digits, _ and -, 1 to 63 characters");
  }
  return Status::Ok();
}

Status CheckHostAddress(std::string_view host) {
  std::string h(host);
  unsigned char buf[16];
  // Only IPv6 has colons; "host:22" is the likely mistake, hence the hint.
  if (h.find(':') != std::string::npos) {
    if (inet_pton(AF_INET6, h.c_str(), buf) == 1) {
      return Status::Ok();
    }
    return InvalidArgumentError(QuoteForMessage(h) +
                                " is not an IPv6 address (give the port in the "
                                "port field, not after a colon)");
  }
  if (inet_pton(AF_INET, h.c_str(), buf) == 1) {
    return Status::Ok();
  }
  // A DNS name (RFC 1123): dot-separated labels of letters, digits and inner hyphens.
  // The leading-letter rule also keeps "-oProxyCommand=..." from reaching ssh's argv.
  bool valid = !h.empty() && h.size() <= 253;
  for (const std::string& label : Split(h, '.')) {
    auto ok = [](char c) { return IsLower(c) || (c >= 'A' && c <= 'Z') || IsDigit(c) || c == '-'; };
    valid = valid && !label.empty() && label.size() <= 63 && label.front() != '-' &&
            label.back() != '-' && std::all_of(label.begin(), label.end(), ok);
  }
  if (!valid) {
    return InvalidArgumentError(QuoteForMessage(h) + " is not a host name or IP address");
  }
  return Status::Ok();
}

}  // namespace tpufleet
