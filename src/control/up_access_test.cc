// Who up logs in as, and which host keys it pins (issue 11, fixes 3 and 5).
#include <gtest/gtest.h>

#include <string>

#include "control/testing/test_world.h"
#include "control/up.h"
#include "control/world.h"
#include "ssh/fleet_key.h"

namespace tpufleet {
namespace {

using testing::Contains;
using testing::kProject;
using testing::kZoneB;
using testing::TestWorld;

std::string OneBox() {
  return std::string("fleet: lab\nproject: ") + kProject +
         "\nnodes:\n  - name: box\n    type: v4-8\n    zones: [us-central2-b]\n";
}

// ---------------------------------------------------------------------------------------
// Fix 5: under sudo, the login is the invoking user's.

TEST(Issue11, UnderSudoTheLoginIsTheUserWhoRanSudo) {
  // sudo sets USER=root and SUDO_USER to the person: they log in as themselves.
  EXPECT_EQ(DefaultLogin("root", "alice", true), "alice");
  // Without sudo, $USER as before; root and system accounts are never a login.
  EXPECT_EQ(DefaultLogin("alice", "", false), "alice");
  EXPECT_EQ(DefaultLogin("root", "", true), "tpufleet");
  // SUDO_USER counts only when running as root (a user's own shell may carry it), and
  // only when CheckUserName accepts it.
  EXPECT_EQ(DefaultLogin("bob", "alice", false), "bob");
  EXPECT_EQ(DefaultLogin("root", "root", true), "tpufleet");
  EXPECT_EQ(DefaultLogin("root", "daemon", true), "tpufleet");
  EXPECT_EQ(DefaultLogin("root", "Bad Name", true), "tpufleet");
  EXPECT_EQ(DefaultLogin("", "", false), "tpufleet");
}

TEST(Issue11, TheSshConfigAndSshKeysFollowTheLoginAlsoForAKeptNode) {
  TestWorld t;
  t.world.login = DefaultLogin("root", "", true);  // plain root: "tpufleet"
  FleetSpec spec = t.Spec(OneBox());
  ASSERT_EQ(t.Up(spec).nodes[0].status, Status::Ok());
  ASSERT_EQ(t.Record("box").login, "tpufleet");

  // The same fleet, now run through sudo by alice: her name, on the kept node too.
  t.world.login = DefaultLogin("root", "alice", true);
  UpReport r = t.Up(spec);
  ASSERT_EQ(r.nodes[0].status, Status::Ok());
  std::string fleet_key = EnsureFleetKey(t.world.paths.ssh_dir).value().public_key;
  EXPECT_EQ(t.cloud.Node(kZoneB, "box")->metadata.at("ssh-keys"), "alice:" + fleet_key);
  EXPECT_EQ(t.Record("box").login, "alice");
  EXPECT_TRUE(Contains(t.SshConfig(), "User alice\n")) << t.SshConfig();
  EXPECT_FALSE(Contains(t.SshConfig(), "User tpufleet")) << t.SshConfig();
}

}  // namespace
}  // namespace tpufleet
