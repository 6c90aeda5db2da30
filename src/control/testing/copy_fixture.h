// What the tests of `cp` share (copy_test.cc, copy_relay_test.cc, copy_tar_test.cc):
// running programs here as a worker would, reading back trees and files, and CopyTest,
// a fleet "lab" in a TestWorld whose FakeFanout stands in for the workers.
//
// Thread-safety: one test thread (RunLocal and RunOnWorker may run on others).
#pragma once

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <string>
#include <vector>

#include "control/copy.h"
#include "control/testing/test_world.h"
#include "util/file.h"
#include "util/strings.h"
#include "util/subprocess.h"

namespace tpufleet::testing {

namespace copy_fs = std::filesystem;

// ---------------------------------------------------------------------------------------
// Helpers

// Runs `argv` (looked up in PATH, this environment) and returns its exit code and output.
inline ProgramResult RunLocal(const std::vector<std::string>& argv, const std::string& input = "") {
  SpawnOptions options;
  options.search_path = true;
  options.inherit_env = true;
  Result<ProgramResult> r = RunSubprocess(argv, input, std::chrono::seconds(60), options);
  EXPECT_TRUE(r.ok()) << r.status().ToString();
  return r.ok() ? *r : ProgramResult{};
}

// The words a shell makes of `command` (what the worker's login shell runs).
inline std::vector<std::string> Words(const std::string& command) {
  ProgramResult r = RunLocal({"/bin/sh", "-c", "printf '%s\\0' " + command});
  EXPECT_EQ(r.exit_code, 0) << r.output;
  std::vector<std::string> words;
  size_t start = 0;
  for (size_t nul = r.output.find('\0'); nul != std::string::npos;
       nul = r.output.find('\0', start)) {
    words.push_back(r.output.substr(start, nul - start));
    start = nul + 1;
  }
  return words;
}

inline std::string Sha256(const std::string& path) {
  ProgramResult r = RunLocal({"sha256sum", "--", path});
  EXPECT_EQ(r.exit_code, 0) << r.output;
  return r.output.substr(0, 64);
}

// A sparse file of `size` zero bytes.
inline void MakeSparse(const std::string& path, off_t size) {
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  ASSERT_GE(fd, 0) << path;
  EXPECT_EQ(::ftruncate(fd, size), 0);
  ::close(fd);
}

inline void Write(const std::string& path, const std::string& content, mode_t mode = 0644) {
  copy_fs::create_directories(copy_fs::path(path).parent_path());
  ASSERT_EQ(WriteFileAtomic(path, content, static_cast<int>(mode)), Status::Ok()) << path;
  ASSERT_EQ(::chmod(path.c_str(), mode), 0) << path;
}

// The content of `path`, or "<unreadable>".
inline std::string Read(const std::string& path) {
  Result<std::string> r = ReadFile(path);
  return r.ok() ? *r : "<unreadable>";
}

inline mode_t ModeOf(const std::string& path) {
  struct stat st {};
  EXPECT_EQ(::stat(path.c_str(), &st), 0) << path;
  return st.st_mode & 07777;
}

// Every path under `dir`, relative, sorted ("a", "a/b", …).
inline std::vector<std::string> Tree(const std::string& dir) {
  std::vector<std::string> all;
  std::error_code ec;
  for (const auto& e : copy_fs::recursive_directory_iterator(dir, ec)) {
    all.push_back(copy_fs::relative(e.path(), dir).string());
  }
  std::sort(all.begin(), all.end());
  return all;
}

// Runs a receive script (a job's command) as a worker's login shell would, with
// `input` on stdin, HOME=`home` and the working directory `home`.
inline ProgramResult RunOnWorker(const std::string& command, const std::string& input,
                                 const std::string& home) {
  SpawnOptions options;
  options.env = {"HOME=" + home, "PATH=/usr/local/bin:/usr/bin:/bin"};
  Result<ProgramResult> r =
      RunSubprocess({"/bin/sh", "-c", "cd " + ShellQuote(home) + " && " + command}, input,
                    std::chrono::seconds(60), options);
  EXPECT_TRUE(r.ok()) << r.status().ToString();
  return r.ok() ? *r : ProgramResult{};
}

inline HostResult Exited(int code) {
  HostResult r;
  r.exit_code = code;
  return r;
}

// ---------------------------------------------------------------------------------------
// Copy

// Fleet "lab": pod (4 workers, labels team=a), solo (1 worker) and box (an ssh-hosts
// node without a pinned host key); a local scratch dir for sources and destinations.
class CopyTest : public ::testing::Test {
 protected:
  void SetUp() override {
    Put("pod", 4).labels = {{"team", "a"}};
    Put("solo", 1);
    NodeRecord& box = Put("box", 1);
    box.provider = "ssh-hosts";
    box.workers[0].host_key = "";
    for (const NodeRecord& r : records_) {
      ASSERT_EQ(t_.store->PutNode(r), Status::Ok());
    }
    local_ = t_.dir.path() + "/local";
    copy_fs::create_directories(local_);
  }

  NodeRecord& Put(const std::string& name, int workers) {
    NodeRecord r;
    r.fleet = "lab";
    r.name = name;
    r.provider = "gcp-tpu";
    r.project = kProject;
    r.state = NodeState::kReady;
    r.login = "tester";
    for (int i = 0; i < workers; ++i) {
      r.workers.push_back(
          {i, "198.18." + std::to_string(records_.size()) + "." + std::to_string(i + 2),
           name + "-host-" + std::to_string(i), kAliceKey, true, ""});
    }
    records_.push_back(std::move(r));
    return records_.back();
  }

  Result<CopyReport> Cp(std::vector<std::string> sources, std::string destination,
                        bool relay = true) {
    CopyRequest request;
    request.sources = std::move(sources);
    request.destination = std::move(destination);
    request.relay = relay;
    return Copy(t_.world, request);
  }

  std::vector<FanoutJob>& jobs() { return t_.fanout.jobs; }

  TestWorld t_;
  std::vector<NodeRecord> records_;
  std::string local_;
};

// A tar stream of `name` under `parent`, as the worker's `tar -c` sends it.
inline std::string TarOf(const std::string& parent, const std::string& name) {
  ProgramResult r = RunLocal({"tar", "-c", "-f", "-", "-C", parent, "--", name});
  EXPECT_EQ(r.exit_code, 0);
  return r.output;
}

// Feeds `stream` to the sink in small pieces, as SSH channel reads arrive.
inline void Feed(FanoutSink& sink, size_t host, const std::string& stream) {
  for (size_t at = 0; at < stream.size(); at += 1000) {
    sink.OnOutput(host, OutputStream::kStdout, std::string_view(stream).substr(at, 1000));
  }
}

}  // namespace tpufleet::testing
