#include "control/tar_guard.h"

#include <algorithm>
#include <cstdio>
#include <cstring>

#include "util/strings.h"

namespace tpufleet {
namespace {

constexpr size_t kBlock = 512;
// Offsets and widths in a ustar header (POSIX.1-1988; GNU tar's format shares them).
constexpr size_t kNameAt = 0, kNameLen = 100;
constexpr size_t kModeAt = 100, kModeLen = 8;
constexpr size_t kSizeAt = 124, kSizeLen = 12;
constexpr size_t kSumAt = 148, kSumLen = 8;
constexpr size_t kTypeAt = 156;
constexpr size_t kLinkAt = 157, kLinkLen = 100;
constexpr size_t kMagicAt = 257;
constexpr size_t kPrefixAt = 345, kPrefixLen = 155;

uint64_t Padded(uint64_t size) { return (size + kBlock - 1) / kBlock * kBlock; }

// A NUL-terminated field of at most `len` bytes.
std::string Field(const std::string& b, size_t at, size_t len) {
  const char* p = b.data() + at;
  return std::string(p, strnlen(p, len));
}

// An octal field (spaces and NULs around it), or GNU's base-256 when the top bit is set.
bool Number(const std::string& b, size_t at, size_t len, uint64_t* out) {
  const auto* p = reinterpret_cast<const unsigned char*>(b.data() + at);
  uint64_t v = 0;
  if (p[0] & 0x80) {
    if (p[0] != 0x80) {
      return false;  // negative, or too large for us
    }
    for (size_t i = 1; i < len; ++i) {
      if (v >> 56) {
        return false;
      }
      v = (v << 8) | p[i];
    }
    *out = v;
    return true;
  }
  size_t i = 0;
  while (i < len && p[i] == ' ') {
    ++i;
  }
  bool any = false;
  for (; i < len && p[i] >= '0' && p[i] <= '7'; ++i) {
    if (v >> 60) {
      return false;
    }
    v = v * 8 + (p[i] - '0');
    any = true;
  }
  for (; i < len; ++i) {
    if (p[i] != ' ' && p[i] != '\0') {
      return false;
    }
  }
  *out = v;
  return any;
}

uint64_t Checksum(const std::string& b) {
  uint64_t sum = 0;
  for (size_t i = 0; i < kBlock; ++i) {
    sum += (i >= kSumAt && i < kSumAt + kSumLen) ? ' ' : static_cast<unsigned char>(b[i]);
  }
  return sum;
}

// The components of a relative name, without "." and empty ones; nullopt-like false for
// an absolute name or one with "..".
bool Components(const std::string& name, std::vector<std::string>* out) {
  if (!name.empty() && name[0] == '/') {
    return false;
  }
  out->clear();
  for (const std::string& c : Split(name, '/')) {
    if (c == "..") {
      return false;
    }
    if (!c.empty() && c != ".") {
      out->push_back(c);
    }
  }
  return true;
}

std::string Quoted(const std::string& name) { return "'" + name + "'"; }

}  // namespace

Status TarGuard::Feed(std::string_view in, std::string& out) {
  if (!error_.ok()) {
    return error_;
  }
  while (!in.empty()) {
    if (state_ == State::kData) {
      size_t n = static_cast<size_t>(std::min<uint64_t>(in.size(), data_left_));
      if (meta_left_ > 0) {
        size_t m = static_cast<size_t>(std::min<uint64_t>(n, meta_left_));
        meta_.append(in.substr(0, m));
        meta_left_ -= m;
      }
      out.append(in.substr(0, n));
      in.remove_prefix(n);
      data_left_ -= n;
      if (data_left_ == 0) {
        state_ = State::kHeader;
      }
      continue;
    }
    size_t n = std::min(in.size(), kBlock - block_.size());
    block_.append(in.substr(0, n));
    in.remove_prefix(n);
    if (block_.size() == kBlock) {
      Status s = Header(block_);
      if (!s.ok()) {
        error_ = s;
        return s;
      }
      out.append(block_);
      block_.clear();
    }
  }
  return Status::Ok();
}

Status TarGuard::Header(std::string& b) {
  if (std::all_of(b.begin(), b.end(), [](char c) { return c == '\0'; })) {
    return Status::Ok();  // the end-of-archive blocks
  }
  uint64_t sum = 0;
  if (!Number(b, kSumAt, kSumLen, &sum) || sum != Checksum(b)) {
    return InvalidArgumentError("what the worker sent is not a tar stream (a header's checksum "
                                "is wrong)");
  }
  uint64_t size = 0;
  if (!Number(b, kSizeAt, kSizeLen, &size)) {
    return InvalidArgumentError("what the worker sent is not a tar stream (a size is unreadable)");
  }
  // What the previous header(s) said about this entry.
  if (meta_type_ != 0) {
    std::string meta = meta_;
    if (meta_type_ == 'L' || meta_type_ == 'K') {
      (meta_type_ == 'L' ? long_name_ : long_link_) = meta.substr(0, strnlen(meta.data(), meta.size()));
    } else {  // pax: "LEN KEY=VALUE\n" records
      for (size_t at = 0; at < meta.size();) {
        size_t space = meta.find(' ', at);
        long long len = 0;
        if (space == std::string::npos || space < at ||
            !ParseInt(std::string_view(meta).substr(at, space - at), &len) || len <= 0 ||
            at + static_cast<size_t>(len) > meta.size() || space + 1 >= at + static_cast<size_t>(len)) {
          return InvalidArgumentError("what the worker sent holds a broken pax header");
        }
        std::string record = meta.substr(space + 1, at + static_cast<size_t>(len) - space - 2);
        at += static_cast<size_t>(len);
        size_t eq = record.find('=');
        std::string key = record.substr(0, eq), value = eq == std::string::npos ? "" : record.substr(eq + 1);
        if (key == "path") {
          long_name_ = value;
        } else if (key == "linkpath") {
          long_link_ = value;
        } else if (key == "size") {
          long long v = 0;
          if (!ParseInt(value, &v) || v < 0) {
            return InvalidArgumentError("what the worker sent holds a broken pax size");
          }
          size = static_cast<uint64_t>(v);
        } else if (StartsWith(key, "GNU.sparse")) {
          return InvalidArgumentError("what the worker sent holds a sparse file, which is "
                                      "never unpacked here");
        }
      }
    }
    meta_type_ = 0;
    meta_.clear();
  }
  const char type = b[kTypeAt];
  if (type == 'L' || type == 'K' || type == 'x') {
    if (size > kTarMaxMetaBytes) {
      return InvalidArgumentError("what the worker sent holds a long name or pax header of " +
                                  std::to_string(size) + " bytes");
    }
    meta_type_ = type;
    meta_left_ = size;
    data_left_ = Padded(size);
    state_ = data_left_ ? State::kData : State::kHeader;
    return Status::Ok();
  }
  std::string name = long_name_;
  if (name.empty()) {
    name = Field(b, kNameAt, kNameLen);
    if (std::memcmp(b.data() + kMagicAt, "ustar\0", 6) == 0) {
      std::string prefix = Field(b, kPrefixAt, kPrefixLen);
      if (!prefix.empty()) {
        name = prefix + "/" + name;
      }
    }
  }
  std::string link = long_link_.empty() ? Field(b, kLinkAt, kLinkLen) : long_link_;
  long_name_.clear();
  long_link_.clear();
  TPUFLEET_TRY(Check(type, name, link));
  // Links and directories carry no data; one that claims some could hide a header from
  // this reader that tar would read, or the other way round.
  const bool regular = type == '0' || type == '\0' || type == '7';
  if (!regular && size != 0) {
    return InvalidArgumentError(Quoted(name) + " from the worker is a link or directory that "
                                "claims data; refused");
  }
  uint64_t mode = 0;
  if (Number(b, kModeAt, kModeLen, &mode) && (mode & 07000) != 0) {
    char field[kModeLen + 1];
    std::snprintf(field, sizeof field, "%07o", static_cast<unsigned>(mode & 0777));
    std::memcpy(b.data() + kModeAt, field, kModeLen);  // 7 digits and the NUL
    char sum_field[kSumLen + 1];
    std::snprintf(sum_field, sizeof sum_field, "%06o", static_cast<unsigned>(Checksum(b)));
    std::memcpy(b.data() + kSumAt, sum_field, 7);  // 6 digits and the NUL
    b[kSumAt + 7] = ' ';
  }
  data_left_ = regular ? Padded(size) : 0;
  meta_left_ = 0;
  state_ = data_left_ ? State::kData : State::kHeader;
  return Status::Ok();
}

Status TarGuard::Check(char type, const std::string& name, const std::string& link) {
  const char* what = nullptr;
  switch (type) {
    case '0': case '\0': case '7': case '5': case '1': case '2':
      break;
    case '3': what = "a character device"; break;
    case '4': what = "a block device"; break;
    case '6': what = "a fifo"; break;
    case 'S': what = "a sparse file"; break;
    case 'g': what = "a pax global header"; break;
    default: what = "an entry of an unknown type"; break;
  }
  if (what != nullptr) {
    return InvalidArgumentError(Quoted(name) + " from the worker is " + what +
                                "; only files, directories and links inside what was copied "
                                "are unpacked");
  }
  std::vector<std::string> parts;
  if (!Components(name, &parts)) {
    return InvalidArgumentError(Quoted(name) + " from the worker is absolute or holds '..'; refused");
  }
  auto below_symlink = [&](const std::vector<std::string>& p, size_t upto) -> std::string {
    std::string path;
    for (size_t k = 0; k < upto; ++k) {
      path += (k ? "/" : "") + p[k];
      if (symlinks_.count(path)) {
        return path;
      }
    }
    return "";
  };
  if (parts.size() > 1) {
    if (std::string s = below_symlink(parts, parts.size() - 1); !s.empty()) {
      return InvalidArgumentError(Quoted(name) + " from the worker is below the symlink " +
                                  Quoted(s) + "; refused");
    }
  }
  const std::string joined = Join(parts, "/");
  if (type == '2') {
    auto outside = [&](const std::string& why) {
      return InvalidArgumentError(Quoted(name) + " from the worker is a symlink to " + Quoted(link) +
                                  ", " + why + "; refused");
    };
    if (parts.empty()) {
      return outside("as the top of what was copied");
    }
    if (link.empty() || link[0] == '/') {
      return outside("outside what was copied");
    }
    std::vector<std::string> at(parts.begin(), parts.end() - 1);
    for (const std::string& c : Split(link, '/')) {
      if (c.empty() || c == ".") {
        continue;
      }
      if (c != "..") {
        at.push_back(c);
        continue;
      }
      if (at.size() <= 1) {
        return outside("outside what was copied");
      }
      if (symlinks_.count(Join(at, "/"))) {
        return outside("up through the symlink " + Quoted(Join(at, "/")));
      }
      at.pop_back();
    }
    if (at.empty() || at[0] != parts[0]) {
      return outside("outside what was copied");
    }
    symlinks_.insert(joined);
  } else if (type == '1') {
    std::vector<std::string> target;
    if (!Components(link, &target) || target.empty() ||
        !below_symlink(target, target.size() - 1).empty()) {
      return InvalidArgumentError(Quoted(name) + " from the worker is a hard link to " +
                                  Quoted(link) + ", outside what was copied; refused");
    }
  }
  names_.push_back(joined.empty() ? "." : joined);
  return Status::Ok();
}

}  // namespace tpufleet
