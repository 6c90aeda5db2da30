#include "util/file.h"
#include "util/private_file.h"

#include <dirent.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <string>
#include <vector>

#include "util/testing/as_nobody.h"
#include "util/testing/status_printer.h"
#include "util/testing/temp_dir.h"

namespace tpufleet {
namespace {

// A fresh directory for each test, removed (with its files) afterwards.
class FileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_FALSE(tmp_.path().empty());
    dir_ = tmp_.path();
    saved_umask_ = ::umask(022);
  }

  void TearDown() override { ::umask(saved_umask_); }

  std::string Path(const std::string& name) const { return tmp_.Path(name); }

  // The directory's entries, without "." and "..".
  std::vector<std::string> Names() const {
    std::vector<std::string> names;
    if (DIR* d = ::opendir(dir_.c_str())) {
      while (dirent* e = ::readdir(d)) {
        std::string n = e->d_name;
        if (n != "." && n != "..") {
          names.push_back(n);
        }
      }
      ::closedir(d);
    }
    return names;
  }

  int ModeOf(const std::string& path) const {
    struct stat st {};
    if (::stat(path.c_str(), &st) != 0) {
      return -1;
    }
    return static_cast<int>(st.st_mode & 07777);
  }

  TempDir tmp_;
  std::string dir_;
  mode_t saved_umask_ = 022;
};

TEST_F(FileTest, ListDirectoryNamesTheEntriesAndIsEmptyForWhatItCannotRead) {
  ASSERT_EQ(WriteFileAtomic(Path("a"), "1", 0600), Status::Ok());
  ASSERT_EQ(WriteFileAtomic(Path("b"), "2", 0600), Status::Ok());
  std::vector<std::string> names = ListDirectory(dir_);
  std::sort(names.begin(), names.end());
  EXPECT_EQ(names, (std::vector<std::string>{"a", "b"}));
  EXPECT_TRUE(ListDirectory(Path("no-such-dir")).empty());
  EXPECT_TRUE(ListDirectory(Path("a")).empty());  // a file, not a directory
}

TEST(ReadToEof, ReadsAPipeUntilItsWriterCloses) {
  int fds[2];
  ASSERT_EQ(::pipe(fds), 0);
  std::string big(3 * 4096 + 17, 'x');  // more than one read
  ASSERT_EQ(::write(fds[1], big.data(), big.size()), static_cast<ssize_t>(big.size()));
  ::close(fds[1]);
  EXPECT_EQ(ReadToEof(fds[0]), big);
  EXPECT_EQ(ReadToEof(fds[0]), "");  // at end, it stays there
  ::close(fds[0]);
  EXPECT_EQ(ReadToEof(-1), "");  // an error ends it too
}

TEST_F(FileTest, WriteThenReadBack) {
  std::string data = "families:\n  v4: {}\n";
  data += std::string("\0binary\xff", 8);  // not just text
  ASSERT_EQ(WriteFileAtomic(Path("a.yaml"), data), Status::Ok());
  Result<std::string> back = ReadFile(Path("a.yaml"));
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(*back, data);
  EXPECT_EQ(ModeOf(Path("a.yaml")), 0644);  // the default mode
}

TEST_F(FileTest, ReadsLargeFilesWhole) {
  std::string data(200000, 'x');  // several read(2) calls
  data.back() = 'y';
  ASSERT_EQ(WriteFileAtomic(Path("big"), data), Status::Ok());
  Result<std::string> back = ReadFile(Path("big"));
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(back->size(), data.size());
  EXPECT_EQ(*back, data);
}

TEST_F(FileTest, EmptyFile) {
  ASSERT_EQ(WriteFileAtomic(Path("empty"), ""), Status::Ok());
  Result<std::string> back = ReadFile(Path("empty"));
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(*back, "");
}

TEST_F(FileTest, ReplacesTheOldContentAndLeavesNoTemporaryFile) {
  ASSERT_EQ(WriteFileAtomic(Path("state"), "old content, longer than the new"), Status::Ok());
  ASSERT_EQ(WriteFileAtomic(Path("state"), "new"), Status::Ok());
  EXPECT_EQ(ReadFile(Path("state")).value(), "new");
  EXPECT_EQ(Names(), std::vector<std::string>{"state"});
}

TEST_F(FileTest, ModeIsExactUnderARestrictiveUmask) {
  ::umask(077);  // would turn 0644 into 0600
  ASSERT_EQ(WriteFileAtomic(Path("public"), "x", 0644), Status::Ok());
  EXPECT_EQ(ModeOf(Path("public")), 0644);
}

TEST_F(FileTest, ModeIsExactUnderAPermissiveUmask) {
  ::umask(0);
  ASSERT_EQ(WriteFileAtomic(Path("token"), "secret", 0600), Status::Ok());
  EXPECT_EQ(ModeOf(Path("token")), 0600);
}

TEST_F(FileTest, ModeIsExactWhenReplacingAFileWithOtherBits) {
  ASSERT_EQ(WriteFileAtomic(Path("creds"), "old", 0666), Status::Ok());
  ::umask(0);
  ASSERT_EQ(::chmod(Path("creds").c_str(), 0666), 0);
  ASSERT_EQ(ModeOf(Path("creds")), 0666);
  ASSERT_EQ(WriteFileAtomic(Path("creds"), "new", 0600), Status::Ok());
  EXPECT_EQ(ModeOf(Path("creds")), 0600);
  EXPECT_EQ(ReadFile(Path("creds")).value(), "new");
}

TEST_F(FileTest, MissingFileIsNotFoundAndNamesThePath) {
  Result<std::string> r = ReadFile(Path("nope.yaml"));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kNotFound);
  EXPECT_EQ(r.status().message(), Path("nope.yaml") + ": No such file or directory");
}

TEST_F(FileTest, WriteIntoAMissingDirectoryFails) {
  Status s = WriteFileAtomic(Path("no-such-dir/f"), "x");
  EXPECT_EQ(s.code(), StatusCode::kNotFound);
  EXPECT_NE(s.message().find(Path("no-such-dir/f")), std::string::npos) << s.message();
  EXPECT_TRUE(Names().empty());
}

TEST_F(FileTest, ReadingADirectoryFails) {
  Result<std::string> r = ReadFile(dir_);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(), dir_ + ": Is a directory");
}

TEST_F(FileTest, UnreadableFileIsPermissionDenied) {
  if (::geteuid() == 0) {
    GTEST_SKIP() << "root reads any file";
  }
  ASSERT_EQ(WriteFileAtomic(Path("locked"), "x", 0000), Status::Ok());
  Result<std::string> r = ReadFile(Path("locked"));
  EXPECT_EQ(r.status().code(), StatusCode::kPermissionDenied);
}

// ---- Issue 10: what a local user could do to tpufleet's files ----

// A directory anyone may write (as /tmp is, sticky), removed with its contents.
class SharedDir : public TempDir {
 public:
  SharedDir() { ::chmod(path().c_str(), 01777); }
};

TEST(Issue10, ReadFileStopsAtTheLimitOnADevice) {
  // `validate /dev/zero` read for ever (16 GB before it was stopped).
  constexpr size_t kLimit = 1 << 20;
  auto start = std::chrono::steady_clock::now();
  Result<std::string> r = ReadFile("/dev/zero", kLimit);
  auto took = std::chrono::steady_clock::now() - start;
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(r.status().message(),
            "/dev/zero is a character device that gave more than 1 MiB, the most that is read");
  EXPECT_LT(took, std::chrono::seconds(2));
}

TEST(Issue10, ReadFileRefusesAnOversizedFileBeforeReadingIt) {
  SharedDir dir;
  std::string path = dir.path() + "/huge.yaml";
  // Sparse: 64 GiB that would take minutes to read and all the memory to hold.
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL, 0600);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(::ftruncate(fd, off_t{64} << 30), 0);
  ::close(fd);
  auto start = std::chrono::steady_clock::now();
  Result<std::string> r = ReadFile(path, 1 << 20);
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(1));
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(r.status().message(), path + ": the file is 64 GiB; at most 1 MiB is read");
  // At the limit exactly, it is read.
  ASSERT_EQ(WriteFileAtomic(path, std::string(1 << 20, 'x')), Status::Ok());
  EXPECT_EQ(ReadFile(path, 1 << 20)->size(), size_t{1} << 20);
}

TEST(Issue10, ReadFileReadsAPipeUpToTheLimit) {
  int fds[2];
  ASSERT_EQ(::pipe(fds), 0);
  ASSERT_EQ(::write(fds[1], "fleet: x\n", 9), 9);
  ::close(fds[1]);
  std::string path = "/proc/self/fd/" + std::to_string(fds[0]);
  Result<std::string> r = ReadFile(path, 8);
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument) << r.status().ToString();
  EXPECT_NE(r.status().message().find("a pipe that gave more than 8 bytes"), std::string::npos)
      << r.status().message();
  ::close(fds[0]);
}

TEST(Issue10, WriteFileAtomicIgnoresATemporaryNamePlantedByAnotherUser) {
  if (auto why = NobodySkipReason()) {
    GTEST_SKIP() << *why;
  }
  // The attack on the old fixed name PATH.tmp.<pid>: root writes into a directory of
  // nobody's (a user's ~/.ssh, say); nobody links that name to a file of root's, and
  // root's write went through the link into that file.
  SharedDir shared;
  std::string dir = shared.path() + "/nobodys";
  std::string precious = shared.path() + "/precious";
  ASSERT_EQ(WriteFileAtomic(precious, "root's own\n", 0600), Status::Ok());
  std::string path = dir + "/config";
  std::string planted = path + ".tmp." + std::to_string(::getpid());
  ASSERT_EQ(RunAsNobody([&] {
              return ::mkdir(dir.c_str(), 0755) == 0 &&
                             ::symlink(precious.c_str(), planted.c_str()) == 0
                         ? 0
                         : 1;
            }),
            0);
  ASSERT_EQ(WriteFileAtomic(path, "new\n", 0600), Status::Ok());
  EXPECT_EQ(ReadFile(precious).value(), "root's own\n");
  EXPECT_EQ(ReadFile(path).value(), "new\n");
  struct stat st {};
  ASSERT_EQ(::lstat(path.c_str(), &st), 0);
  EXPECT_TRUE(S_ISREG(st.st_mode));
  EXPECT_EQ(st.st_uid, ::geteuid());
}

TEST(WriteFileAtomic, LeavesNothingWhenTheRenameFails) {
  // The target is a non-empty directory: the rename fails, the temporary file goes.
  SharedDir dir;
  std::string path = dir.path() + "/target";
  ASSERT_EQ(::mkdir(path.c_str(), 0700), 0);
  ASSERT_EQ(WriteFileAtomic(path + "/keep", "x"), Status::Ok());
  Status first = WriteFileAtomic(path, "a");
  Status second = WriteFileAtomic(path, "b");
  ASSERT_FALSE(first.ok());
  ASSERT_FALSE(second.ok());
  // Nothing is left behind when it fails.
  DIR* d = ::opendir(dir.path().c_str());
  ASSERT_NE(d, nullptr);
  std::vector<std::string> names;
  while (dirent* e = ::readdir(d)) {
    if (std::string(e->d_name) != "." && std::string(e->d_name) != "..") {
      names.push_back(e->d_name);
    }
  }
  ::closedir(d);
  EXPECT_EQ(names, std::vector<std::string>{"target"});
}

TEST(ReadPrivateFile, ReadsOnlyAPrivateRegularFileOfMine) {
  TempDir tmp;
  std::string path = tmp.path() + "/secret";
  EXPECT_EQ(ReadPrivateFile(path, 64).status().code(), StatusCode::kNotFound);
  ASSERT_EQ(WriteFileAtomic(path, "s3cret\n", 0600), Status::Ok());
  Result<std::string> read = ReadPrivateFile(path, 64);
  ASSERT_TRUE(read.ok()) << read.status().ToString();
  EXPECT_EQ(*read, "s3cret\n");
  EXPECT_EQ(ReadPrivateFile(path, 3).status().code(), StatusCode::kInvalidArgument);
  ASSERT_EQ(::chmod(path.c_str(), 0640), 0);
  Result<std::string> shared = ReadPrivateFile(path, 64);
  EXPECT_EQ(shared.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(shared.status().message(), path + " has mode 0640: others may read or write it");
  ASSERT_EQ(::chmod(path.c_str(), 0600), 0);
  std::string link = tmp.path() + "/link";
  ASSERT_EQ(::symlink(path.c_str(), link.c_str()), 0);
  Result<std::string> linked = ReadPrivateFile(link, 64);
  EXPECT_EQ(linked.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(linked.status().message().find("symbolic link"), std::string::npos);
  std::string fifo = tmp.path() + "/fifo";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  EXPECT_EQ(ReadPrivateFile(fifo, 64).status().message(), fifo + " is not a regular file");
}

TEST(MakePrivateDirs, MakesParentsWithMode0700) {
  TempDir tmp;
  auto Path = [&](const std::string& name) { return tmp.path() + "/" + name; };
  std::string dir = Path("a/b/c");
  ASSERT_EQ(MakePrivateDirs(dir), Status::Ok());
  for (const std::string& d : {Path("a"), Path("a/b"), dir}) {
    struct stat st;
    ASSERT_EQ(::stat(d.c_str(), &st), 0) << d;
    EXPECT_EQ(st.st_mode & 07777, 0700u) << d;
  }
  EXPECT_EQ(MakePrivateDirs(dir), Status::Ok());  // exists: fine
  ASSERT_EQ(WriteFileAtomic(Path("file"), "x"), Status::Ok());
  EXPECT_EQ(MakePrivateDirs(Path("file")).code(), StatusCode::kFailedPrecondition);
}

TEST(Issue10, MakePrivateDirsRefusesADirectoryPreCreatedByAnotherUser) {
  if (auto why = NobodySkipReason()) {
    GTEST_SKIP() << *why;
  }
  SharedDir shared;
  std::string state = shared.path() + "/tpufleet";
  ASSERT_EQ(RunAsNobody([&] { return ::mkdir(state.c_str(), 0777) == 0 ? 0 : 1; }), 0);
  Status s = MakePrivateDirs(state);
  EXPECT_EQ(s.code(), StatusCode::kFailedPrecondition) << s.ToString();
  EXPECT_NE(s.message().find(state + " belongs to nobody (uid "), std::string::npos)
      << s.message();
  EXPECT_NE(s.message().find("not to root (uid 0), who runs tpufleet"), std::string::npos)
      << s.message();

  // A symlink nobody planted is refused too, even when it leads to a directory of ours.
  std::string mine = shared.path() + "/mine";
  ASSERT_EQ(::mkdir(mine.c_str(), 0700), 0);
  std::string link = shared.path() + "/link";
  ASSERT_EQ(RunAsNobody([&] { return ::symlink(mine.c_str(), link.c_str()) == 0 ? 0 : 1; }), 0);
  EXPECT_EQ(MakePrivateDirs(link).code(), StatusCode::kFailedPrecondition);
  // Ours: fine.
  EXPECT_EQ(MakePrivateDirs(mine), Status::Ok());
}

TEST(Issue10, MakePrivateDirsRefusesADirectoryOthersMayWrite) {
  SharedDir shared;
  std::string dir = shared.path() + "/state";
  ASSERT_EQ(::mkdir(dir.c_str(), 0700), 0);
  ASSERT_EQ(::chmod(dir.c_str(), 0775), 0);
  Status s = MakePrivateDirs(dir);
  EXPECT_EQ(s.code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(s.message(), dir + " has mode 0775: its group or others may write it");
  ASSERT_EQ(::chmod(dir.c_str(), 0755), 0);  // readable by others is the user's choice
  EXPECT_EQ(MakePrivateDirs(dir), Status::Ok());
  // What it makes is 0700, parents included, whatever the umask.
  mode_t old = ::umask(0);
  EXPECT_EQ(MakePrivateDirs(dir + "/a/b"), Status::Ok());
  ::umask(old);
  struct stat st {};
  ASSERT_EQ(::stat((dir + "/a").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0700u);
}

TEST(MemoryFile, OpensByPathWithItsContentAndMode0600AndIsGoneWithTheObject) {
  std::string path;
  {
    Result<MemoryFile> f = MemoryFile::Make("config", "Host w0\n");
    ASSERT_TRUE(f.ok()) << f.status().message();
    path = f->path();
    EXPECT_EQ(path.rfind("/proc/" + std::to_string(::getpid()) + "/fd/", 0), 0u) << path;
    Result<std::string> read = ReadFile(path);
    ASSERT_TRUE(read.ok()) << read.status().message();
    EXPECT_EQ(*read, "Host w0\n");
    struct stat st {};
    ASSERT_EQ(::stat(path.c_str(), &st), 0);
    EXPECT_EQ(st.st_mode & 07777, 0600u);  // what ssh asks of a config (-F)
    EXPECT_EQ(st.st_uid, ::geteuid());
    // Another user cannot open it, as with a file in a 0700 directory.
    if (!NobodySkipReason()) {
      const char* p = path.c_str();
      EXPECT_EQ(RunAsNobody([p] { return ::open(p, O_RDONLY) < 0 ? 0 : 1; }), 0);
    }
  }
  EXPECT_NE(::access(path.c_str(), F_OK), 0);  // nothing left behind
}

}  // namespace
}  // namespace tpufleet
