#include "emulator/hosts/worker_setup.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <fcntl.h>
#include <linux/capability.h>
#include <net/if.h>
#include <netinet/in.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <vector>

#include "emulator/hosts/system_programs.h"
#include "emulator/hosts/worker_root.h"
#include "util/file.h"
#include "util/strings.h"
#include "util/unique_fd.h"

namespace tpufleet::emulator::hosts {
namespace {

using std::chrono::milliseconds;

constexpr const char* kHostKey = "/etc/ssh/ssh_host_ed25519_key";
// Present once this worker made its own host key (the machine's keys show through the
// /etc overlay until then and must not be reused).
constexpr const char* kHostKeyMarker = "/etc/ssh/.tpufleet-host-key";
constexpr const char* kSshdConfig = "/etc/ssh/sshd_config";

constexpr const char* kSshdConfigText =
    "# Written by tpufleet-emulator-worker at every boot: the sshd of an emulated TPU VM.\n"
    "Port 22\n"
    "AddressFamily inet\n"
    "ListenAddress 0.0.0.0\n"
    "HostKey /etc/ssh/ssh_host_ed25519_key\n"
    "PidFile /run/sshd.pid\n"
    "UsePAM no\n"
    "PermitRootLogin no\n"
    "PubkeyAuthentication yes\n"
    "PasswordAuthentication no\n"
    "KbdInteractiveAuthentication no\n"
    "AuthorizedKeysFile .ssh/authorized_keys\n"
    "StrictModes yes\n"
    "UseDNS no\n"
    "PrintMotd no\n"
    "PrintLastLog no\n"
    "X11Forwarding no\n"
    "AllowTcpForwarding yes\n"
    "AllowAgentForwarding yes\n"
    "MaxStartups 64:30:256\n"
    "MaxSessions 64\n"
    "ClientAliveInterval 120\n"
    "AcceptEnv LANG LC_*\n"
    "Subsystem sftp internal-sftp\n";

Status MkDir(const std::string& path, mode_t mode) {
  if (::mkdir(path.c_str(), mode) == 0) {
    ::chmod(path.c_str(), mode);  // exact bits, whatever the umask
    return Status::Ok();
  }
  if (errno == EEXIST) {
    return Status::Ok();
  }
  return InternalError(Errno("mkdir " + path));
}

Status Mount(const std::string& source, const std::string& target, const char* type,
             unsigned long flags, const std::string& data = "") {
  if (::mount(source.empty() ? nullptr : source.c_str(), target.c_str(), type, flags,
              data.empty() ? nullptr : data.c_str()) != 0) {
    return InternalError(Errno(std::string("mount ") + (type ? type : "bind") + " on " + target));
  }
  return Status::Ok();
}

bool IsUnder(const std::string& path, const std::string& dir) {
  return path == dir || StartsWith(path, dir + "/");
}

bool IsRealDir(const std::string& path) {
  struct stat st;
  return ::lstat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

Status WriteIfChanged(const std::string& path, const std::string& content, int mode) {
  Result<std::string> have = ReadFile(path);
  if (have.ok() && *have == content) {
    return Status::Ok();
  }
  return WriteFileAtomic(path, content, mode);
}

Status SetInterface(int sock, const std::string& name, const std::string& address,
                    int prefix_length) {
  ifreq ifr{};
  std::strncpy(ifr.ifr_name, name.c_str(), IFNAMSIZ - 1);
  auto* sin = reinterpret_cast<sockaddr_in*>(&ifr.ifr_addr);
  sin->sin_family = AF_INET;
  if (::inet_pton(AF_INET, address.c_str(), &sin->sin_addr) != 1) {
    return InvalidArgumentError("bad address " + address);
  }
  if (::ioctl(sock, SIOCSIFADDR, &ifr) != 0) {
    return InternalError(Errno("set address " + address + " on " + name));
  }
  uint32_t mask = prefix_length == 0 ? 0 : ~0u << (32 - prefix_length);
  sin->sin_addr.s_addr = htonl(mask);
  if (::ioctl(sock, SIOCSIFNETMASK, &ifr) != 0) {
    return InternalError(Errno("set netmask on " + name));
  }
  return Status::Ok();
}

Status BringUp(int sock, const std::string& name) {
  ifreq ifr{};
  std::strncpy(ifr.ifr_name, name.c_str(), IFNAMSIZ - 1);
  if (::ioctl(sock, SIOCGIFFLAGS, &ifr) != 0) {
    return InternalError(Errno("interface " + name));
  }
  ifr.ifr_flags = static_cast<short>(ifr.ifr_flags | IFF_UP);
  if (::ioctl(sock, SIOCSIFFLAGS, &ifr) != 0) {
    return InternalError(Errno("bring up " + name));
  }
  return Status::Ok();
}

// A /dev of the worker's own: a tmpfs with the harmless devices bound from the
// machine's, so its root cannot reach the machine's disks, memory or consoles.
Status SetUpDev() {
  const std::string host_dev = "/run/tpufleet/host-dev";
  TPUFLEET_TRY(MkDir(host_dev, 0700));
  TPUFLEET_TRY(Mount("/dev", host_dev, nullptr, MS_BIND));
  TPUFLEET_TRY(Mount("tmpfs", "/dev", "tmpfs", MS_NOSUID | MS_NOEXEC, "mode=0755,size=64k"));
  for (const char* name : {"null", "zero", "full", "random", "urandom", "tty"}) {
    std::string target = std::string("/dev/") + name;
    int fd = ::open(target.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    if (fd < 0) {
      return InternalError(Errno("create " + target));
    }
    ::close(fd);
    TPUFLEET_TRY(Mount(host_dev + "/" + name, target, nullptr, MS_BIND));
  }
  for (const auto& [link, to] : {std::pair<const char*, const char*>{"fd", "/proc/self/fd"},
                                 {"stdin", "/proc/self/fd/0"},
                                 {"stdout", "/proc/self/fd/1"},
                                 {"stderr", "/proc/self/fd/2"},
                                 {"ptmx", "pts/ptmx"}}) {
    if (::symlink(to, (std::string("/dev/") + link).c_str()) != 0) {
      return InternalError(Errno(std::string("symlink /dev/") + link));
    }
  }
  TPUFLEET_TRY(MkDir("/dev/pts", 0755));
  TPUFLEET_TRY(MkDir("/dev/shm", 01777));
  if (::umount2(host_dev.c_str(), MNT_DETACH) != 0 || ::rmdir(host_dev.c_str()) != 0) {
    return InternalError(Errno("unmount " + host_dev));
  }
  return Status::Ok();
}

}  // namespace

// The worker is not running yet: nothing races this.
Status DiskDir(const std::string& path, mode_t mode) {
  struct stat st;
  if (::lstat(path.c_str(), &st) == 0 && !S_ISDIR(st.st_mode) && ::unlink(path.c_str()) != 0) {
    return InternalError(Errno("unlink " + path));
  }
  TPUFLEET_TRY(MkDir(path, mode));
  if (!IsRealDir(path)) {
    return InternalError(path + " is not a directory");
  }
  return Status::Ok();
}

Status BindProgram(const std::string& binary, const std::string& path) {
  struct stat st;
  if (::lstat(path.c_str(), &st) == 0 && !S_ISREG(st.st_mode) && ::unlink(path.c_str()) != 0) {
    return InternalError(Errno("unlink " + path));
  }
  std::string dir = path.substr(0, path.rfind('/'));
  std::string parent = dir.substr(0, dir.rfind('/'));
  TPUFLEET_TRY(MkDir(parent, 0755));
  TPUFLEET_TRY(MkDir(dir, 0755));
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0755);
  if (fd < 0) {
    return InternalError(Errno("create " + path));
  }
  ::close(fd);
  return Mount(binary, path, nullptr, MS_BIND);
}

namespace {

// Makes every mount read-only but the worker's own (`own`, with what is mounted below
// them), so the part of the machine's file system the worker shares is read-only to it.
// /proc itself stays writable (processes' own files), its bound kernel settings not;
// so does the root directory where it is the worker's own (worker_root.h), but not
// the machine's directories in it.
Status LockDown(const std::vector<std::string>& own, bool own_root) {
  mount_attr ro{};
  ro.attr_set = MOUNT_ATTR_RDONLY;
  if (::mount_setattr(AT_FDCWD, "/", AT_RECURSIVE, &ro, sizeof ro) != 0) {
    if (errno == ENOSYS) {
      Say("this kernel has no mount_setattr (Linux 5.12): the machine's file system stays "
          "writable to the worker's root");
      return Status::Ok();
    }
    return InternalError(Errno("make / read-only"));
  }
  mount_attr rw{};
  rw.attr_clr = MOUNT_ATTR_RDONLY;
  for (const std::string& path : own) {
    if (::mount_setattr(AT_FDCWD, path.c_str(), AT_RECURSIVE, &rw, sizeof rw) != 0) {
      return InternalError(Errno("make " + path + " writable"));
    }
  }
  if (::mount_setattr(AT_FDCWD, "/proc", 0, &rw, sizeof rw) != 0) {
    return InternalError(Errno("make /proc writable"));
  }
  if (own_root && ::mount_setattr(AT_FDCWD, "/", 0, &rw, sizeof rw) != 0) {
    return InternalError(Errno("make / writable"));
  }
  return Status::Ok();
}

}  // namespace

Result<UniqueFd> WritableClone(const char* path) {
  int fd = ::open_tree(AT_FDCWD, path, OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC);
  if (fd < 0) {
    return InternalError(Errno(std::string("open_tree ") + path));
  }
  return UniqueFd(fd);
}

void Say(const std::string& m) {
  std::string line = "tpufleet-emulator-worker: " + m + "\n";
  [[maybe_unused]] ssize_t n = ::write(2, line.data(), line.size());
}

Status WriteSshdConfig() {
  return WriteIfChanged(kSshdConfig, kSshdConfigText, 0644);
}

// The worker's file system: see worker_init.h.
Status SetUpMounts(const WorkerPaths& paths, const std::function<Status()>& extra) {
  const std::string& disk = paths.disk;
  const std::string& state = paths.state;
  const std::string d = kDiskMount;
  TPUFLEET_TRY(Mount("", "/", nullptr, MS_REC | MS_PRIVATE));
  TPUFLEET_ASSIGN_OR_RETURN(const bool own_root, EnterOwnRoot(disk));
  // The stand-in and the bucket are opened now (every path of the machine still leads
  // where it did, but for new names in "/"): the worker's own /tmp, /home, /root and
  // /run hide the machine's below, and a build tree or a state dir may well be there (a
  // checkout in /tmp).
  UniqueFd standin_fd;
  if (!paths.standin.empty()) {
    standin_fd = UniqueFd(::open(paths.standin.c_str(), O_PATH | O_CLOEXEC));
    if (standin_fd.get() < 0) {
      return InternalError(Errno("open " + paths.standin));
    }
  }
  UniqueFd bucket_fd;
  if (!paths.bucket.empty()) {
    bucket_fd =
        UniqueFd(::open(paths.bucket.c_str(), O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
    if (bucket_fd.get() < 0) {
      return InternalError(Errno("open " + paths.bucket));
    }
  }
  // The mounts the worker owns, writable after LockDown; the rest of / is not.
  std::vector<std::string> own = {"/run"};
  TPUFLEET_TRY(Mount("tmpfs", "/run", "tmpfs", MS_NOSUID | MS_NODEV, "mode=0755"));
  TPUFLEET_TRY(MkDir("/run/tpufleet", 0700));
  TPUFLEET_TRY(MkDir(d, 0700));
  TPUFLEET_TRY(Mount(disk, d, nullptr, MS_BIND));
  TPUFLEET_TRY(MkDir("/run/sshd", 0755));
  TPUFLEET_TRY(MkDir("/run/lock", 01777));
  TPUFLEET_TRY(MkDir("/run/user", 0755));
  TPUFLEET_TRY(DiskDir(d + "/upper", 0755));
  TPUFLEET_TRY(DiskDir(d + "/work", 0755));
  for (const char* name : {"etc", "usr", "opt", "var"}) {
    std::string dir = std::string("/") + name;
    if (!IsRealDir(dir)) {
      continue;
    }
    if (IsUnder(state, dir)) {
      if (dir == "/etc") {
        return InvalidArgumentError("the emulator's state dir must not be under /etc");
      }
      Say(dir + " holds the emulator's state dir: it stays the machine's, read-only here");
      if (dir == "/var" && IsRealDir("/var/tmp")) {
        // Lock and temporary files at least stay on the worker.
        TPUFLEET_TRY(DiskDir(d + "/var-tmp", 01777));
        TPUFLEET_TRY(Mount(d + "/var-tmp", "/var/tmp", nullptr, MS_BIND));
        own.push_back("/var/tmp");
      }
      continue;
    }
    std::string upper = d + "/upper/" + name;
    std::string work = d + "/work/" + name;
    TPUFLEET_TRY(DiskDir(upper, 0755));
    TPUFLEET_TRY(DiskDir(work, 0755));
    Status s = Mount("overlay", dir, "overlay", 0,
                     "lowerdir=" + dir + ",upperdir=" + upper + ",workdir=" + work);
    if (s.ok()) {
      own.push_back(dir);
      continue;
    }
    if (dir != "/etc") {
      Say(s.message() + ": " + dir + " stays the machine's, read-only here");
      continue;
    }
    // No overlayfs here: a private copy of /etc, made once and kept on the disk.
    Say(s.message() + ": using a copy of /etc instead");
    std::string copy = d + "/etc-copy";
    if (!IsRealDir(copy)) {
      TPUFLEET_ASSIGN_OR_RETURN(std::string rm, FindProgram("rm"));
      TPUFLEET_ASSIGN_OR_RETURN(std::string cp, FindProgram("cp"));
      TPUFLEET_TRY(RunChecked({rm, "-rf", "--", copy + ".tmp"}));
      TPUFLEET_TRY(RunChecked({cp, "-a", "--", "/etc", copy + ".tmp"}, "", milliseconds(60'000)));
      if (::rename((copy + ".tmp").c_str(), copy.c_str()) != 0) {
        return InternalError(Errno("rename " + copy));
      }
    }
    TPUFLEET_TRY(Mount(copy, "/etc", nullptr, MS_BIND));
    own.push_back("/etc");
  }
  struct Bind {
    const char* name;
    mode_t mode;
  };
  for (const Bind& b :
       {Bind{"home", 0755}, Bind{"root", 0700}, Bind{"tmp", 01777}, Bind{"mnt", 0755}}) {
    if (!IsRealDir(std::string("/") + b.name)) {
      Say(std::string("the machine has no directory /") + b.name + ": the worker has none either");
      continue;
    }
    std::string src = d + "/" + b.name;
    TPUFLEET_TRY(DiskDir(src, b.mode));
    TPUFLEET_TRY(Mount(src, std::string("/") + b.name, nullptr, MS_BIND));
    own.push_back(std::string("/") + b.name);
  }
  if (bucket_fd.get() >= 0) {
    // The machine made the mount point (MakeBucketDir), unless the worker's root made
    // it in its own root directory (a real directory: the bucket goes on it and no
    // further).
    if (IsRealDir(kBucketMount)) {
      TPUFLEET_TRY(Mount("/proc/self/fd/" + std::to_string(bucket_fd.get()), kBucketMount, nullptr,
                         MS_BIND));
      TPUFLEET_TRY(Mount("", kBucketMount, nullptr, MS_BIND | MS_REMOUNT | MS_NOSUID | MS_NODEV));
      own.push_back(kBucketMount);
    } else {
      Say(std::string("the machine has no directory ") + kBucketMount + ": no bucket here");
    }
  }
  TPUFLEET_TRY(SetUpDev());
  struct stat st;
  if (Status s = Mount("tmpfs", "/dev/shm", "tmpfs", MS_NOSUID | MS_NODEV, "mode=1777"); s.ok()) {
    own.push_back("/dev/shm");
  } else {
    Say(s.message());
  }
  // /dev/ptmx is a link to pts/ptmx (SetUpDev).
  if (Status s = Mount("devpts", "/dev/pts", "devpts", MS_NOSUID | MS_NOEXEC,
                       "newinstance,ptmxmode=0666,mode=0620,gid=5");
      s.ok()) {
    own.push_back("/dev/pts");
  } else {
    Say(s.message());
  }
  TPUFLEET_TRY(Mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC));
  // The kernel's settings and triggers stay read-only: /proc/sys/kernel/core_pattern or
  // /proc/sysrq-trigger would let the worker's root run commands on, or reboot, the
  // machine. (Docker protects the same paths.)
  for (const char* path : {"/proc/sys", "/proc/sysrq-trigger", "/proc/irq", "/proc/bus"}) {
    if (::lstat(path, &st) == 0) {
      TPUFLEET_TRY(Mount(path, path, nullptr, MS_BIND));
    }
  }
  if (Status s = Mount("sysfs", "/sys", "sysfs", MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC);
      !s.ok()) {
    Say(s.message());
  }
  if (standin_fd.get() >= 0) {
    if (std::find(own.begin(), own.end(), "/usr") != own.end()) {
      TPUFLEET_TRY(BindProgram("/proc/self/fd/" + std::to_string(standin_fd.get()), kStandinPath));
    } else {
      Say(std::string("/usr is the machine's here: no ") + kStandinPath);
    }
  }
  TPUFLEET_TRY(extra());
  if (own_root) {
    TPUFLEET_TRY(LeaveMachineRoot());
  }
  TPUFLEET_TRY(LockDown(own, own_root));
  // Hide the other workers' disks and the emulator's own files, its token first (when
  // they are still visible at all: a worker's /home, /root and /tmp cover them often).
  for (const std::string& dir : {state, paths.hide}) {
    if (dir.empty() || ::stat(dir.c_str(), &st) != 0) {
      continue;
    }
    Status s = Mount("tmpfs", dir, "tmpfs", MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC,
                     "size=4k,mode=0755");
    if (!s.ok()) {
      Say(s.message());
    }
  }
  return Status::Ok();
}

Status DropCapabilities() {
  Result<std::string> last_text = ReadFile("/proc/sys/kernel/cap_last_cap");
  long long last = CAP_LAST_CAP;
  if (last_text.ok() && !ParseInt(Trim(*last_text), &last)) {
    last = CAP_LAST_CAP;
  }
  uint64_t keep = 0;
  for (int cap : kWorkerCapabilities) {
    keep |= uint64_t{1} << cap;
  }
  const uint64_t init_only = (uint64_t{1} << CAP_MKNOD) | (uint64_t{1} << CAP_SYS_ADMIN);
  for (long long cap = 0; cap <= last && cap < 64; ++cap) {
    if ((keep & (uint64_t{1} << cap)) == 0 && ::prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) != 0 &&
        errno != EINVAL) {
      return InternalError(Errno("drop capability " + std::to_string(cap)));
    }
  }
  // This process keeps no more than its children can have either.
  __user_cap_header_struct header{_LINUX_CAPABILITY_VERSION_3, 0};
  __user_cap_data_struct data[2] = {};
  if (::syscall(SYS_capget, &header, data) != 0) {
    return InternalError(Errno("capget"));
  }
  for (int i = 0; i < 2; ++i) {
    uint32_t mask = static_cast<uint32_t>(keep >> (32 * i));
    data[i].effective &= mask;
    data[i].permitted &= mask | static_cast<uint32_t>(init_only >> (32 * i));
    data[i].inheritable &= mask;
  }
  if (::syscall(SYS_capset, &header, data) != 0) {
    return InternalError(Errno("capset"));
  }
  return Status::Ok();
}

Status SetInitCapability(int cap, bool effective) {
  __user_cap_header_struct header{_LINUX_CAPABILITY_VERSION_3, 0};
  __user_cap_data_struct data[2] = {};
  if (::syscall(SYS_capget, &header, data) != 0) {
    return InternalError(Errno("capget"));
  }
  uint32_t bit = uint32_t{1} << (cap % 32);
  __user_cap_data_struct& d = data[cap / 32];
  d.effective = effective ? (d.effective | bit) : (d.effective & ~bit);
  if (::syscall(SYS_capset, &header, data) != 0) {
    return InternalError(Errno("capset"));
  }
  return Status::Ok();
}

Status SetUpNetwork(const WorkerDocument& doc) {
  int sock = ::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (sock < 0) {
    return InternalError(Errno("socket"));
  }
  Status s = BringUp(sock, "lo");
  if (s.ok()) {
    s = SetInterface(sock, "lo:md", kMetadataAddress, 32);
  }
  if (s.ok()) {
    // IPv4 only, like a TPU VM's default network; it also spares the bridge IPv6 chatter.
    // (A sysctl file is written in place: no temporary files in /proc.)
    int fd = ::open("/proc/sys/net/ipv6/conf/eth0/disable_ipv6", O_WRONLY | O_CLOEXEC);
    if (fd >= 0) {
      [[maybe_unused]] ssize_t n = ::write(fd, "1\n", 2);
      ::close(fd);
    }
    s = SetInterface(sock, "eth0", doc.address, doc.prefix_length);
  }
  if (s.ok()) {
    s = BringUp(sock, "eth0");
  }
  ::close(sock);
  return s;
}

// The worker's own host key, made at first boot: "ssh-ed25519 AAAA…".
Result<std::string> EnsureHostKey(const std::string& hostname) {
  struct stat st;
  if (::stat(kHostKeyMarker, &st) != 0 || ::stat(kHostKey, &st) != 0) {
    if (DIR* d = ::opendir("/etc/ssh")) {
      while (dirent* e = ::readdir(d)) {
        if (StartsWith(e->d_name, "ssh_host_")) {
          ::unlink((std::string("/etc/ssh/") + e->d_name).c_str());
        }
      }
      ::closedir(d);
    }
    TPUFLEET_ASSIGN_OR_RETURN(std::string keygen, FindProgram("ssh-keygen", "openssh-client"));
    TPUFLEET_TRY(RunChecked(
        {keygen, "-q", "-t", "ed25519", "-N", "", "-C", "root@" + hostname, "-f", kHostKey}));
    TPUFLEET_TRY(WriteFileAtomic(kHostKeyMarker, "made by tpufleet-emulator-worker\n", 0600));
  }
  TPUFLEET_ASSIGN_OR_RETURN(std::string pub, ReadFile(std::string(kHostKey) + ".pub"));
  std::vector<std::string> parts = Split(Trim(pub), ' ');
  if (parts.size() < 2) {
    return InternalError("bad host key file " + std::string(kHostKey) + ".pub");
  }
  return parts[0] + " " + parts[1];
}

Status WriteHostsFiles(const WorkerDocument& doc) {
  std::string hosts =
      "127.0.0.1\tlocalhost\n"
      "::1\tlocalhost ip6-localhost ip6-loopback\n"
      "169.254.169.254\tmetadata.google.internal metadata\n";
  for (const WorkerAddress& w : doc.hosts) {
    hosts += w.address + "\t";
    if (!doc.domain.empty()) {
      hosts += w.hostname + "." + doc.domain + " ";
    }
    hosts += w.hostname + "\n";
  }
  TPUFLEET_TRY(WriteIfChanged("/etc/hosts", hosts, 0644));
  return WriteIfChanged("/etc/hostname", doc.hostname + "\n", 0644);
}

Result<pid_t> StartSshd(const std::string& sshd) {
  // stdin from /dev/null; -e: its log goes to our stderr.
  return SpawnProgram({sshd, "-D", "-e", "-f", kSshdConfig}, {});
}

// True once something in this network namespace listens on TCP port 22.
bool Port22Listening() {
  Result<std::string> tcp = ReadFile("/proc/net/tcp");
  if (!tcp.ok()) {
    return false;
  }
  for (const std::string& line : Split(*tcp, '\n')) {
    std::vector<std::string> f;
    for (const std::string& part : Split(line, ' ')) {
      if (!part.empty()) {
        f.push_back(part);
      }
    }
    // "sl local_address rem_address st …"; state 0A is LISTEN, port 22 is 0016.
    if (f.size() > 3 && f[1].size() > 5 && f[1].substr(f[1].size() - 5) == ":0016" &&
        f[3] == "0A") {
      return true;
    }
  }
  return false;
}

}  // namespace tpufleet::emulator::hosts
