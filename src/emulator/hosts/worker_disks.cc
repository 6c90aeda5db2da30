#include "emulator/hosts/worker_disks.h"

#include <fcntl.h>
#include <grp.h>
#include <linux/capability.h>
#include <linux/magic.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/statvfs.h>
#include <sys/sysmacros.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstdlib>
#include <cstring>

#include "emulator/hosts/mount_options.h"
#include "emulator/hosts/system_programs.h"
#include "emulator/hosts/worker_setup.h"
#include "util/file.h"
#include "util/mount_info.h"
#include "util/strings.h"

namespace tpufleet::emulator::hosts {
namespace {

// Requests are a type and an option string: a few hundred bytes.
constexpr size_t kMaxRequest = 4096;
// The worker's own writable places a data disk may be mounted in (worker_setup.h); "/"
// is its root directory, where its root makes /data (worker_root.h).
constexpr const char* kMountPlaces[] = {"/", "/mnt", "/home", "/root", "/tmp", "/var", "/opt"};

// GCE's udev rules name each disk twice in /dev/disk/by-id.
constexpr const char* kLinkPrefixes[] = {"google-", "scsi-0Google_PersistentDisk_"};

// "disk/by-id/google-NAME": a link's path below /dev.
std::string ByIdLink(const std::string& prefix, const DataDiskDevice& d) {
  return "disk/by-id/" + prefix + d.name;
}

Result<uint64_t> MountId(int dir, const char* path, int flags) {
  struct statx stx {};
  if (::statx(dir, path, flags | AT_SYMLINK_NOFOLLOW, STATX_MNT_ID | STATX_TYPE, &stx) != 0) {
    return InternalError(Errno("statx"));
  }
  if ((stx.stx_mask & STATX_MNT_ID) == 0) {
    return FailedPreconditionError("this kernel does not report mount ids (Linux 5.8)");
  }
  return stx.stx_mnt_id;
}

// Runs `op` with CAP_SYS_ADMIN effective, and keeps its errno.
template <typename Op>
int AsAdmin(Op op) {
  if (!SetInitCapability(CAP_SYS_ADMIN, true).ok()) {
    errno = EPERM;
    return -1;
  }
  int r = op();
  int err = errno;
  [[maybe_unused]] Status s = SetInitCapability(CAP_SYS_ADMIN, false);
  errno = err;
  return r;
}

// The mount point of mount `id` in this namespace (mountinfo's fifth field), or "".
std::string MountPointOf(uint64_t id) {
  Result<std::string> info = ReadFile("/proc/self/mountinfo");
  for (const MountInfoEntry& m : info.ok() ? ParseMountInfo(*info) : std::vector<MountInfoEntry>()) {
    if (m.id == id) {
      return m.path;
    }
  }
  return "";
}

// What mount(8) says for a failed mount(2) of `device`.
std::string MountErrorText(int err, const std::string& device) {
  switch (err) {
    case EINVAL:
      return "wrong fs type, bad option, bad superblock on " + device +
             ", missing codepage or helper program, or other error.";
    case EBUSY:
      return device + " already mounted or mount point busy.";
    case EROFS:
    case EACCES:
      return "cannot mount " + device + " read-write: it is write-protected.";
    default:
      return std::strerror(err);
  }
}

}  // namespace

Status WorkerDisks::SetUp() {
  TPUFLEET_ASSIGN_OR_RETURN(dev_, WritableClone("/dev"));
  for (const char* dir : {"disk", "disk/by-id"}) {
    if (::mkdirat(dev_.get(), dir, 0755) != 0 && errno != EEXIST) {
      return InternalError(Errno(std::string("mkdir /dev/") + dir));
    }
  }
  if (const group* g = ::getgrnam("disk")) {
    disk_gid_ = g->gr_gid;
  }
  // The helper, where libmount looks for it (/sbin, a link to /usr/sbin on Debian 12).
  struct statfs usr {};
  char sbin[PATH_MAX];
  if (::statfs("/usr", &usr) != 0 || usr.f_type != OVERLAYFS_SUPER_MAGIC ||
      ::realpath("/sbin", sbin) == nullptr || std::string(sbin) != kMountHelperDir) {
    Say("/usr is not the worker's own, or /sbin is not /usr/sbin: data disks cannot be mounted");
  } else {
    UniqueFd exe(::open("/proc/self/exe", O_PATH | O_CLOEXEC));
    if (exe.get() < 0) {
      return InternalError(Errno("open /proc/self/exe"));
    }
    std::string self = "/proc/self/fd/" + std::to_string(exe.get());
    for (const char* type : kMountTypes) {
      for (const char* verb : {"mount.", "umount."}) {
        TPUFLEET_TRY(BindProgram(self, std::string(kMountHelperDir) + "/" + verb + type));
      }
    }
  }
  listen_ = UniqueFd(::socket(AF_UNIX, SOCK_SEQPACKET | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::strncpy(addr.sun_path, kMountSocket, sizeof addr.sun_path - 1);
  ::unlink(kMountSocket);
  if (listen_.get() < 0 ||
      ::bind(listen_.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 ||
      ::chmod(kMountSocket, 0600) != 0 || ::listen(listen_.get(), 16) != 0) {
    return InternalError(Errno(std::string("mount socket ") + kMountSocket));
  }
  return Status::Ok();
}

Status WorkerDisks::ShowDisk(const DataDiskDevice& d) {
  ::unlinkat(dev_.get(), d.device.c_str(), 0);  // a stale node from an earlier document
  TPUFLEET_TRY(SetInitCapability(CAP_MKNOD, true));
  int r = ::mknodat(dev_.get(), d.device.c_str(), S_IFBLK | 0660, ::makedev(d.major, d.minor));
  int err = errno;
  TPUFLEET_TRY(SetInitCapability(CAP_MKNOD, false));
  if (r != 0) {
    errno = err;
    return InternalError(Errno("mknod /dev/" + d.device));
  }
  ::fchownat(dev_.get(), d.device.c_str(), 0, disk_gid_, AT_SYMLINK_NOFOLLOW);
  ::fchmodat(dev_.get(), d.device.c_str(), 0660, 0);  // the umask took the group's bits
  for (const char* prefix : kLinkPrefixes) {
    std::string link = ByIdLink(prefix, d);
    ::unlinkat(dev_.get(), link.c_str(), 0);
    if (::symlinkat(("../../" + d.device).c_str(), dev_.get(), link.c_str()) != 0) {
      return InternalError(Errno("symlink /dev/" + link));
    }
  }
  Say("data disk " + d.name + " is /dev/" + d.device + (d.read_only ? " (read-only)" : ""));
  return Status::Ok();
}

void WorkerDisks::HideDisk(const DataDiskDevice& d) {
  const dev_t device = ::makedev(d.major, d.minor);
  for (const Mounted& m : std::vector<Mounted>(mounted_)) {
    if (m.device != device) {
      continue;
    }
    std::string point = MountPointOf(m.id);
    size_t slash = point.rfind('/');
    if (slash == std::string::npos) {
      continue;
    }
    std::string parent = slash == 0 ? "/" : point.substr(0, slash);
    UniqueFd dir(::open(parent.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
    Status s = dir.get() < 0 ? InternalError(Errno("open " + parent))
                             : UnmountAt(dir.get(), point.substr(slash + 1), MNT_DETACH);
    Say("data disk " + d.name + " detached: " + point +
        (s.ok() ? " unmounted" : " not unmounted: " + s.ToString()));
  }
  for (const char* prefix : kLinkPrefixes) {
    ::unlinkat(dev_.get(), ByIdLink(prefix, d).c_str(), 0);
  }
  ::unlinkat(dev_.get(), d.device.c_str(), 0);
}

Status WorkerDisks::Apply(const std::vector<DataDiskDevice>& disks) {
  if (dev_.get() < 0) {
    return FailedPreconditionError("data disks: not set up");
  }
  for (const DataDiskDevice& d : shown_) {
    if (std::find(disks.begin(), disks.end(), d) == disks.end()) {
      HideDisk(d);
    }
  }
  Status out;
  std::vector<DataDiskDevice> now;
  for (const DataDiskDevice& d : disks) {
    if (std::find(shown_.begin(), shown_.end(), d) != shown_.end()) {
      now.push_back(d);
    } else if (Status s = ShowDisk(d); s.ok()) {
      now.push_back(d);
    } else if (out.ok()) {
      out = s;
    }
  }
  shown_ = std::move(now);
  return out;
}

std::vector<int> WorkerDisks::PollFds() const {
  std::vector<int> out;
  if (listen_.get() >= 0) {
    out.push_back(listen_.get());
  }
  for (const UniqueFd& c : clients_) {
    out.push_back(c.get());
  }
  return out;
}

void WorkerDisks::Serve(int fd) {
  if (fd == listen_.get()) {
    int c = ::accept4(fd, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (c < 0) {
      return;
    }
    if (clients_.size() >= kMaxMountClients) {
      clients_.erase(clients_.begin());  // the oldest has had its chance
    }
    clients_.emplace_back(c);
    return;
  }
  auto it = std::find_if(clients_.begin(), clients_.end(),
                         [&](const UniqueFd& c) { return c.get() == fd; });
  if (it == clients_.end()) {
    return;
  }
  char buf[kMaxRequest];
  char control[CMSG_SPACE(2 * sizeof(int))] = {};
  iovec iov{buf, sizeof buf};
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  msg.msg_control = control;
  msg.msg_controllen = sizeof control;
  ssize_t n = ::recvmsg(fd, &msg, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
  if (n < 0 && (errno == EAGAIN || errno == EINTR)) {
    return;
  }
  std::vector<UniqueFd> received;
  for (cmsghdr* c = CMSG_FIRSTHDR(&msg); n >= 0 && c != nullptr; c = CMSG_NXTHDR(&msg, c)) {
    if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS) {
      size_t count = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
      for (size_t i = 0; i < count; ++i) {
        int got;
        std::memcpy(&got, CMSG_DATA(c) + i * sizeof(int), sizeof got);
        received.emplace_back(got);
      }
    }
  }
  if (n > 0 && (msg.msg_flags & (MSG_TRUNC | MSG_CTRUNC)) == 0) {
    ucred peer{};
    socklen_t len = sizeof peer;
    std::vector<int> fds;
    for (const UniqueFd& r : received) {
      fds.push_back(r.get());
    }
    std::string reply =
        ::getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &peer, &len) != 0
            ? "ERR\ncannot tell who asks"
            : HandleRequest(std::string(buf, static_cast<size_t>(n)), fds, peer.uid);
    [[maybe_unused]] ssize_t w =
        ::send(fd, reply.data(), reply.size(), MSG_DONTWAIT | MSG_NOSIGNAL);
  }
  clients_.erase(it);
}

std::string WorkerDisks::HandleRequest(const std::string& request, const std::vector<int>& fds,
                                       uid_t peer) {
  if (peer != 0) {
    return "ERR\nmust be superuser to use mount.";
  }
  std::vector<std::string> parts = Split(request, '\n');
  if (parts.size() == 3 && parts[0] == "mount" && fds.size() == 2) {
    Result<std::string> r = MountRequest(parts, fds[0], fds[1]);
    return r.ok() ? "OK\n" + *r : "ERR\n" + r.status().message();
  }
  if (parts.size() == 3 && parts[0] == "umount" && fds.size() == 1) {
    Status s = UmountRequest(parts, fds[0]);
    return s.ok() ? "OK\n" : "ERR\n" + s.message();
  }
  return "ERR\nbad request";
}

Result<std::string> WorkerDisks::MountRequest(const std::vector<std::string>& parts, int source,
                                              int target) {
  const std::string& type = parts[1];
  if (std::find(std::begin(kMountTypes), std::end(kMountTypes), type) == std::end(kMountTypes)) {
    return InvalidArgumentError("unknown filesystem type '" + type + "'.");
  }
  struct stat st;
  auto disk = shown_.end();
  if (::fstat(source, &st) == 0 && S_ISBLK(st.st_mode)) {
    disk = std::find_if(shown_.begin(), shown_.end(), [&](const DataDiskDevice& d) {
      return ::makedev(d.major, d.minor) == st.st_rdev;
    });
  }
  if (disk == shown_.end()) {
    return PermissionDeniedError(
        "permission denied: only this worker's data disks can be "
        "mounted here (the emulator's workers have no CAP_SYS_ADMIN).");
  }
  const std::string device = "/dev/" + disk->device;
  if (::fstat(target, &st) != 0 || !S_ISDIR(st.st_mode)) {
    return InvalidArgumentError("mount point is not a directory.");
  }
  TPUFLEET_ASSIGN_OR_RETURN(uint64_t target_mount, MountId(target, "", AT_EMPTY_PATH));
  // Anywhere in one of the places, but not over the root directory itself.
  struct stat root_st;
  bool allowed = ::stat("/", &root_st) == 0 &&
                 !(st.st_dev == root_st.st_dev && st.st_ino == root_st.st_ino);
  bool placed = false;
  for (const char* place : kMountPlaces) {
    struct statvfs vfs {};
    Result<uint64_t> id = MountId(AT_FDCWD, place, 0);
    placed = placed || (id.ok() && *id == target_mount && ::statvfs(place, &vfs) == 0 &&
                        (vfs.f_flag & ST_RDONLY) == 0);
  }
  allowed = allowed && placed;
  for (const Mounted& m : mounted_) {
    allowed = allowed && m.id != target_mount;
  }
  if (!allowed) {
    return PermissionDeniedError(
        "permission denied: a data disk is mounted on a directory of the worker's own "
        "(one it made in /, or under /mnt, /home, /root, /tmp, /var or /opt), not in "
        "another mount.");
  }
  TPUFLEET_ASSIGN_OR_RETURN(MountOptions options, ParseMountOptions(parts[2]));
  std::string warning;
  if (disk->read_only && !options.read_only) {
    options.read_only = true;
    warning = "WARNING: source write-protected, mounted read-only.";
  }
  UniqueFd fs(static_cast<int>(AsAdmin([&] { return ::fsopen(type.c_str(), FSOPEN_CLOEXEC); })));
  if (fs.get() < 0) {
    return InternalError(Errno("fsopen " + type));
  }
  auto config = [&](unsigned cmd, const std::string& key, const std::string& value) {
    return AsAdmin([&] {
      return ::fsconfig(fs.get(), cmd, key.empty() ? nullptr : key.c_str(),
                        value.empty() ? nullptr : value.c_str(), 0);
    });
  };
  if (config(FSCONFIG_SET_STRING, "source", device) != 0) {
    return InternalError(Errno("source " + device));
  }
  for (const auto& [key, value] : options.fs_options) {
    if (config(value.empty() ? FSCONFIG_SET_FLAG : FSCONFIG_SET_STRING, key, value) != 0) {
      return InvalidArgumentError("bad option " + key + (value.empty() ? "" : "=" + value) + ".");
    }
  }
  if (options.read_only && config(FSCONFIG_SET_FLAG, "ro", "") != 0) {
    return InternalError(Errno("ro"));
  }
  if (config(FSCONFIG_CMD_CREATE, "", "") != 0) {
    return InvalidArgumentError(MountErrorText(errno, device));
  }
  unsigned attrs = options.attributes | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV |
                   (options.read_only ? MOUNT_ATTR_RDONLY : 0);
  UniqueFd mnt(AsAdmin([&] { return ::fsmount(fs.get(), FSMOUNT_CLOEXEC, attrs); }));
  if (mnt.get() < 0) {
    return InvalidArgumentError(MountErrorText(errno, device));
  }
  TPUFLEET_ASSIGN_OR_RETURN(uint64_t id, MountId(mnt.get(), "", AT_EMPTY_PATH));
  if (AsAdmin([&] {
        return ::move_mount(mnt.get(), "", target, "",
                            MOVE_MOUNT_F_EMPTY_PATH | MOVE_MOUNT_T_EMPTY_PATH);
      }) != 0) {
    return InternalError(Errno("move_mount"));
  }
  mounted_.push_back({id, ::makedev(disk->major, disk->minor)});
  return warning;
}

Status WorkerDisks::UmountRequest(const std::vector<std::string>& parts, int parent) {
  const std::string& name = parts[1];
  if (name.empty() || name == "." || name == ".." || name.find('/') != std::string::npos) {
    return InvalidArgumentError("not mounted.");
  }
  return UnmountAt(parent, name, parts[2] == "lazy" ? MNT_DETACH : 0);
}

Status WorkerDisks::UnmountAt(int parent, const std::string& name, int flags) {
  struct statx stx {};
  if (::statx(parent, name.c_str(), AT_SYMLINK_NOFOLLOW, STATX_MNT_ID, &stx) != 0) {
    return NotFoundError(Errno("no mount point"));
  }
  bool root = (stx.stx_attributes_mask & STATX_ATTR_MOUNT_ROOT) != 0 &&
              (stx.stx_attributes & STATX_ATTR_MOUNT_ROOT) != 0;
  auto it = std::find_if(mounted_.begin(), mounted_.end(),
                         [&](const Mounted& m) { return m.id == stx.stx_mnt_id; });
  if (!root || it == mounted_.end()) {
    return PermissionDeniedError(
        "not mounted (only data disks mounted with mount(8) can be "
        "unmounted here).");
  }
  // The mount point cannot be renamed or replaced while mounted: this is the one checked.
  std::string path = "/proc/self/fd/" + std::to_string(parent) + "/" + name;
  if (AsAdmin([&] { return ::umount2(path.c_str(), flags | UMOUNT_NOFOLLOW); }) != 0) {
    return errno == EBUSY ? UnavailableError("target is busy.") : InternalError(Errno("umount"));
  }
  mounted_.erase(it);
  return Status::Ok();
}

}  // namespace tpufleet::emulator::hosts
