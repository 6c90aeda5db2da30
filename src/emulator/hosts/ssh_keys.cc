#include "emulator/hosts/ssh_keys.h"

#include <algorithm>
#include <array>

#include "util/strings.h"

namespace tpufleet::emulator::hosts {
namespace {

// The longest base64 blob accepted: an RSA-16384 key is ~2.8 KB of base64; 16 KiB is
// far beyond any real key and keeps a hostile value from bloating authorized_keys.
constexpr size_t kMaxBlobLength = 16 * 1024;
// The shortest real blob (ed25519) is 68 characters; anything much shorter is junk.
constexpr size_t kMinBlobLength = 16;
constexpr size_t kMaxCommentLength = 1024;

constexpr std::array<std::string_view, 9> kKeyTypes = {
    "ssh-ed25519",
    "ssh-rsa",
    "ecdsa-sha2-nistp256",
    "ecdsa-sha2-nistp384",
    "ecdsa-sha2-nistp521",
    "sk-ssh-ed25519@openssh.com",
    "sk-ecdsa-sha2-nistp256@openssh.com",
    "ssh-ed25519-cert-v01@openssh.com",
    "ssh-rsa-cert-v01@openssh.com",
};

bool IsBase64(std::string_view s) {
  size_t padding = 0;
  for (char c : s) {
    bool alnum = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
    if (c == '=') {
      ++padding;
    } else if (padding > 0 || !(alnum || c == '+' || c == '/')) {
      return false;
    }
  }
  return padding <= 2;
}

std::string Quote(std::string_view s) {
  std::string out = "\"";
  for (char c : s.substr(0, 40)) {
    out += (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) ? '?' : c;
  }
  return out + (s.size() > 40 ? "…\"" : "\"");
}

}  // namespace

bool IsValidUserName(std::string_view name) {
  if (name.empty() || name.size() > 32) {
    return false;
  }
  if (!((name[0] >= 'a' && name[0] <= 'z') || name[0] == '_')) {
    return false;
  }
  return std::all_of(name.begin(), name.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' || c == '-';
  });
}

std::vector<SshKeyEntry> ParseSshKeys(std::string_view text, std::vector<std::string>* skipped) {
  std::vector<SshKeyEntry> out;
  int line_no = 0;
  auto skip = [&](const std::string& why) {
    if (skipped != nullptr) {
      skipped->push_back("line " + std::to_string(line_no) + ": " + why);
    }
  };
  for (const std::string& raw : Split(text, '\n')) {
    ++line_no;
    std::string_view line = Trim(raw);
    if (line.empty() || line[0] == '#') {
      continue;
    }
    size_t colon = line.find(':');
    if (colon == std::string_view::npos) {
      skip("no \"user:\" prefix");
      continue;
    }
    std::string_view user = line.substr(0, colon);
    if (!IsValidUserName(user)) {
      skip("bad user name " + Quote(user));
      continue;
    }
    std::string_view rest = Trim(line.substr(colon + 1));
    // Split "<type> <blob> [comment]" on runs of blanks.
    std::vector<std::string_view> parts;
    size_t i = 0;
    while (i < rest.size() && parts.size() < 2) {
      size_t end = rest.find_first_of(" \t", i);
      if (end == std::string_view::npos) {
        end = rest.size();
      }
      parts.push_back(rest.substr(i, end - i));
      i = rest.find_first_not_of(" \t", end);
      if (i == std::string_view::npos) {
        i = rest.size();
      }
    }
    std::string_view comment = i < rest.size() ? rest.substr(i) : std::string_view();
    if (parts.size() < 2) {
      skip("no key after \"" + std::string(user) + ":\"");
      continue;
    }
    if (std::find(kKeyTypes.begin(), kKeyTypes.end(), parts[0]) == kKeyTypes.end()) {
      skip("unknown key type " + Quote(parts[0]));
      continue;
    }
    if (parts[1].size() < kMinBlobLength || parts[1].size() > kMaxBlobLength ||
        !IsBase64(parts[1])) {
      skip("key of " + std::string(user) + " is not base64");
      continue;
    }
    std::string clean_comment;
    for (char c : comment.substr(0, kMaxCommentLength)) {
      if (c == '\t') {
        clean_comment += ' ';
      } else if (static_cast<unsigned char>(c) >= 0x20 && c != 0x7f) {
        clean_comment += c;
      }
    }
    SshKeyEntry e;
    e.user = std::string(user);
    e.key = std::string(parts[0]) + " " + std::string(parts[1]);
    if (!clean_comment.empty()) {
      e.key += " " + clean_comment;
    }
    out.push_back(std::move(e));
  }
  return out;
}

}  // namespace tpufleet::emulator::hosts
