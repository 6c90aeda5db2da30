#include "emulator/hosts/mount_options.h"

#include <sys/mount.h>

#include <algorithm>

#include "util/strings.h"

namespace tpufleet::emulator::hosts {
namespace {

struct Attribute {
  std::string_view name;
  unsigned attribute;  // MOUNT_ATTR_*; 0: accepted, changes nothing here
};

// VFS options (mount(8)) and userspace ones libmount passes to helpers as well.
constexpr Attribute kAttributes[] = {
    {"rw", 0},
    {"defaults", 0},
    {"auto", 0},
    {"noauto", 0},
    {"nofail", 0},
    {"_netdev", 0},
    {"exec", 0},
    {"async", 0},
    {"nosuid", 0},  // forced anyway
    {"nodev", 0},
    {"atime", 0},
    {"diratime", 0},
    {"nouser", 0},
    {"loud", 0},
    {"silent", 0},
    {"relatime", MOUNT_ATTR_RELATIME},
    {"noatime", MOUNT_ATTR_NOATIME},
    {"strictatime", MOUNT_ATTR_STRICTATIME},
    {"nodiratime", MOUNT_ATTR_NODIRATIME},
    {"noexec", MOUNT_ATTR_NOEXEC},
};

// Superblock flags and ext4 options that concern the disk alone (ext4(5)).
constexpr std::string_view kFsFlags[] = {
    "sync",
    "dirsync",
    "lazytime",
    "nolazytime",
    "noload",
    "norecovery",
    "discard",
    "nodiscard",
    "barrier",
    "nobarrier",
    "user_xattr",
    "nouser_xattr",
    "acl",
    "noacl",
    "delalloc",
    "nodelalloc",
    "dioread_nolock",
    "dioread_lock",
    "auto_da_alloc",
    "noauto_da_alloc",
    "block_validity",
    "noblock_validity",
    "journal_checksum",
    "nojournal_checksum",
    "init_itable",
    "noinit_itable",
    "i_version",
    "nombcache",
};

// key=value options and the values allowed ("#": a number).
struct Valued {
  std::string_view key;
  std::vector<std::string_view> values;
};
const Valued kValued[] = {
    {"errors", {"remount-ro", "continue"}},
    {"data", {"ordered", "writeback", "journal"}},
    {"commit", {"#"}},
    {"barrier", {"0", "1"}},
    {"init_itable", {"#"}},
    {"stripe", {"#"}},
    {"max_batch_time", {"#"}},
    {"min_batch_time", {"#"}},
    {"inode_readahead_blks", {"#"}},
};

bool IsNumber(std::string_view s) {
  return !s.empty() && s.size() <= 9 &&
         std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
}

}  // namespace

Result<MountOptions> ParseMountOptions(std::string_view text) {
  MountOptions out;
  for (const std::string& option : Split(text, ',')) {
    if (option.empty() || StartsWith(option, "x-") || StartsWith(option, "X-") ||
        StartsWith(option, "comment=")) {
      continue;  // userspace options: libmount's business
    }
    if (option == "ro") {
      out.read_only = true;
      continue;
    }
    auto attr = std::find_if(std::begin(kAttributes), std::end(kAttributes),
                             [&](const Attribute& a) { return a.name == option; });
    if (attr != std::end(kAttributes)) {
      if ((attr->attribute & MOUNT_ATTR__ATIME) != 0) {
        out.attributes &= ~MOUNT_ATTR__ATIME;  // the last atime option wins
      }
      out.attributes |= attr->attribute;
      continue;
    }
    if (std::find(std::begin(kFsFlags), std::end(kFsFlags), option) != std::end(kFsFlags)) {
      out.fs_options.emplace_back(option, "");
      continue;
    }
    size_t eq = option.find('=');
    std::string key = option.substr(0, eq);
    std::string value = eq == std::string::npos ? "" : option.substr(eq + 1);
    auto valued = std::find_if(std::begin(kValued), std::end(kValued),
                               [&](const Valued& v) { return v.key == key; });
    bool ok = valued != std::end(kValued) && eq != std::string::npos &&
              std::any_of(valued->values.begin(), valued->values.end(), [&](std::string_view v) {
                return v == value || (v == "#" && IsNumber(value));
              });
    if (!ok) {
      return InvalidArgumentError("option " + option.substr(0, 64) +
                                  " is not allowed for a data disk in this emulator.");
    }
    out.fs_options.emplace_back(key, value);
  }
  return out;
}

}  // namespace tpufleet::emulator::hosts
