// The admin commands (up, down, users, import) as a team server runs them for a caller
// (RunServedCommand with their Access and the files their client sent, as POST
// /v1/command does), through Main over a TestWorld: fleet lab (node trainer), whose
// admin is boss, member milo and viewer vic; fleet other (node solo), whose admin is eve. A served
// command reads the files a client names from the request only; each role's refusal is
// one line and changes nothing. The same through the binaries: test/serve_admin_e2e.sh.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "cli/remote_command.h"
#include "cli/testing/lent_world.h"
#include "cli/testing/run_cli.h"
#include "control/testing/test_world.h"

namespace tpufleet::cli {
namespace {

using cli_testing::Contains;
using cli_testing::kNoHome;

std::string Fleet(const std::string& fleet, const std::vector<std::string>& nodes) {
  std::string yaml = "fleet: " + fleet + "\nproject: " + std::string(testing::kProject) +
                     "\nnodes:\n";
  for (const std::string& n : nodes) {
    yaml += "  - name: " + n + "\n    type: v4-8\n    zones: [us-central2-b]\n";
  }
  return yaml;
}

class ServedAdminTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_EQ(t_.Up(t_.Spec(Fleet("lab", {"trainer"}))).nodes[0].status, Status::Ok());
    ASSERT_EQ(t_.Up(t_.Spec(Fleet("other", {"solo"}))).nodes[0].status, Status::Ok());
    Row("lab", "boss", "admin");
    Row("lab", "milo", "member");
    Row("lab", "vic", "viewer");
    Row("other", "eve", "admin");
  }

  void Row(const std::string& fleet, const std::string& name, const std::string& role) {
    UserRecord u;
    u.fleet = fleet;
    u.name = name;
    u.role = role;
    u.keys = {testing::kBobKey};
    ASSERT_TRUE(t_.store->PutUser(u).ok());
  }

  // `argv` run for `person` as serve runs it for them, with the files their client sent.
  cli_testing::Output As(const std::string& person, const std::vector<std::string>& argv,
                         std::map<std::string, std::string> files = {}) {
    Access access = person == "operator" ? Access::Everything("operator")
                                         : Access::Of(person, *t_.store->Users(""));
    return cli_testing::Served(app_, argv, {{"HOME", kNoHome}}, std::move(access),
                               std::move(files));
  }
  bool Has(const std::string& node) {
    std::vector<NodeRecord> all = t_.Records();
    return std::any_of(all.begin(), all.end(), [&](const NodeRecord& r) { return r.name == node; });
  }
  static std::string Refused(const std::string& what, const std::string& who) {
    return "tpufleet: error: " + what + " needs an admin of fleet lab (or the team server's "
           "operator); " + who + " is not one\n";
  }

  testing::TestWorld t_;
  int opened_ = 0;
  App app_ = cli_testing::AppLending(t_.world, &opened_);
  const std::map<std::string, std::string> lab_ = {{"lab.yaml", Fleet("lab", {"trainer"})}};
};

TEST_F(ServedAdminTest, AServedCommandReadsOnlyTheFilesItsClientSent) {
  // A path of the server's machine, even one holding a good spec, is not read.
  std::string on_disk = t_.dir.Write("fresh.yaml", Fleet("fresh", {"disk1"}));
  for (const std::string& path : {std::string("/etc/shadow"), on_disk}) {
    cli_testing::Output up = As("operator", {"up", path});
    EXPECT_EQ(up.code, 1);
    EXPECT_EQ(up.err, "tpufleet: error: reading the fleet spec: \"" + path +
                          "\" was not sent with the command: a team server reads the files a "
                          "command names from its client only, never from its own disk\n");
  }
  EXPECT_FALSE(Has("disk1"));
  EXPECT_EQ(opened_, 0);
  // What the spec says is shown by the path the client typed.
  cli_testing::Output bad = As("operator", {"up", "F.yaml"}, {{"F.yaml", "fleet: lab\nnodes: 3\n"}});
  EXPECT_EQ(bad.code, 1);
  EXPECT_EQ(bad.err, "tpufleet: error: F.yaml:1:1: project: this field is required\n");
  // A key: sent, or refused; over 64 KiB, refused as a file would be.
  cli_testing::Output no_key =
      As("boss", {"users", "add", "ann", "--key", "ann.pub", "--spec", "lab.yaml"}, lab_);
  EXPECT_EQ(no_key.code, 1);
  EXPECT_TRUE(Contains(no_key.err, "\"ann.pub\" was not sent with the command")) << no_key.err;
  std::map<std::string, std::string> big = lab_;
  big["ann.pub"] = std::string(kMaxKeyFileBytes + 1, '#');
  cli_testing::Output too_big =
      As("boss", {"users", "add", "ann", "--key", "ann.pub", "--spec", "lab.yaml"}, big);
  EXPECT_EQ(too_big.err, "tpufleet: error: ann.pub: the file is 64.0 KiB; at most 64 KiB is read\n");
  EXPECT_EQ(t_.store->Users("lab")->size(), 3u) << "nothing added";
  std::map<std::string, std::string> with_key = lab_;
  with_key["-"] = std::string(testing::kAliceKey) + "\n";
  cli_testing::Output added =
      As("boss", {"users", "add", "ann", "--key", "-", "--spec", "lab.yaml"}, with_key);
  EXPECT_EQ(added.code, 0) << added.err;
  EXPECT_TRUE(Contains(added.out, "ann: added to fleet lab")) << added.out;
}

TEST_F(ServedAdminTest, AMembersAndAViewersAdminCommandsAreRefusedInOneLineAndChangeNothing) {
  EXPECT_EQ(As("milo", {"up", "lab.yaml"}, lab_).err, Refused("up", "milo"));
  EXPECT_EQ(As("milo", {"down", "trainer", "--yes"}).err, Refused("down of trainer", "milo"));
  EXPECT_EQ(As("milo", {"down", "--all", "--yes"}).err,
            "tpufleet: error: down --all deletes the nodes of the fleets you administer; milo "
            "administers none\n");
  std::map<std::string, std::string> with_key = lab_;
  with_key["ann.pub"] = testing::kAliceKey;
  cli_testing::Output add =
      As("milo", {"users", "add", "ann", "--key", "ann.pub", "--spec", "lab.yaml"}, with_key);
  EXPECT_EQ(add.code, 1);
  EXPECT_EQ(add.err, Refused("users add", "milo"));
  EXPECT_EQ(As("milo", {"users", "list"}).err,
            "tpufleet: error: users list needs an admin of a fleet (or the team server's "
            "operator); milo is not one\n");
  EXPECT_EQ(As("milo", {"import", "--project", "p", "--zones", "us-central2-b"}).err,
            "tpufleet: error: import is the team server's operator's: it uses the server's "
            "cloud credentials; milo is not the operator\n");
  EXPECT_EQ(As("boss", {"import", "--project", "p", "--zones", "us-central2-b"}).code, 1);
  // A viewer likewise.
  EXPECT_EQ(As("vic", {"up", "lab.yaml"}, lab_).err, Refused("up", "vic"));
  EXPECT_EQ(As("vic", {"down", "trainer", "--yes"}).err, Refused("down of trainer", "vic"));
  EXPECT_EQ(As("vic", {"users", "remove", "milo", "--spec", "lab.yaml"}, lab_).err,
            Refused("users remove", "vic"));
  EXPECT_TRUE(Has("trainer"));
  EXPECT_TRUE(Has("solo"));
  EXPECT_EQ(t_.store->Users("lab")->size(), 3u);
}

TEST_F(ServedAdminTest, AnAdminOfAnotherFleetMeetsItsNodesAsNodesThatDoNotExist) {
  EXPECT_EQ(As("eve", {"down", "trainer", "--yes"}).err,
            "tpufleet: error: no node named \"trainer\"\n");
  EXPECT_EQ(As("eve", {"down", "traner", "--yes"}).err,
            "tpufleet: error: no node named \"traner\"\n")
      << "the nearest names offered are of the nodes she sees";
  EXPECT_EQ(As("eve", {"up", "lab.yaml"}, lab_).err, Refused("up", "eve"));
  cli_testing::Output list = As("eve", {"users", "list"});
  EXPECT_EQ(list.code, 0) << list.err;
  EXPECT_TRUE(Contains(list.out, "eve")) << list.out;
  EXPECT_FALSE(Contains(list.out, "milo")) << "lab's collaborators are lab's admins': " << list.out;
  // --all: the nodes of the fleets she administers.
  cli_testing::Output all = As("eve", {"down", "--all", "--yes"});
  EXPECT_EQ(all.code, 0) << all.err;
  EXPECT_FALSE(Has("solo"));
  EXPECT_TRUE(Has("trainer"));
}

TEST_F(ServedAdminTest, AFleetNobodyAdministersIsTheOperatorsToBringUp) {
  std::map<std::string, std::string> fresh = {{"fresh.yaml", Fleet("fresh", {"f1"})}};
  EXPECT_EQ(As("boss", {"up", "fresh.yaml"}, fresh).err,
            "tpufleet: error: up needs an admin of fleet fresh (or the team server's operator); "
            "boss is not one\n");
  EXPECT_FALSE(Has("f1"));
  cli_testing::Output up = As("operator", {"up", "fresh.yaml"}, fresh);
  EXPECT_EQ(up.code, 0) << up.err;
  EXPECT_TRUE(Has("f1"));
}

TEST_F(ServedAdminTest, AnAdminBringsUpAndDeletesTheNodesOfTheirFleet) {
  cli_testing::Output up =
      As("boss", {"up", "lab.yaml"}, {{"lab.yaml", Fleet("lab", {"trainer", "extra"})}});
  EXPECT_EQ(up.code, 0) << up.err;
  EXPECT_TRUE(Has("extra"));
  EXPECT_TRUE(Contains(up.out, "`tpufleet join` again")) << up.out;
  cli_testing::Output ask = As("boss", {"down", "extra"});
  EXPECT_EQ(ask.code, 2);
  EXPECT_EQ(ask.err, "tpufleet: down deletes extra; a team server has no terminal to ask at, so "
                     "pass --yes to confirm\n");
  cli_testing::Output down = As("boss", {"down", "extra", "--yes"});
  EXPECT_EQ(down.code, 0) << down.err;
  EXPECT_FALSE(Has("extra"));
  EXPECT_TRUE(Has("trainer"));
}

}  // namespace
}  // namespace tpufleet::cli
