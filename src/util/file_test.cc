#include "util/file.h"

#include <dirent.h>
#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <string>
#include <vector>

#include "util/testing/status_printer.h"

namespace tpufleet {
namespace {

// A fresh directory under /tmp for each test, removed (with its files) afterwards.
class FileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/tpufleet-file-test-XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    saved_umask_ = ::umask(022);
  }

  void TearDown() override {
    ::umask(saved_umask_);
    for (const std::string& name : Names()) {
      ::unlink((dir_ + "/" + name).c_str());
    }
    ::rmdir(dir_.c_str());
  }

  std::string Path(const std::string& name) const { return dir_ + "/" + name; }

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

  std::string dir_;
  mode_t saved_umask_ = 022;
};

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

}  // namespace
}  // namespace tpufleet
