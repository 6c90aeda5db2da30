#include "emulator/hosts/worker_root.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <vector>

#include "emulator/hosts/system_programs.h"
#include "emulator/hosts/worker_setup.h"
#include "util/unique_fd.h"

namespace tpufleet::emulator::hosts {
namespace {

// Where the machine's root is between EnterOwnRoot and LeaveMachineRoot.
constexpr const char* kOldRoot = "/.tpufleet-machine-root";

// One entry of the machine's "/".
struct Entry {
  std::string name;
  mode_t type = 0;   // S_IFDIR, S_IFREG or S_IFLNK
  std::string link;  // a link's target
  UniqueFd tree;     // a directory's or file's detached clone, with its submounts
};

// The machine's top-level entries. The clones are taken before anything is mounted
// below the worker's disk, which may well be inside one of them (a state dir in /tmp).
Result<std::vector<Entry>> MachineEntries() {
  std::vector<Entry> out;
  DIR* dir = ::opendir("/");
  if (dir == nullptr) {
    return InternalError(Errno("opendir /"));
  }
  Status s;
  while (dirent* e = ::readdir(dir)) {
    std::string name = e->d_name;
    std::string path = "/" + name;
    struct stat st;
    if (name == "." || name == ".." || ::lstat(path.c_str(), &st) != 0) {
      continue;
    }
    Entry entry{name, st.st_mode & S_IFMT, "", UniqueFd()};
    if (S_ISLNK(st.st_mode)) {
      char target[PATH_MAX];
      ssize_t n = ::readlink(path.c_str(), target, sizeof target);
      if (n <= 0 || n >= static_cast<ssize_t>(sizeof target)) {
        continue;
      }
      entry.link.assign(target, static_cast<size_t>(n));
    } else if (S_ISDIR(st.st_mode) || S_ISREG(st.st_mode)) {
      entry.tree = UniqueFd(::open_tree(AT_FDCWD, path.c_str(),
                                        OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_RECURSIVE |
                                            AT_SYMLINK_NOFOLLOW));
      if (entry.tree.get() < 0) {
        s = InternalError(Errno("open_tree " + path));
        break;
      }
    } else {
      continue;  // a socket or device node in "/": nothing a worker needs
    }
    out.push_back(std::move(entry));
  }
  ::closedir(dir);
  TPUFLEET_TRY(s);
  return out;
}

// Removes what is at `path` (not following links): the worker's own, in the way of one
// of the machine's entries.
Status Remove(const std::string& path) {
  struct stat st;
  if (::lstat(path.c_str(), &st) != 0) {
    return Status::Ok();
  }
  if (!S_ISDIR(st.st_mode)) {
    return ::unlink(path.c_str()) == 0 ? Status::Ok() : InternalError(Errno("unlink " + path));
  }
  TPUFLEET_ASSIGN_OR_RETURN(std::string rm, FindProgram("rm"));
  return RunChecked({rm, "-rf", "--one-file-system", "--", path});
}

// Puts the machine's `e` at `path`, in the worker's root directory.
Status PutBack(const Entry& e, const std::string& path) {
  struct stat st;
  bool have = ::lstat(path.c_str(), &st) == 0;
  if (e.type == S_IFLNK) {
    char target[PATH_MAX];
    ssize_t n = have && S_ISLNK(st.st_mode) ? ::readlink(path.c_str(), target, sizeof target) : -1;
    if (n > 0 && std::string(target, static_cast<size_t>(n)) == e.link) {
      return Status::Ok();
    }
    TPUFLEET_TRY(Remove(path));
    return ::symlink(e.link.c_str(), path.c_str()) == 0 ? Status::Ok()
                                                        : InternalError(Errno("symlink " + path));
  }
  if (e.type == S_IFDIR) {
    TPUFLEET_TRY(DiskDir(path, 0755));
  } else {
    if (have && !S_ISREG(st.st_mode)) {
      TPUFLEET_TRY(Remove(path));
    }
    UniqueFd f(::open(path.c_str(), O_WRONLY | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0644));
    if (f.get() < 0) {
      return InternalError(Errno("create " + path));
    }
  }
  // The checked entry is the one mounted on: nothing follows a link in its name.
  if (::move_mount(e.tree.get(), "", AT_FDCWD, path.c_str(), MOVE_MOUNT_F_EMPTY_PATH) != 0) {
    return InternalError(Errno("move_mount /" + e.name));
  }
  return Status::Ok();
}

// <disk>/rootfs (`top`) made ready for pivot_root: a mount of its own, the machine's
// entries in it, and kOldRoot.
Status PrepareRoot(const std::string& top) {
  struct stat machine_root;
  if (::stat("/", &machine_root) != 0) {
    return InternalError(Errno("stat /"));
  }
  TPUFLEET_ASSIGN_OR_RETURN(std::vector<Entry> entries, MachineEntries());
  TPUFLEET_TRY(DiskDir(top, 0755));
  if (::lchown(top.c_str(), machine_root.st_uid, machine_root.st_gid) != 0 ||
      ::chmod(top.c_str(), machine_root.st_mode & 07777) != 0) {
    return InternalError(Errno("chmod " + top));
  }
  if (::mount(top.c_str(), top.c_str(), nullptr, MS_BIND, nullptr) != 0) {
    return InternalError(Errno("bind " + top));
  }
  for (const Entry& e : entries) {
    TPUFLEET_TRY(PutBack(e, top + "/" + e.name));
  }
  // The machine's root stays reachable at kOldRoot until LeaveMachineRoot: programs
  // are bound from it (the stand-in, the mount helper from /proc/self/exe), and a bind's
  // source must be in this namespace.
  return DiskDir(top + kOldRoot, 0700);
}

}  // namespace

Result<bool> EnterOwnRoot(const std::string& disk) {
  const std::string top = disk + "/" + kRootDirName;
  Status s = PrepareRoot(top);
  if (s.ok() && ::syscall(SYS_pivot_root, top.c_str(), (top + kOldRoot).c_str()) != 0) {
    s = InternalError(Errno("pivot_root"));
  }
  if (!s.ok()) {
    Say(s.message() + ": the worker's / stays the machine's, read-only here");
    return false;
  }
  // From here on a failure fails the boot: the working directory is the machine's.
  if (::chdir("/") != 0) {
    return InternalError(Errno("chdir /"));
  }
  return true;
}

Status LeaveMachineRoot() {
  if (::umount2(kOldRoot, MNT_DETACH) != 0 || ::rmdir(kOldRoot) != 0) {
    return InternalError(Errno(std::string("detach the machine's root at ") + kOldRoot));
  }
  return Status::Ok();
}

}  // namespace tpufleet::emulator::hosts
