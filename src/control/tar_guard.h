// TarGuard: what a worker sends `cp` for a download is a tar stream, and a worker can be
// compromised. TarGuard reads that stream as it arrives, before the local `tar -x` sees
// it, one 512-byte header at a time, and lets through only what is safe to unpack here,
// even as root:
//   - regular files, directories, hard links and symlinks; never a device, a fifo or
//     anything else (GNU long names and pax path records are read, other pax keys
//     passed on);
//   - names that are relative and hold no "..", none of them below a symlink the stream
//     made earlier;
//   - symlinks whose target, resolved from the link's directory, stays inside the entry
//     that was copied (the stream's top-level name): never absolute, never up through
//     ".." past that entry or through another symlink;
//   - hard links to names that pass the same checks.
// Setuid, setgid and sticky bits are cleared in every header (its checksum fixed), so no
// such bit is ever set here. The first refused entry stops the stream: Feed returns an
// error naming it, and nothing more is passed on.
//
// Thread-safety: one stream, one thread.
#pragma once

#include <cstdint>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "util/status.h"

namespace tpufleet {

/// A GNU long name or pax header larger than this is refused: real ones are a path.
inline constexpr size_t kTarMaxMetaBytes = 1 << 20;

class TarGuard {
 public:
  /// Takes the next bytes of the stream and appends what may go on to `out`; an error
  /// (InvalidArgument, naming the entry and why) once an entry is refused or the stream
  /// is no tar. After an error every call returns it again and passes nothing.
  Status Feed(std::string_view in, std::string& out);

  /// Every entry's name as unpacked (relative, normalized), in stream order.
  const std::vector<std::string>& names() const { return names_; }

 private:
  Status Header(std::string& block);
  Status Check(char type, const std::string& name, const std::string& link);

  enum class State { kHeader, kData };
  State state_ = State::kHeader;
  std::string block_;          // the header being collected
  uint64_t data_left_ = 0;     // bytes of the current entry's data and padding to pass on
  uint64_t meta_left_ = 0;     // of those, bytes that belong in meta_
  std::string meta_;           // a GNU long name/link or pax header being read
  char meta_type_ = 0;
  std::string long_name_, long_link_;  // from 'L'/'K' or pax, for the next entry
  std::set<std::string> symlinks_;     // names of the symlinks made so far
  std::vector<std::string> names_;
  Status error_;
};

}  // namespace tpufleet
