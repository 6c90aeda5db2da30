// `tpufleet users`' parsing, in-process: bad usage (exit 2) and bad values (exit 1) are
// refused with one message and change nothing; a good add reaches the agents of the
// test world's nodes and list shows it. The work itself is tested in src/control
// (users_test.cc) and against the emulator in test/users_e2e.sh.
#include <gtest/gtest.h>

#include <string>

#include "cli/testing/lent_world.h"
#include "cli/testing/run_cli.h"
#include "control/testing/test_world.h"
#include "util/file.h"

namespace tpufleet::cli {
namespace {

using cli_testing::Contains;
using cli_testing::Output;
using cli_testing::Tpufleet;

class UsersCommandTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string yaml = std::string("fleet: lab\nproject: ") + testing::kProject +
                       "\nnodes:\n  - name: trainer\n    type: v4-8\n    zones: [us-central2-b]\n";
    ASSERT_EQ(t_.Up(t_.Spec(yaml)).nodes[0].status, Status::Ok());
    spec_ = t_.dir.Write("lab.yaml", yaml);
    key_ = t_.dir.Write("milo.pub", std::string("# milo's laptop\n") + testing::kBobKey + "\n\n");
    app_ = cli_testing::AppLending(t_.world, &opened_);
  }
  // One line on stderr, naming `part`.
  static void OneMessage(const Output& o, const std::string& part) {
    EXPECT_TRUE(Contains(o.err, part)) << o.err;
    EXPECT_EQ(std::count(o.err.begin(), o.err.end(), '\n'), 1) << o.err;
  }

  testing::TestWorld t_;
  std::string spec_, key_;
  int opened_ = 0;
  App app_{};
};

TEST_F(UsersCommandTest, BadUsageExits2BeforeTheWorldIsOpened) {
  OneMessage(Tpufleet(app_, {"users"}), "needs an action");
  Output o = Tpufleet(app_, {"users", "ad", "milo"});
  EXPECT_EQ(o.code, 2);
  OneMessage(o, "did you mean add");
  EXPECT_EQ(Tpufleet(app_, {"users", "add"}).code, 2);
  EXPECT_EQ(Tpufleet(app_, {"users", "list", "milo"}).code, 2);
  Output no_spec = Tpufleet(app_, {"users", "add", "milo", "--key", key_});
  EXPECT_EQ(no_spec.code, 2);
  OneMessage(no_spec, "--spec FLEET.yaml");
  EXPECT_EQ(opened_, 0);
}

TEST_F(UsersCommandTest, BadValuesExit1WithOneMessageAndStoreNothing) {
  Output both = Tpufleet(app_, {"users", "add", "milo", "--key", key_, "--sudo", "--no-sudo",
                                "--spec", spec_});
  EXPECT_EQ(both.code, 1);
  OneMessage(both, "--sudo and --no-sudo");
  OneMessage(Tpufleet(app_, {"users", "add", "milo", "--key", t_.dir.path() + "/none.pub",
                             "--spec", spec_}),
             "none.pub");
  std::string empty = t_.dir.Write("empty.pub", "# nothing\n");
  OneMessage(Tpufleet(app_, {"users", "add", "milo", "--key", empty, "--spec", spec_}),
             "no public key in it");
  OneMessage(Tpufleet(app_, {"users", "add", "root", "--key", key_, "--spec", spec_}), "root");
  OneMessage(Tpufleet(app_, {"users", "add", "milo", "--key", key_, "--role", "boss", "--spec",
                             spec_}),
             "a role is member, viewer or admin, not 'boss'");
  OneMessage(Tpufleet(app_, {"users", "remove", "milo", "--spec", spec_}), "no collaborator milo");
  EXPECT_TRUE(t_.store->Users("")->empty());
}

TEST_F(UsersCommandTest, AddSetAndListShowWhatWasDone) {
  Output add = Tpufleet(app_, {"users", "add", "milo", "--key", key_, "--nodes", "trainer",
                               "--spec", spec_});
  EXPECT_EQ(add.code, 0) << add.err;
  EXPECT_TRUE(Contains(add.out, "milo: added to fleet lab (no sudo, trainer, role member)"))
      << add.out;
  EXPECT_TRUE(Contains(add.out, "trainer: done on 1 worker")) << add.out;
  EXPECT_TRUE(Contains(add.err, "trainer: applying on 1 worker")) << add.err;
  Result<std::vector<UserRecord>> stored = t_.store->Users("lab");
  ASSERT_EQ(stored->size(), 1u);
  EXPECT_EQ((*stored)[0].keys, std::vector<std::string>{testing::kBobKey});  // comment skipped

  Output set = Tpufleet(app_, {"users", "set", "milo", "--sudo", "--nodes", "all", "--spec", spec_});
  EXPECT_EQ(set.code, 0) << set.err;
  EXPECT_TRUE(Contains(set.out, "milo: changed (sudo, every node, role member)")) << set.out;

  Output list = Tpufleet(app_, {"users", "list", "--json"});
  EXPECT_EQ(list.code, 0) << list.err;
  EXPECT_TRUE(Contains(list.out, R"("name": "milo")")) << list.out;
  EXPECT_TRUE(Contains(list.out, R"("source": "added")")) << list.out;
  EXPECT_TRUE(Contains(list.out, R"("sudo": true)")) << list.out;
}

}  // namespace
}  // namespace tpufleet::cli
