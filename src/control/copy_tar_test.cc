// Downloads from a worker that sends a hostile tar stream (issue 10: cp run as root made
// a block device and kept setuid bits), TarGuard on its own, and what cp writes in this
// machine's shared directories (a directory's tar, a download's staging) as the user
// nobody would look for it.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "control/copy.h"
#include "control/tar_guard.h"
#include "control/testing/copy_fixture.h"
#include "util/file.h"
#include "util/strings.h"
#include "util/testing/as_nobody.h"

namespace tpufleet {
namespace {

namespace fs = std::filesystem;
using testing::Contains;
using testing::CopyTest;
using testing::Feed;
using testing::ModeOf;
using testing::Read;
using testing::TarOf;
using testing::Tree;
using testing::Write;

// One entry of a tar stream as a hostile worker's tar could write it (ustar).
struct Entry {
  std::string name;
  char type = '0';
  unsigned mode = 0644;
  std::string data;
  std::string link;
  unsigned major = 0, minor = 0;
};
Entry Dir(std::string name, unsigned mode = 0755) { return {std::move(name), '5', mode, "", "", 0, 0}; }
Entry File(std::string name, unsigned mode = 0644, std::string data = "x") {
  return {std::move(name), '0', mode, std::move(data), "", 0, 0};
}
Entry Symlink(std::string name, std::string target) { return {std::move(name), '2', 0777, "", std::move(target), 0, 0}; }
Entry HardLink(std::string name, std::string target) { return {std::move(name), '1', 0644, "", std::move(target), 0, 0}; }
Entry Special(std::string name, char type, unsigned major = 0, unsigned minor = 0) {
  return {std::move(name), type, 0666, "", "", major, minor};
}

std::string TarStream(const std::vector<Entry>& entries) {
  std::string out;
  for (const Entry& e : entries) {
    std::string h(512, '\0');
    auto put = [&](size_t at, size_t len, const std::string& v) {
      std::memcpy(&h[at], v.data(), std::min(len, v.size()));
    };
    auto oct = [&](size_t at, size_t len, unsigned long long v) {
      char buf[32];
      std::snprintf(buf, sizeof buf, "%0*llo", static_cast<int>(len - 1), v);
      std::memcpy(&h[at], buf, len - 1);
    };
    put(0, 100, e.name);
    oct(100, 8, e.mode);
    oct(108, 8, 0);
    oct(116, 8, 0);
    oct(124, 12, e.data.size());
    oct(136, 12, 0);
    h[156] = e.type;
    put(157, 100, e.link);
    std::memcpy(&h[257], "ustar\0" "00", 8);
    oct(329, 8, e.major);
    oct(337, 8, e.minor);
    std::memset(&h[148], ' ', 8);
    unsigned sum = 0;
    for (char c : h) {
      sum += static_cast<unsigned char>(c);
    }
    oct(148, 7, sum);
    out += h + e.data + std::string((512 - e.data.size() % 512) % 512, '\0');
  }
  return out + std::string(1024, '\0');
}

// --- TarGuard --------------------------------------------------------------------------

// What the guard passes on of `stream` fed in pieces of `piece`, and its status.
Status Guard(const std::string& stream, std::string* out, size_t piece = 700,
             TarGuard* guard = nullptr) {
  TarGuard own;
  TarGuard& g = guard ? *guard : own;
  for (size_t at = 0; at < stream.size(); at += piece) {
    TPUFLEET_TRY(g.Feed(std::string_view(stream).substr(at, piece), *out));
  }
  return Status::Ok();
}

TEST(TarGuard, ARealTreeWithLongNamesAndInnerLinksPassesUnchanged) {
  TempDir dir;
  std::string deep = dir.path() + "/code/" + std::string(120, 'd');
  Write(deep + "/" + std::string(90, 'f') + ".txt", "long");
  Write(dir.path() + "/code/a.txt", "a");
  fs::create_symlink("a.txt", dir.path() + "/code/link");
  fs::create_symlink("../a.txt", deep + "/up");
  fs::create_hard_link(dir.path() + "/code/a.txt", dir.path() + "/code/hard");
  std::string tar = TarOf(dir.path(), "code");
  std::string out;
  TarGuard guard;
  ASSERT_EQ(Guard(tar, &out, 333, &guard), Status::Ok());
  EXPECT_TRUE(out == tar);
  EXPECT_TRUE(std::find(guard.names().begin(), guard.names().end(),
                        "code/" + std::string(120, 'd') + "/up") != guard.names().end());
}

TEST(TarGuard, RefusesWhatIsNoFileDirectoryOrInnerLinkNamingTheEntry) {
  struct Case {
    Entry bad;
    std::string says;
  };
  for (const Case& c : std::vector<Case>{
           {Special("code/sda", '4', 8, 0), "block device"},
           {Special("code/tty", '3', 4, 1), "character device"},
           {Special("code/pipe", '6'), "fifo"},
           {File("code/../../evil.txt", 0644, "x"), "'..'"},
           {File("/etc/cron.d/evil", 0644, "x"), "absolute"},
           {Symlink("code/passwd", "/etc/passwd"), "outside what was copied"},
           {Symlink("code/up", "../../x"), "outside what was copied"},
           {Symlink("code/sib", "../other"), "outside what was copied"},
           {HardLink("code/hard", "/etc/shadow"), "hard link"},
           {HardLink("code/hard", "code/../../x"), "hard link"},
       }) {
    std::string out;
    Status s = Guard(TarStream({Dir("code/"), c.bad}), &out);
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << c.bad.name;
    EXPECT_TRUE(Contains(s.message(), "'" + c.bad.name + "'")) << s.message();
    EXPECT_TRUE(Contains(s.message(), c.says)) << s.message();
    EXPECT_EQ(out.size(), 512u) << "only code/ went on: " << c.bad.name;
  }
}

TEST(TarGuard, RefusesWritingThroughALinkItMadeAndGoingUpThroughOne) {
  std::string out;
  Status s = Guard(TarStream({Dir("code/"),
                              Symlink("code/l", "."),
                              File("code/l/x", 0644, "x")}),
                   &out);
  EXPECT_TRUE(Contains(s.message(), "'code/l/x' from the worker is below the symlink 'code/l'"))
      << s.message();
  // code/l -> . keeps code/l/.. at code's parent: lexically inside, really outside.
  out.clear();
  s = Guard(TarStream({Dir("code/"),
                       Dir("code/sub/"),
                       Symlink("code/l", "."),
                       Symlink("code/sub/x", "../l/../..")}),
            &out);
  EXPECT_TRUE(Contains(s.message(), "up through the symlink 'code/l'")) << s.message();
}

TEST(TarGuard, PaxPathsAreCheckedAsNames) {
  std::string record = " path=code/../../evil\n";
  record = std::to_string(record.size() + 2) + record;
  std::string out;
  Status s = Guard(TarStream({Dir("code/"),
                              Entry{"PaxHeaders/evil", 'x', 0644, record, "", 0, 0},
                              File("code/harmless", 0644, "x")}),
                   &out);
  EXPECT_TRUE(Contains(s.message(), "'code/../../evil'")) << s.message();
}

TEST(TarGuard, ClearsSetuidSetgidAndStickyAndKeepsTheChecksumRight) {
  std::string out;
  ASSERT_EQ(Guard(TarStream({Dir("code/", 01777), File("code/su", 06755, "#!/bin/sh\n")}), &out),
            Status::Ok());
  ProgramResult r = testing::RunLocal({"tar", "-t", "-v", "-f", "-"}, out);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_TRUE(Contains(r.output, "drwxrwxrwx")) << r.output;
  EXPECT_TRUE(Contains(r.output, "-rwxr-xr-x")) << r.output;
}

TEST(TarGuard, WhatIsNoTarIsRefused) {
  std::string out;
  Status s = Guard(std::string(4000, 'x'), &out);
  EXPECT_TRUE(Contains(s.message(), "not a tar stream")) << s.message();
  EXPECT_EQ(out, "");
}

// --- downloads from a hostile worker ---------------------------------------------------

class HostileDownloadTest : public CopyTest {
 protected:
  void Send(const std::string& tar) {
    t_.fanout.respond = [tar](const FanoutHost&, size_t i, FanoutSink& sink) {
      Feed(sink, i, tar);
      return HostResult{};
    };
  }
  // Downloads a stream of `entries` from pod:0 into local_/got; the report.
  CopyReport Get(const std::vector<Entry>& entries) {
    Send(TarStream(entries));
    Result<CopyReport> report = Cp({"pod:0:~/code"}, local_ + "/got");
    EXPECT_TRUE(report.ok()) << report.status().ToString();
    return report.ok() ? *report : CopyReport{};
  }
};

// A worker directory holding a block device gave root a brw-rw-rw- node here.
TEST_F(HostileDownloadTest, Issue10ADeviceNodeIsRefusedAndNeverCreated) {
  if (::geteuid() != 0) {
    GTEST_SKIP() << "only root can make a device node, so only root's cp is at risk";
  }
  CopyReport report = Get({Dir("code/"), Special("code/sda", '4', 8, 0)});
  ASSERT_EQ(report.workers.size(), 1u);
  EXPECT_FALSE(report.workers[0].ok);
  EXPECT_TRUE(Contains(report.workers[0].message, "'code/sda'")) << report.workers[0].message;
  EXPECT_TRUE(Contains(report.workers[0].message, "block device")) << report.workers[0].message;
  EXPECT_FALSE(fs::exists(fs::symlink_status(local_ + "/got/sda")));
  for (const std::string& p : Tree(local_)) {
    struct stat st {};
    ASSERT_EQ(::lstat((local_ + "/" + p).c_str(), &st), 0);
    EXPECT_FALSE(S_ISBLK(st.st_mode) || S_ISCHR(st.st_mode)) << p;
  }
}

TEST_F(HostileDownloadTest, Issue10AFifoIsRefused) {
  CopyReport report = Get({Dir("code/"), Special("code/pipe", '6')});
  EXPECT_FALSE(report.workers[0].ok);
  EXPECT_TRUE(Contains(report.workers[0].message, "'code/pipe'")) << report.workers[0].message;
  EXPECT_FALSE(fs::exists(fs::symlink_status(local_ + "/got/pipe")));
}

// Root's tar kept a setuid root program from the worker.
TEST_F(HostileDownloadTest, Issue10SetuidAndSetgidBitsAreDropped) {
  CopyReport report =
      Get({Dir("code/", 02755), File("code/su", 04755, "#!/bin/sh\n"), File("code/sg", 02711, "x")});
  ASSERT_TRUE(report.ok()) << report.workers[0].message;
  EXPECT_EQ(ModeOf(local_ + "/got/su"), 0755u);
  EXPECT_EQ(ModeOf(local_ + "/got/sg"), 0711u);
  EXPECT_EQ(ModeOf(local_ + "/got") & 07000, 0u);
}

TEST_F(HostileDownloadTest, Issue10ASymlinkOutOfTheDestinationIsRefused) {
  CopyReport report = Get({Dir("code/"),
                           Symlink("code/ok", "a.txt"),
                           Symlink("code/passwd", "/etc/passwd")});
  EXPECT_FALSE(report.workers[0].ok);
  EXPECT_TRUE(Contains(report.workers[0].message, "'code/passwd'")) << report.workers[0].message;
  EXPECT_TRUE(Contains(report.workers[0].message, "/etc/passwd")) << report.workers[0].message;
  EXPECT_FALSE(fs::exists(fs::symlink_status(local_ + "/got/passwd")));
}

TEST_F(HostileDownloadTest, Issue10ADotDotEntryIsRefusedByName) {
  CopyReport report = Get({Dir("code/"), File("code/../../evil.txt", 0644, "pwned")});
  EXPECT_FALSE(report.workers[0].ok);
  EXPECT_TRUE(Contains(report.workers[0].message, "refused: 'code/../../evil.txt'"))
      << report.workers[0].message;
  EXPECT_FALSE(fs::exists(t_.dir.path() + "/evil.txt"));
  EXPECT_FALSE(fs::exists(local_ + "/evil.txt"));
}

// sudo tpufleet cp … left root-owned files in the user's directory.
TEST_F(HostileDownloadTest, Issue10UnderSudoTheFilesBelongToTheUser) {
  if (::geteuid() != 0) {
    GTEST_SKIP() << "only root gives files away";
  }
  fs::create_directories(local_ + "/mine");
  ASSERT_EQ(::setenv("SUDO_UID", "4242", 1), 0);
  ASSERT_EQ(::setenv("SUDO_GID", "4343", 1), 0);
  Send(TarStream({Dir("code/"), File("code/a", 0644, "a"), Symlink("code/l", "a")}));
  Result<CopyReport> into = Cp({"pod:0:~/code"}, local_ + "/mine");
  Result<CopyReport> several = Cp({"pod:0-1:~/code"}, local_ + "/logs");
  ::unsetenv("SUDO_UID");
  ::unsetenv("SUDO_GID");
  ASSERT_TRUE(into.ok() && into->ok()) << into.status().ToString();
  ASSERT_TRUE(several.ok() && several->ok()) << several.status().ToString();
  for (const char* p : {"/mine/code", "/mine/code/a", "/mine/code/l", "/logs",
                               "/logs/pod-w1", "/logs/pod-w1/code/a"}) {
    struct stat st {};
    ASSERT_EQ(::lstat((local_ + p).c_str(), &st), 0) << p;
    EXPECT_EQ(st.st_uid, 4242u) << p;
    EXPECT_EQ(st.st_gid, 4343u) << p;
  }
  struct stat st {};
  ASSERT_EQ(::stat((local_ + "/mine").c_str(), &st), 0);
  EXPECT_EQ(st.st_uid, 0u) << "the existing directory it went into keeps its owner";
}

// --- what cp leaves in shared directories ----------------------------------------------

// A directory upload wrote /tmp/<pid>-<name>.tar, world-readable: nobody read a 0600
// secret out of a 0700 directory.
TEST_F(CopyTest, Issue10NobodyCannotReadTheTarOfADirectoryDuringTheUpload) {
  if (auto why = NobodySkipReason()) {
    GTEST_SKIP() << *why;
  }
  std::string src = local_ + "/private";
  Write(src + "/secret", "the secret", 0600);
  ASSERT_EQ(::chmod(src.c_str(), 0700), 0);
  std::string tar_path;
  int nobody_read = -2;
  t_.fanout.respond = [&](const FanoutHost&, size_t i, FanoutSink&) {
    if (i == 0) {
      tar_path = jobs().back().stdin_path;
      nobody_read = RunAsNobody([&] {
        int fd = ::open(tar_path.c_str(), O_RDONLY);
        return fd >= 0 ? 1 : 0;
      });
    }
    return HostResult{};
  };
  ASSERT_TRUE(Cp({src}, "solo:~/x").ok());
  EXPECT_FALSE(tar_path.empty());
  EXPECT_EQ(nobody_read, 0) << "nobody opened " << tar_path;
  EXPECT_FALSE(fs::exists(fs::path(tar_path).parent_path())) << "the private directory is left";
}

// The staging directory of a one-worker download was DEST's parent/.tpufleet-cp-<pid>: in
// a directory others can write, nobody could plant that name as a symlink, to a directory
// of its own (root's cp then unpacked the worker's files there) or, as here, to nothing
// (the download failed).
TEST_F(CopyTest, Issue10NobodyCannotPlantTheStagingDirectoryOfADownload) {
  if (auto why = NobodySkipReason()) {
    GTEST_SKIP() << *why;
  }
  TempDir outside;  // local_ is in a 0700 directory nobody cannot enter
  ASSERT_EQ(::chmod(outside.path().c_str(), 0755), 0);
  std::string shared = outside.path() + "/shared";
  fs::create_directories(shared);
  ASSERT_EQ(::chmod(shared.c_str(), 0777), 0);  // a group directory, not sticky
  std::string planted = shared + "/.tpufleet-cp-" + std::to_string(::getpid());
  ASSERT_EQ(RunAsNobody([&] { return ::symlink("victim", planted.c_str()) == 0 ? 0 : 1; }), 0);
  Write(local_ + "/remote/out/a", "a");
  std::string tar = TarOf(local_ + "/remote", "out");
  t_.fanout.respond = [tar](const FanoutHost&, size_t i, FanoutSink& sink) {
    Feed(sink, i, tar);
    return HostResult{};
  };
  Result<CopyReport> report = Cp({"solo:~/out"}, shared + "/got");
  ASSERT_TRUE(report.ok()) << report.status().ToString();
  EXPECT_TRUE(report->ok()) << report->workers[0].message;
  EXPECT_EQ(Read(shared + "/got/a"), "a");
  EXPECT_FALSE(fs::exists(shared + "/victim"));
}

// A worker's receive script wrote to DEST.tpufleet-tmp.$$: in a directory others can
// write, nobody planted that name for the next pids as a symlink to a file of the login's,
// which the copy then overwrote.
TEST_F(CopyTest, Issue10NobodyCannotPlantTheWorkersTemporaryName) {
  if (auto why = NobodySkipReason()) {
    GTEST_SKIP() << *why;
  }
  TempDir outside;
  ASSERT_EQ(::chmod(outside.path().c_str(), 0755), 0);
  std::string shared = outside.path() + "/shared";
  fs::create_directories(shared);
  ASSERT_EQ(::chmod(shared.c_str(), 0777), 0);  // a group directory, not sticky
  std::string victim = local_ + "/victim";  // the login's own file
  Write(victim, "precious");
  Write(local_ + "/data.bin", "payload");
  ASSERT_TRUE(Cp({local_ + "/data.bin"}, "solo:" + shared + "/").ok());
  ASSERT_EQ(jobs().size(), 1u);
  Result<std::string> last = ReadFile("/proc/sys/kernel/ns_last_pid");
  ASSERT_TRUE(last.ok());
  long long pid = 0;
  ASSERT_TRUE(ParseInt(Trim(*last), &pid));
  constexpr int kPids = 300;  // the shells the next run starts come within these
  ASSERT_EQ(RunAsNobody([&] {
              int made = 0;
              char name[4096];
              for (long long p = pid + 1; p <= pid + kPids; ++p) {
                std::snprintf(name, sizeof name, "%s/data.bin.tpufleet-tmp.%lld", shared.c_str(), p);
                made += ::symlink(victim.c_str(), name) == 0;
              }
              return made == kPids ? 0 : 1;
            }),
            0);
  ProgramResult r = testing::RunOnWorker(jobs()[0].command, "payload", local_);
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(Read(victim), "precious");
  EXPECT_EQ(Read(shared + "/data.bin"), "payload");
}

}  // namespace
}  // namespace tpufleet
