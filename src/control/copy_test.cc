// ParseRemotePath, and Copy over a TestWorld whose FakeFanout stands in for the workers:
// the jobs the fan-out gets (the receive scripts with every untrusted value as an
// argument of its own, the relay chain, the direct re-send of what the chain missed),
// the report, and downloads unpacked from real tar streams. The receive scripts
// themselves are run here by a local `sh`. The same against real workers:
// test/copy_e2e_test.sh.
#include "control/copy.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <string>
#include <vector>

#include "control/testing/copy_fixture.h"
#include "control/testing/test_world.h"
#include "util/file.h"
#include "util/strings.h"
#include "util/subprocess.h"

namespace tpufleet {
namespace {

namespace fs = std::filesystem;
using std::chrono::seconds;
using testing::Contains;
using testing::kAliceKey;
using testing::kProject;
using testing::TestWorld;
using testing::CopyTest;
using testing::Exited;
using testing::Feed;
using testing::MakeSparse;
using testing::ModeOf;
using testing::Read;
using testing::RunLocal;
using testing::RunOnWorker;
using testing::Sha256;
using testing::TarOf;
using testing::Tree;
using testing::Words;
using testing::Write;

// ---------------------------------------------------------------------------------------
// ParseRemotePath

// What ParseRemotePath makes of a word that names a remote path.
struct RemoteCase {
  const char* word;
  const char* target;
  const char* path;
};

TEST(ParseRemotePath, TargetThenPathAndAWorkerListBelongsToTheTarget) {
  for (const RemoteCase& c : std::vector<RemoteCase>{
           {"pod:~/x", "pod", "~/x"},
           {"pod:/tmp/", "pod", "/tmp/"},
           {"all:/tmp/", "all", "/tmp/"},
           {"team=a:/x", "team=a", "/x"},
           {"team=a,role=x:out", "team=a,role=x", "out"},
           {"pod:", "pod", ""},
           {"pod:3:~/x", "pod:3", "~/x"},
           {"pod:1-3,5:/tmp/", "pod:1-3,5", "/tmp/"},
           {"pod:3:", "pod:3", ""},
           // A second ':' after something that is not a worker list is part of the path.
           {"pod:~/a:b", "pod", "~/a:b"},
           {"pod:x3:y", "pod", "x3:y"},
           // Digits alone are a path (a file named 12 in the home).
           {"pod:12", "pod", "12"},
       }) {
    std::optional<RemotePath> r = ParseRemotePath(c.word);
    ASSERT_TRUE(r.has_value()) << c.word;
    EXPECT_EQ(r->target, c.target) << c.word;
    EXPECT_EQ(r->path, c.path) << c.word;
  }
}

TEST(ParseRemotePath, LocalPaths) {
  for (const char* word :
       {"./a:b", "../a:b", "/abs", "/abs:x", "file", "dir/file", ":x", "", ".", "~/x"}) {
    EXPECT_FALSE(ParseRemotePath(word).has_value()) << word;
  }
}


// --- uploads ---------------------------------------------------------------------------

TEST_F(CopyTest, ASmallFileIsOneJobThatStreamsItToEveryWorker) {
  std::string file = local_ + "/notes.txt";
  Write(file, "hello", 0640);

  Result<CopyReport> report = Cp({file}, "pod:~/in/");
  ASSERT_TRUE(report.ok()) << report.status().ToString();

  ASSERT_EQ(jobs().size(), 1u);
  const FanoutJob& job = jobs()[0];
  EXPECT_EQ(job.stdin_path, file);
  EXPECT_EQ(job.key_path, t_.dir.path() + "/state/ssh/id_ed25519");
  ASSERT_EQ(job.hosts.size(), 4u);
  for (size_t i = 0; i < 4; ++i) {
    EXPECT_EQ(job.hosts[i].name, "pod/w" + std::to_string(i));
    EXPECT_EQ(job.hosts[i].address, "198.18.0." + std::to_string(i + 2));
    EXPECT_EQ(job.hosts[i].host_key, kAliceKey);
    EXPECT_EQ(job.hosts[i].command, "");  // the job's command
    EXPECT_FALSE(job.hosts[i].no_input);
  }
  std::vector<std::string> words = Words(job.command);
  ASSERT_EQ(words.size(), 8u) << job.command;
  EXPECT_EQ(words[0], "sh");
  EXPECT_EQ(words[1], "-c");
  EXPECT_EQ(words[3], "tpufleet");  // $0
  EXPECT_EQ(words[4], "~/in/");     // dest, expanded by the script
  EXPECT_EQ(words[5], "notes.txt");
  EXPECT_EQ(words[6], "5");
  EXPECT_EQ(words[7], "640");

  EXPECT_TRUE(report->ok());
  EXPECT_FALSE(report->download);
  EXPECT_EQ(report->bytes, 5u);
  ASSERT_EQ(report->workers.size(), 4u);
  for (const CopyOutcome& o : report->workers) {
    EXPECT_TRUE(o.ok) << o.worker.name;
    EXPECT_EQ(o.how, "ssh");
  }
}

// Issue 11: cp refused every worker when one (an ssh-hosts box) had no pinned host key.
// That worker is in the job, keyless, for the fan-out to fail alone; the others copy.
TEST_F(CopyTest, Issue11AWorkerWithoutAPinnedKeyDoesNotStopTheOthers) {
  Write(local_ + "/f", "x");
  Result<CopyReport> report = Cp({local_ + "/f"}, "all:/tmp/");
  ASSERT_TRUE(report.ok()) << report.status().ToString();
  ASSERT_EQ(jobs().size(), 1u);
  ASSERT_EQ(jobs()[0].hosts.size(), 6u);
  for (const FanoutHost& h : jobs()[0].hosts) {
    EXPECT_EQ(h.host_key.empty(), h.name == "box/w0") << h.name;
  }
}

TEST_F(CopyTest, TargetsAsExecTakesThem) {
  Write(local_ + "/f", "x");
  for (const auto& [dest, hosts] : std::vector<std::pair<std::string, std::vector<std::string>>>{
           {"pod:1-2,0:/tmp/", {"pod/w0", "pod/w1", "pod/w2"}},
           {"team=a:/tmp/", {"pod/w0", "pod/w1", "pod/w2", "pod/w3"}},
           {"solo:", {"solo/w0"}},
       }) {
    jobs().clear();
    Result<CopyReport> report = Cp({local_ + "/f"}, dest);
    ASSERT_TRUE(report.ok()) << dest << ": " << report.status().ToString();
    ASSERT_EQ(jobs().size(), 1u) << dest;
    std::vector<std::string> got;
    for (const FanoutHost& h : jobs()[0].hosts) {
      got.push_back(h.name);
    }
    EXPECT_EQ(got, hosts) << dest;
  }
}

TEST_F(CopyTest, AnUntrustedFileNameIsOnlyEverAQuotedArgument) {
  const std::string name = "it's a \"file\"; $(touch pwned) `touch pwned2` $HOME\\n";
  std::string file = local_ + "/" + name;
  Write(file, "payload", 0755);

  Result<CopyReport> report = Cp({file}, "pod:0:~/in/");
  ASSERT_TRUE(report.ok()) << report.status().ToString();
  ASSERT_EQ(jobs().size(), 1u);
  const std::string& command = jobs()[0].command;
  std::vector<std::string> words = Words(command);
  ASSERT_EQ(words.size(), 8u) << command;
  EXPECT_EQ(words[5], name);
  EXPECT_EQ(words[7], "755");
  // The script's text holds none of it.
  EXPECT_FALSE(Contains(words[2], "pwned")) << words[2];
  EXPECT_FALSE(Contains(words[2], "file")) << words[2];

  // Run by a shell as a worker's would: the file arrives under exactly that name, with
  // its mode, and nothing else happened.
  std::string home = t_.dir.path() + "/home-w0";
  fs::create_directories(home);
  ProgramResult r = RunOnWorker(command, "payload", home);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(Tree(home), (std::vector<std::string>{"in", "in/" + name}));
  EXPECT_EQ(Read(home + "/in/" + name), "payload");
  EXPECT_EQ(ModeOf(home + "/in/" + name), 0755u);
}

TEST_F(CopyTest, TheReceiveScriptKeepsNoHalfFile) {
  std::string file = local_ + "/data.bin";
  Write(file, "12345");
  ASSERT_TRUE(Cp({file}, "solo:~/data.bin").ok());
  ASSERT_EQ(jobs().size(), 1u);
  std::string home = t_.dir.path() + "/home-solo";
  fs::create_directories(home);

  // A stream that ends early (a dropped connection) leaves nothing under either name.
  ProgramResult r = RunOnWorker(jobs()[0].command, "123", home);
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_TRUE(Contains(r.output, "received 3 of 5 bytes")) << r.output;
  EXPECT_EQ(Tree(home), std::vector<std::string>{});

  // A whole one lands as ~/data.bin (a path that is no directory names the file), and
  // a second copy replaces it.
  Write(home + "/data.bin", "old");
  r = RunOnWorker(jobs()[0].command, "12345", home);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(Tree(home), std::vector<std::string>{"data.bin"});
  EXPECT_EQ(Read(home + "/data.bin"), "12345");
}

TEST_F(CopyTest, ADirectoryIsStreamedAsATarThatIsRemovedAfterwards) {
  std::string src = local_ + "/proj";
  Write(src + "/sub/deep/a.txt", "a");
  Write(src + "/run me $x.sh", "#!/bin/sh\n", 0755);
  Write(src + "/empty", "");

  std::string tar_path;
  uint64_t tar_size = 0;
  std::vector<std::string> listing;
  std::string home = t_.dir.path() + "/home";
  fs::create_directories(home + "/existing");
  t_.fanout.respond = [&](const FanoutHost&, size_t i, FanoutSink&) {
    const FanoutJob& job = jobs().back();
    tar_path = job.stdin_path;
    EXPECT_TRUE(fs::exists(tar_path)) << tar_path;
    tar_size = fs::file_size(tar_path);
    if (i == 0) {
      ProgramResult t = RunLocal({"tar", "-t", "-f", tar_path});
      EXPECT_EQ(t.exit_code, 0) << t.output;
      listing = Split(Trim(t.output), '\n');
      std::sort(listing.begin(), listing.end());
      // Run the receive script on the stream, into a new dir and into an existing one.
      std::string tar = Read(tar_path);
      ProgramResult r = RunOnWorker(job.command, tar, home);
      EXPECT_EQ(r.exit_code, 0) << r.output;
      std::vector<std::string> words = Words(job.command);
      EXPECT_EQ(words.size(), 5u) << job.command;
      words.back() = "~/existing";
      r = RunOnWorker(ShellJoin(words), tar, home);
      EXPECT_EQ(r.exit_code, 0) << r.output;
    }
    return HostResult{};
  };

  Result<CopyReport> report = Cp({src + "/"}, "pod:~/code");
  ASSERT_TRUE(report.ok()) << report.status().ToString();
  ASSERT_EQ(jobs().size(), 1u);  // a directory is never relayed
  EXPECT_EQ(jobs()[0].hosts.size(), 4u);
  std::vector<std::string> words = Words(jobs()[0].command);
  ASSERT_EQ(words.size(), 5u);
  EXPECT_EQ(words[4], "~/code");
  EXPECT_EQ(listing,
            (std::vector<std::string>{"proj/", "proj/empty", "proj/run me $x.sh", "proj/sub/",
                                      "proj/sub/deep/", "proj/sub/deep/a.txt"}));
  EXPECT_FALSE(tar_path.empty());
  EXPECT_FALSE(fs::exists(tar_path)) << tar_path << " is left";
  EXPECT_TRUE(report->ok());
  EXPECT_EQ(report->bytes, tar_size);

  // ~/code did not exist: it is the directory. ~/existing did: proj is put inside it.
  EXPECT_EQ(Tree(home + "/code"), (std::vector<std::string>{"empty", "run me $x.sh", "sub",
                                                            "sub/deep", "sub/deep/a.txt"}));
  EXPECT_EQ(ModeOf(home + "/code/run me $x.sh") & 0111, 0111u);
  EXPECT_EQ(Read(home + "/code/sub/deep/a.txt"), "a");
  EXPECT_EQ(Tree(home + "/existing"),
            (std::vector<std::string>{"proj", "proj/empty", "proj/run me $x.sh", "proj/sub",
                                      "proj/sub/deep", "proj/sub/deep/a.txt"}));
}

TEST_F(CopyTest, TheTarOfADirectoryIsRemovedWhenTheJobFails) {
  Write(local_ + "/proj/a", "a");
  std::string tar_path;
  t_.fanout.respond = [&](const FanoutHost&, size_t, FanoutSink& sink) {
    tar_path = jobs().back().stdin_path;
    sink.OnOutput(0, OutputStream::kStderr, "tar: cannot write\n");
    return Exited(2);
  };
  Result<CopyReport> report = Cp({local_ + "/proj"}, "solo:~/code");
  ASSERT_TRUE(report.ok()) << report.status().ToString();
  EXPECT_FALSE(report->ok());
  ASSERT_EQ(report->workers.size(), 1u);
  EXPECT_TRUE(Contains(report->workers[0].message, "tar: cannot write"))
      << report->workers[0].message;
  EXPECT_FALSE(tar_path.empty());
  EXPECT_FALSE(fs::exists(tar_path));
}

// --- errors before anything moves ------------------------------------------------------

TEST_F(CopyTest, ErrorsComeBeforeAnyJob) {
  Write(local_ + "/f", "x");
  struct Case {
    std::vector<std::string> sources;
    std::string dest;
    StatusCode code;
    std::string says;
  };
  for (const Case& c : std::vector<Case>{
           {{local_ + "/f"}, "nope:/tmp/", StatusCode::kNotFound, "nope"},
           {{local_ + "/missing"}, "pod:/tmp/", StatusCode::kNotFound, "missing"},
           {{local_ + "/f"}, "pod:9:/tmp/", StatusCode::kInvalidArgument, ""},
           {{local_ + "/f", "pod:/x"}, "pod:/tmp/", StatusCode::kInvalidArgument, "./a:b"},
           {{"pod:/x", local_ + "/f"}, local_ + "/out", StatusCode::kInvalidArgument, ""},
           {{"pod:0:/x", "pod:1:/y"}, local_ + "/out", StatusCode::kInvalidArgument, ""},
           {{"pod:/x"}, "solo:/y", StatusCode::kInvalidArgument, ""},
           {{local_ + "/f"}, local_ + "/g", StatusCode::kInvalidArgument, ""},
           {{}, "pod:/tmp/", StatusCode::kInvalidArgument, "nothing to copy"},
       }) {
    std::string what = Join(c.sources, " ") + " -> " + c.dest;
    Result<CopyReport> report = Cp(c.sources, c.dest);
    ASSERT_FALSE(report.ok()) << what;
    EXPECT_EQ(report.status().code(), c.code) << what << ": " << report.status().ToString();
    EXPECT_TRUE(Contains(report.status().message(), c.says))
        << what << ": " << report.status().ToString();
  }
  EXPECT_TRUE(jobs().empty());
}

// --- downloads -------------------------------------------------------------------------

class DownloadTest : public CopyTest {
 protected:
  void SetUp() override {
    CopyTest::SetUp();
    remote_ = t_.dir.path() + "/remote";
    Write(remote_ + "/code/sub/a.txt", "a");
    Write(remote_ + "/code/b c $d", "b", 0755);
    Write(remote_ + "/code/empty", "");
    code_tar_ = TarOf(remote_, "code");
  }
  // Every worker sends `tar` and exits 0.
  void SendTar(const std::string& tar) {
    t_.fanout.respond = [tar](const FanoutHost&, size_t i, FanoutSink& sink) {
      Feed(sink, i, tar);
      return HostResult{};
    };
  }
  std::string remote_, code_tar_;
};

TEST_F(DownloadTest, OneWorkerIntoADestinationThatDoesNotExist) {
  SendTar(code_tar_);
  Result<CopyReport> report = Cp({"pod:2:~/code"}, local_ + "/got");
  ASSERT_TRUE(report.ok()) << report.status().ToString();

  ASSERT_EQ(jobs().size(), 1u);
  const FanoutJob& job = jobs()[0];
  ASSERT_EQ(job.hosts.size(), 1u);
  EXPECT_EQ(job.hosts[0].name, "pod/w2");
  EXPECT_EQ(job.stdin_path, "");
  std::vector<std::string> words = Words(job.command);
  ASSERT_EQ(words.size(), 5u);
  EXPECT_EQ(words[4], "~/code");

  EXPECT_TRUE(report->download);
  ASSERT_TRUE(report->ok()) << report->workers[0].message;
  EXPECT_EQ(Tree(local_ + "/got"),
            (std::vector<std::string>{"b c $d", "empty", "sub", "sub/a.txt"}));
  EXPECT_EQ(Read(local_ + "/got/sub/a.txt"), "a");
  EXPECT_EQ(ModeOf(local_ + "/got/b c $d"), 0755u);
  // No staging directory is left beside it.
  EXPECT_EQ(Tree(local_), (std::vector<std::string>{"got", "got/b c $d", "got/empty", "got/sub",
                                                    "got/sub/a.txt"}));
}

TEST_F(DownloadTest, OneWorkerIntoAnExistingDirectory) {
  fs::create_directories(local_ + "/into");
  SendTar(code_tar_);
  Result<CopyReport> report = Cp({"solo:~/code"}, local_ + "/into");
  ASSERT_TRUE(report.ok()) << report.status().ToString();
  ASSERT_TRUE(report->ok()) << report->workers[0].message;
  EXPECT_EQ(Tree(local_ + "/into"), (std::vector<std::string>{"code", "code/b c $d", "code/empty",
                                                              "code/sub", "code/sub/a.txt"}));
}

TEST_F(DownloadTest, OneFileAsANewName) {
  Write(remote_ + "/log.txt", "line\n");
  std::string tar = TarOf(remote_, "log.txt");
  SendTar(tar);
  Result<CopyReport> report = Cp({"solo:/var/log/log.txt"}, local_ + "/mine.txt");
  ASSERT_TRUE(report.ok()) << report.status().ToString();
  ASSERT_TRUE(report->ok()) << report->workers[0].message;
  EXPECT_EQ(Tree(local_), std::vector<std::string>{"mine.txt"});
  EXPECT_EQ(Read(local_ + "/mine.txt"), "line\n");
}

TEST_F(DownloadTest, SeveralWorkersEachIntoNodeWorkerAndAFailureSaysWhy) {
  // Each worker has its own log.txt; worker 2 has none.
  std::vector<std::string> tars;
  for (int i = 0; i < 4; ++i) {
    std::string dir = remote_ + "/w" + std::to_string(i);
    Write(dir + "/log.txt", "worker " + std::to_string(i) + "\n");
    tars.push_back(TarOf(dir, "log.txt"));
  }
  t_.fanout.respond = [&](const FanoutHost&, size_t i, FanoutSink& sink) {
    if (i == 2) {
      sink.OnOutput(i, OutputStream::kStderr, "no such file or directory: /tmp/log.txt\n");
      return Exited(1);
    }
    Feed(sink, i, tars[i]);
    return HostResult{};
  };
  Result<CopyReport> report = Cp({"pod:/tmp/log.txt"}, local_ + "/logs");
  ASSERT_TRUE(report.ok()) << report.status().ToString();
  ASSERT_EQ(jobs().size(), 1u);
  EXPECT_EQ(jobs()[0].hosts.size(), 4u);

  EXPECT_FALSE(report->ok());
  ASSERT_EQ(report->workers.size(), 4u);
  for (int i : {0, 1, 3}) {
    std::string got = local_ + "/logs/pod-w" + std::to_string(i) + "/log.txt";
    EXPECT_TRUE(report->workers[i].ok) << i << ": " << report->workers[i].message;
    EXPECT_EQ(Read(got), "worker " + std::to_string(i) + "\n") << got;
  }
  EXPECT_FALSE(report->workers[2].ok);
  EXPECT_EQ(report->workers[2].message, "no such file or directory: /tmp/log.txt");
  EXPECT_FALSE(fs::exists(local_ + "/logs/pod-w2/log.txt"));
}

// Issue 10: a worker printing without end on stderr during a download grew cp's memory
// by up to 4 KiB per read, without bound; now the message keeps the first 4 KiB.
TEST_F(DownloadTest, Issue10AWorkerPrintingErrorsWithoutEndCostsAMessage) {
  t_.fanout.respond = [](const FanoutHost&, size_t i, FanoutSink& sink) {
    std::string line = "error: " + std::string(992, 'e') + "\n";
    for (int n = 0; n < 8 * 1024; ++n) {  // 8 MiB in 1000-byte reads
      sink.OnOutput(i, OutputStream::kStderr, line);
    }
    return Exited(1);
  };
  Result<CopyReport> report = Cp({"pod:0:/tmp/log.txt"}, local_ + "/got");
  ASSERT_TRUE(report.ok()) << report.status().ToString();
  ASSERT_EQ(report->workers.size(), 1u);
  EXPECT_FALSE(report->workers[0].ok);
  EXPECT_LE(report->workers[0].message.size(), 4096u);
  EXPECT_TRUE(StartsWith(report->workers[0].message, "error: eee"));
}

TEST_F(DownloadTest, WhatIsNoTarIsAFailure) {
  SendTar(std::string(4000, 'x'));  // no tar at all
  Result<CopyReport> report = Cp({"pod:0-1:/tmp/log.txt"}, local_ + "/logs");
  ASSERT_TRUE(report.ok()) << report.status().ToString();
  ASSERT_EQ(report->workers.size(), 2u);
  for (const CopyOutcome& o : report->workers) {
    EXPECT_FALSE(o.ok) << o.worker.name;
    EXPECT_TRUE(Contains(o.message, "not a tar stream")) << o.message;
  }
}

// A local tar that gives up early (here: DEST/pod-w0 is a file; for users, a directory
// they cannot write or a full disk) closed its pipe while the worker's stream still
// came in: the next write raised SIGPIPE, which killed cp without a word.
using Issue5 = DownloadTest;
TEST_F(Issue5, ALocalTarThatGivesUpIsAFailureNotASigpipe) {
  std::string dir = remote_ + "/w";
  fs::create_directories(dir);
  MakeSparse(dir + "/big.bin", 4 << 20);
  std::string tar = TarOf(dir, "big.bin");
  Write(local_ + "/logs/pod-w0", "a file where the directory should be");
  SendTar(tar);
  Result<CopyReport> report = Cp({"pod:0-1:/tmp/big.bin"}, local_ + "/logs");
  ASSERT_TRUE(report.ok()) << report.status().ToString();
  ASSERT_EQ(report->workers.size(), 2u);
  EXPECT_FALSE(report->workers[0].ok);
  EXPECT_TRUE(Contains(report->workers[0].message, "tar could not unpack"))
      << report->workers[0].message;
  EXPECT_TRUE(report->workers[1].ok) << report->workers[1].message;
  EXPECT_EQ(fs::file_size(local_ + "/logs/pod-w1/big.bin"), 4u << 20);
}

// cp run as root unpacked with tar's root default, --same-owner: the files got the
// worker's uid, which on this machine is some other account (test/copy_e2e_test.sh saw
// a local user own what root downloaded).
TEST_F(Issue5, DownloadedFilesBelongToWhoeverRanCp) {
  if (::geteuid() != 0) {
    GTEST_SKIP() << "only root makes a tar whose files belong to another uid";
  }
  Write(remote_ + "/mine/out.txt", "x");
  ASSERT_EQ(::chown((remote_ + "/mine").c_str(), 4242, 4242), 0);
  ASSERT_EQ(::chown((remote_ + "/mine/out.txt").c_str(), 4242, 4242), 0);
  std::string tar = TarOf(remote_, "mine");
  SendTar(tar);
  Result<CopyReport> report = Cp({"pod:0:~/mine"}, local_ + "/got");
  ASSERT_TRUE(report.ok()) << report.status().ToString();
  ASSERT_TRUE(report->ok()) << report->workers[0].message;
  for (const std::string& path : {local_ + "/got", local_ + "/got/out.txt"}) {
    struct stat st {};
    ASSERT_EQ(::stat(path.c_str(), &st), 0) << path;
    EXPECT_EQ(st.st_uid, ::geteuid()) << path;
  }
}

TEST_F(DownloadTest, SeveralWorkersNeedADirectory) {
  Write(local_ + "/file", "x");
  Result<CopyReport> report = Cp({"pod:/tmp/log.txt"}, local_ + "/file");
  ASSERT_FALSE(report.ok());
  EXPECT_EQ(report.status().code(), StatusCode::kInvalidArgument);
  EXPECT_TRUE(jobs().empty());
}

}  // namespace
}  // namespace tpufleet
