// What up runs on workers for the agent, and how their output is read (issue 12). The
// install command runs for real in /bin/sh, with a `sudo` stand-in on PATH.
#include "control/agent_install.h"

#include <sys/stat.h>

#include <gtest/gtest.h>

#include "api/agent.h"
#include "util/encoding.h"
#include "util/file.h"
#include "util/strings.h"
#include "util/subprocess.h"
#include "util/testing/status_printer.h"
#include "util/testing/temp_dir.h"

namespace tpufleet {
namespace {

const std::string kSha(64, 'a');

std::string HelloLine(const std::string& sha) {
  api::AgentHello hello;
  hello.binary_sha256 = sha;
  return api::AnswerLine({Status::Ok(), hello});
}

TEST(ParseAgentCheck, ACurrentAgentAnswers) {
  Result<AgentCheck> c = ParseAgentCheck("Welcome to Ubuntu 22.04\n"
                                         "tpufleet-check installed " + kSha + "\n"
                                         "tpufleet-check sudo yes\n"
                                         "tpufleet-check hello " + HelloLine(kSha) + "\n");
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_TRUE(c->Current(kSha, 0));
  EXPECT_TRUE(c->sudo);
  EXPECT_FALSE(c->Current(std::string(64, 'b'), 0)) << "another build is not current";
  EXPECT_FALSE(c->Current(kSha, 9100)) << "the spec wants the metrics served, the unit does not";
}

TEST(ParseAgentCheck, TheUnitsPrometheusPortIsPartOfCurrent) {
  Result<AgentCheck> c = ParseAgentCheck("tpufleet-check installed " + kSha + "\n"
                                         "tpufleet-check prometheus 9100\n"
                                         "tpufleet-check sudo yes\n"
                                         "tpufleet-check hello " + HelloLine(kSha) + "\n");
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->prometheus_port, 9100);
  EXPECT_TRUE(c->Current(kSha, 9100));
  EXPECT_FALSE(c->Current(kSha, 9200)) << "another port";
  EXPECT_FALSE(c->Current(kSha, 0)) << "no longer wanted";
  EXPECT_EQ(AgentRecord(kSha, 0), kSha);
  EXPECT_EQ(AgentRecord(kSha, 9100), kSha + " prometheus=9100");
}

// The check script in a real shell, against a unit as `install --prometheus` writes it.
TEST(AgentCheckScript, ReadsThePortFromTheUnitsExecStart) {
  TempDir dir;
  std::string sudo = dir.Write("bin/sudo", "#!/bin/sh\nexit 0\n");
  chmod(sudo.c_str(), 0755);
  std::string unit = dir.Path("tpufleet-agent.service");
  std::string script = AgentCheckScript();
  size_t at = script.find(kAgentUnitPath);
  ASSERT_NE(at, std::string::npos);
  script.replace(at, kAgentUnitPath.size(), unit);
  SpawnOptions options;
  options.env = {"PATH=" + dir.Path("bin") + ":/usr/bin:/bin"};
  auto check = [&]() {
    Result<ProgramResult> r =
        RunSubprocess({"/bin/bash", "-s"}, script, std::chrono::seconds(30), options);
    EXPECT_TRUE(r.ok() && r->exit_code == 0) << (r.ok() ? r->output : r.status().ToString());
    Result<AgentCheck> c = ParseAgentCheck(r.ok() ? r->output : "");
    EXPECT_TRUE(c.ok()) << c.status().ToString();
    return c.ok() ? c->prometheus_port : -1;
  };
  EXPECT_EQ(check(), 0) << "no unit";
  dir.Write("tpufleet-agent.service",
            "[Service]\nExecStart=/usr/local/bin/tpufleet-agent serve --prometheus "
            "0.0.0.0:9100\nRestart=always\n");
  EXPECT_EQ(check(), 9100);
  dir.Write("tpufleet-agent.service",
            "[Service]\nExecStart=/usr/local/bin/tpufleet-agent serve\nRestart=always\n");
  EXPECT_EQ(check(), 0);
}

TEST(ParseAgentCheck, SaysWhyAnAgentIsNotCurrent) {
  struct Case {
    std::string output;
    std::string why_not;
  } cases[] = {
      {"tpufleet-check installed none\ntpufleet-check sudo yes\n", "not installed"},
      {"tpufleet-check installed " + kSha + "\ntpufleet-check sudo no\n" +
           "tpufleet-check hello tpufleet-agent: no agent is running\n",
       "tpufleet-agent: no agent is running"},
      {"tpufleet-check installed " + kSha + "\ntpufleet-check sudo yes\n", "no answer"},
  };
  for (const Case& c : cases) {
    Result<AgentCheck> got = ParseAgentCheck(c.output);
    ASSERT_TRUE(got.ok()) << c.output;
    EXPECT_FALSE(got->answers) << c.output;
    EXPECT_FALSE(got->Current(kSha, 0)) << c.output;
    EXPECT_EQ(got->why_not, c.why_not) << c.output;
  }
  // A serve still running the old binary after the file was replaced.
  Result<AgentCheck> old = ParseAgentCheck("tpufleet-check installed " + kSha +
                                           "\ntpufleet-check sudo yes\ntpufleet-check hello " +
                                           HelloLine(std::string(64, 'c')) + "\n");
  ASSERT_TRUE(old.ok());
  EXPECT_TRUE(old->answers);
  EXPECT_FALSE(old->Current(kSha, 0));
}

TEST(ParseAgentCheck, OutputOfSomethingElseIsAnError) {
  Result<AgentCheck> c = ParseAgentCheck("bash: sha256sum: command not found\n");
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().message(),
            "the agent check printed \"bash: sha256sum: command not found\" instead of its "
            "answer");
}

TEST(ParseAccountsAnswer, OkOnlyWhenEveryAccountWasMade) {
  api::AccountsReport made;
  made.results = {{"alice", "created", "", ""},
                  {"bob", "unchanged", "", ""},
                  {"carol", "removed", "", ""}};
  EXPECT_EQ(ParseAccountsAnswer(api::AnswerLine({Status::Ok(), made}) + "\n"), Status::Ok());

  made.results[1] = {"bob", "refused", "useradd: group 'bob' exists", ""};
  Status s = ParseAccountsAnswer(api::AnswerLine({Status::Ok(), made}) + "\n");
  EXPECT_EQ(s.message(),
            "the agent could not make every account: bob: useradd: group 'bob' exists");

  // The accounts are made, but the token is not kept from those without sudo.
  made.results[1].action = "created";
  made.results[1].error = "";
  made.metadata_guard.error = "nft is not installed, so the metadata server's token cannot "
                              "be kept from bob (install it: sudo apt-get install -y nftables)";
  s = ParseAccountsAnswer(api::AnswerLine({Status::Ok(), made}) + "\n");
  EXPECT_EQ(s.message(),
            "the agent could not make every account: metadata guard: nft is not installed, so "
            "the metadata server's token cannot be kept from bob (install it: sudo apt-get "
            "install -y nftables)");

  s = ParseAccountsAnswer(api::AnswerLine({PermissionDeniedError("root only"), {}}) + "\n");
  EXPECT_EQ(s.message(), "the agent refused to make the accounts: root only");

  s = ParseAccountsAnswer("sudo: a password is required\n");
  EXPECT_EQ(s.message(), "the agent did not answer accounts.apply: sudo: a password is required");
}

// A removal up sends (pending from `users remove`) must be answered as taken away; an
// agent too old to know removals leaves it out, and that is a failure saying what to do.
TEST(ParseAccountsAnswer, ARemovalTheAnswerDoesNotTakeAwayFails) {
  api::AccountsReport report;
  report.results = {{"alice", "unchanged", "", ""}, {"milo", "revoked", "", ""}};
  const std::string answer = api::AnswerLine({Status::Ok(), report}) + "\n";
  EXPECT_EQ(ParseAccountsAnswer(answer, {{"milo", false}}), Status::Ok());
  EXPECT_EQ(ParseAccountsAnswer(answer, {{"zoe", true}}).message(),
            "the agent could not make every account: zoe: this agent does not take accounts "
            "away; run `tpufleet up` to update it, then remove again");
  report.metadata_guard.error = "nft could not apply";
  EXPECT_EQ(AccountsReportFailures(report, {{"zoe", false}}),
            "metadata guard: nft could not apply; zoe: this agent does not take accounts away; "
            "run `tpufleet up` to update it, then remove again");
}

TEST(Mounts, OnlyTheDisksWithAMountGoInTheRequestAndEveryRefusalIsNamed) {
  NodeSpec node;
  node.data_disks = {{"projects/p/zones/z/disks/imagenet", "p", "z", DiskMode::kReadOnly,
                      "imagenet", "/data"},
                     {"projects/p/zones/z/disks/scratch", "p", "z", DiskMode::kReadWrite,
                      "scratch", ""},
                     {"projects/p/zones/z/disks/ckpt", "p", "z", DiskMode::kReadWrite, "ckpt",
                      "/mnt/ckpt"}};
  Result<api::AgentRequest> r = api::ParseAgentRequest(Trim(MountsRequestLine(MountsOf(node))));
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->op, api::AgentOp::kDisksMount);
  ASSERT_EQ(r->mounts.size(), 2u);
  EXPECT_EQ(r->mounts[0].disk, "imagenet");
  EXPECT_EQ(r->mounts[0].path, "/data");
  EXPECT_TRUE(r->mounts[0].read_only);
  EXPECT_EQ(r->mounts[1].disk, "ckpt");
  EXPECT_FALSE(r->mounts[1].read_only);

  std::vector<api::MountResult> done = {{"imagenet", "/data", "unchanged", ""},
                                        {"ckpt", "/mnt/ckpt", "formatted", ""}};
  EXPECT_EQ(ParseMountsAnswer(api::AnswerLine({Status::Ok(), done}) + "\n"), Status::Ok());
  done[0] = {"imagenet", "/data", "refused", "disk imagenet is not attached to this worker"};
  EXPECT_EQ(ParseMountsAnswer("a login banner\n" + api::AnswerLine({Status::Ok(), done}) + "\n")
                .message(),
            "the agent could not mount every disk: imagenet at /data: disk imagenet is not "
            "attached to this worker");
  EXPECT_EQ(ParseMountsAnswer("tpufleet-agent: unknown op \"disks.mount\"\n").message(),
            "the agent did not answer disks.mount: tpufleet-agent: unknown op \"disks.mount\"");
}

// The install command in a real shell: the upload lands in a temporary file that is
// run as `sudo -n FILE install` (a stand-in sudo that drops -n) and removed after.
class AgentInstallCommandTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string sudo = dir_.Write("bin/sudo", "#!/bin/sh\nshift\nexec \"$@\"\n");
    chmod(sudo.c_str(), 0755);
    // The "agent": says how it was called and from where.
    agent_ = "#!/bin/sh\necho \"$* from $0\" > " + dir_.Path("called") + "\n";
  }
  Result<ProgramResult> Run(const std::string& sha, const std::string& upload,
                            int prometheus_port = 0) {
    SpawnOptions options;
    options.env = {"PATH=" + dir_.Path("bin") + ":/usr/bin:/bin"};
    return RunSubprocess({"/bin/sh", "-c", AgentInstallCommand(sha, prometheus_port)}, upload,
                         std::chrono::seconds(30), options);
  }

  TempDir dir_;
  std::string agent_;
};

TEST_F(AgentInstallCommandTest, RunsTheUploadAsRootWithInstallAndRemovesIt) {
  Result<ProgramResult> r = Run(HexEncode(Sha256(agent_)), agent_);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->exit_code, 0) << r->output;
  std::string called = ReadFile(dir_.Path("called")).value();
  ASSERT_TRUE(StartsWith(called, "install from /tmp/tpufleet-agent.")) << called;
  std::string temp = std::string(Trim(called.substr(std::string("install from ").size())));
  EXPECT_NE(access(temp.c_str(), F_OK), 0) << temp << " is left behind";
}

TEST_F(AgentInstallCommandTest, ThePrometheusPortIsPassedToInstall) {
  Result<ProgramResult> r = Run(HexEncode(Sha256(agent_)), agent_, 9100);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->exit_code, 0) << r->output;
  std::string called = ReadFile(dir_.Path("called")).value();
  EXPECT_TRUE(StartsWith(called, "install --prometheus 9100 from /tmp/tpufleet-agent.")) << called;
}

TEST_F(AgentInstallCommandTest, ABrokenUploadIsNeverRun) {
  Result<ProgramResult> r = Run(HexEncode(Sha256(agent_)), agent_.substr(0, 20));
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->exit_code, 1);
  EXPECT_NE(r->output.find("the copy broke on the way"), std::string::npos) << r->output;
  EXPECT_NE(access(dir_.Path("called").c_str(), F_OK), 0) << "it ran";
}

}  // namespace
}  // namespace tpufleet
