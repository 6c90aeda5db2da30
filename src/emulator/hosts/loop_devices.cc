#include "emulator/hosts/loop_devices.h"

#include <fcntl.h>
#include <linux/loop.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <set>

#include "emulator/hosts/system_programs.h"
#include "emulator/hosts/worker_document.h"

namespace tpufleet::emulator::hosts {
namespace {

// Another process (a second emulator, losetup) may take the free device first.
constexpr int kAttachAttempts = 8;

}  // namespace

std::string LoopDevice::path() const {
  return "/dev/loop" + std::to_string(minor(device_));
}

Result<LoopDevice> LoopDevice::Attach(const AttachedDiskSpec& disk) {
  const int mode = disk.read_only ? O_RDONLY : O_RDWR;
  UniqueFd image(::open(disk.image.c_str(), mode | O_CLOEXEC | O_NOFOLLOW));
  if (image.get() < 0) {
    return InternalError(Errno("open disk image " + disk.image));
  }
  UniqueFd control(::open("/dev/loop-control", O_RDWR | O_CLOEXEC));
  if (control.get() < 0) {
    return FailedPreconditionError(
        Errno("/dev/loop-control (data disks need loop devices: modprobe loop)"));
  }
  for (int attempt = 0; attempt < kAttachAttempts; ++attempt) {
    int n = ::ioctl(control.get(), LOOP_CTL_GET_FREE);
    if (n < 0) {
      return UnavailableError(Errno("no free loop device"));
    }
    std::string path = "/dev/loop" + std::to_string(n);
    LoopDevice out;
    out.fd_ = UniqueFd(::open(path.c_str(), mode | O_CLOEXEC));
    if (out.fd_.get() < 0) {
      return InternalError(Errno("open " + path));
    }
    loop_config config{};
    config.fd = static_cast<uint32_t>(image.get());
    config.info.lo_flags = LO_FLAGS_AUTOCLEAR | (disk.read_only ? LO_FLAGS_READ_ONLY : 0);
    std::strncpy(reinterpret_cast<char*>(config.info.lo_file_name), disk.image.c_str(),
                 LO_NAME_SIZE - 1);
    if (::ioctl(out.fd_.get(), LOOP_CONFIGURE, &config) != 0) {
      if (errno == EBUSY) {
        continue;  // taken meanwhile
      }
      return InternalError(Errno("LOOP_CONFIGURE " + path + " (Linux 5.8 or later)"));
    }
    struct stat st;
    if (::fstat(out.fd_.get(), &st) != 0 || !S_ISBLK(st.st_mode)) {
      return InternalError(path + " is not a block device");
    }
    out.device_ = st.st_rdev;
    return out;
  }
  return UnavailableError("no free loop device: others took each one offered");
}

Status ValidateDataDisks(const std::vector<AttachedDiskSpec>& disks) {
  if (disks.size() > kMaxDataDisks) {
    return InvalidArgumentError("worker hosts: a node shows at most " +
                                std::to_string(kMaxDataDisks) + " data disks, not " +
                                std::to_string(disks.size()));
  }
  std::set<std::string> names;
  for (const AttachedDiskSpec& d : disks) {
    if (!IsDiskName(d.name)) {
      return InvalidArgumentError("worker hosts: bad disk name \"" + d.name.substr(0, 64) + "\"");
    }
    if (!names.insert(d.name).second) {
      return InvalidArgumentError("worker hosts: disk " + d.name + " is attached twice");
    }
    struct stat st;
    if (d.image.empty() || d.image[0] != '/' || ::lstat(d.image.c_str(), &st) != 0 ||
        !S_ISREG(st.st_mode)) {
      return InvalidArgumentError("worker hosts: disk " + d.name + ": no image file at \"" +
                                  d.image + "\"");
    }
  }
  return Status::Ok();
}

}  // namespace tpufleet::emulator::hosts
