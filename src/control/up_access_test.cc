// Who up logs in as, and which host keys it pins (issue 11, fixes 3 and 5).
#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include "control/testing/test_world.h"
#include "control/up.h"
#include "control/world.h"
#include "control/testing/fake_ssh_hosts.h"
#include "util/strings.h"

namespace tpufleet {
namespace {

using testing::Contains;
using testing::FakeSshHosts;
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
  std::string fleet_key = t.FleetPublicKey();
  EXPECT_EQ(t.cloud.Node(kZoneB, "box")->metadata.at("ssh-keys"), "alice:" + fleet_key);
  EXPECT_EQ(t.Record("box").login, "alice");
  EXPECT_TRUE(Contains(t.SshConfig(), "User alice\n")) << t.SshConfig();
  EXPECT_FALSE(Contains(t.SshConfig(), "User tpufleet")) << t.SshConfig();
}

// ---------------------------------------------------------------------------------------
// Fix 3: ssh-hosts host keys.

constexpr char kBoxKey[] =
    "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIGw6SazH8E4wAHaauG7OB3VjXkbuu9GiwOP564ZWS2Ju";
constexpr char kGpuKey[] =
    "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIEJRPDF2Ls8M/iUvYINLgiHOimRyl2Qw5/Ne86WVqpLx";

// Fleet "lab" of two ssh-hosts nodes: box (gpu1, port 2222) and gpu (gpu2).
constexpr char kLab[] =
    "fleet: lab\nprovider: ssh-hosts\nnodes:\n"
    "  - name: box\n    hosts: [gpu1.lab.example.org]\n    ssh_user: ops\n    port: 2222\n"
    "  - name: gpu\n    hosts: [gpu2.lab.example.org]\n    ssh_user: ops\n";

class SshHostsUp : public ::testing::Test {
 protected:
  SshHostsUp() : world_(t_.WithProviders(hosts_)) {}

  UpReport Up(UpOptions options = {}) {
    Result<UpReport> r = tpufleet::Up(t_.Spec(kLab), t_.catalog, world_, options, t_.progress);
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    return r.ok() ? *r : UpReport{};
  }
  Status Of(const UpReport& r, const std::string& node) {
    for (const NodeOutcome& o : r.nodes) {
      if (o.node == node) {
        return o.status;
      }
    }
    return InternalError("no outcome for " + node);
  }

  TestWorld t_;
  FakeSshHosts hosts_;
  World world_;
};

TEST_F(SshHostsUp, Issue11AKeyFromKnownHostsIsPinnedLikeAnyWorkersAndTheFleetKeyGoesIn) {
  hosts_.nodes["box"] = {{"gpu1.lab.example.org", kBoxKey, ""}};
  hosts_.nodes["gpu"] = {{"gpu2.lab.example.org", kGpuKey, ""}};

  UpReport r = Up();

  ASSERT_EQ(Of(r, "box"), Status::Ok());
  ASSERT_EQ(Of(r, "gpu"), Status::Ok());
  EXPECT_EQ(t_.Record("box").workers.at(0).host_key, kBoxKey);
  // tpufleet's own known_hosts pins it (so `ssh box`, exec and cp check it), with the port.
  EXPECT_TRUE(Contains(t_.KnownHosts(), std::string("[gpu1.lab.example.org]:2222 ") + kBoxKey))
      << t_.KnownHosts();
  EXPECT_TRUE(Contains(t_.KnownHosts(), std::string("gpu2.lab.example.org ") + kGpuKey));
  EXPECT_FALSE(Contains(t_.SshConfig(), "~/.ssh/known_hosts")) << t_.SshConfig();
  // The login check, made with the user's own key, adds the fleet key for exec and cp.
  std::string fleet_key = t_.FleetPublicKey();
  int authorizing = 0;
  for (const FakeSshRunner::Call& c : t_.ssh.calls()) {
    authorizing += Contains(c.script, "authorized_keys") &&
                   Contains(c.script, std::string(Trim(fleet_key)));
  }
  EXPECT_EQ(authorizing, 2);
}

TEST_F(SshHostsUp, Issue11AnUnknownKeyIsPinnedOnlyOnceTheUserConfirmsItsFingerprint) {
  hosts_.nodes["box"] = {{"gpu1.lab.example.org", "", kBoxKey}};
  hosts_.nodes["gpu"] = {{"gpu2.lab.example.org", kGpuKey, ""}};

  // Not at a terminal, no --yes: box is refused, saying what to do; gpu comes up.
  UpReport r = Up();
  EXPECT_EQ(Of(r, "box").code(), StatusCode::kFailedPrecondition);
  std::string fingerprint = "SHA256:HXEt6KyTDmhlpUGpGa0CgTULFwNm5Pa9fSNicnQsXoU";
  EXPECT_TRUE(Contains(Of(r, "box").message(), fingerprint)) << Of(r, "box").ToString();
  EXPECT_TRUE(Contains(Of(r, "box").message(), "--yes")) << Of(r, "box").ToString();
  EXPECT_EQ(Of(r, "gpu"), Status::Ok());

  // The user says no: still refused.
  std::vector<HostKeyQuestion> asked;
  UpOptions options;
  options.confirm_host_key = [&](const HostKeyQuestion& q) {
    asked.push_back(q);
    return false;
  };
  EXPECT_EQ(Of(Up(options), "box").code(), StatusCode::kFailedPrecondition);
  ASSERT_EQ(asked.size(), 1u);
  EXPECT_EQ(asked[0].node, "box");
  EXPECT_EQ(asked[0].address, "gpu1.lab.example.org");
  EXPECT_EQ(asked[0].port, 2222);
  EXPECT_EQ(asked[0].fingerprint, fingerprint);

  // Yes: pinned, recorded, and the next up does not ask again.
  asked.clear();
  options.confirm_host_key = [&](const HostKeyQuestion& q) {
    asked.push_back(q);
    return true;
  };
  EXPECT_EQ(Of(Up(options), "box"), Status::Ok());
  EXPECT_EQ(asked.size(), 1u);
  EXPECT_EQ(t_.Record("box").workers.at(0).host_key, kBoxKey);
  EXPECT_TRUE(Contains(t_.KnownHosts(), std::string("[gpu1.lab.example.org]:2222 ") + kBoxKey));
  EXPECT_EQ(t_.Events("host-key-pinned", "box").size(), 1u);
  asked.clear();
  EXPECT_EQ(Of(Up(options), "box"), Status::Ok());
  EXPECT_TRUE(asked.empty());
}

TEST_F(SshHostsUp, Issue11AHostKeyThatFailsVerificationFailsAtOnceWithBothFingerprints) {
  hosts_.nodes["box"] = {{"gpu1.lab.example.org", kBoxKey, ""}};
  hosts_.nodes["gpu"] = {{"gpu2.lab.example.org", kGpuKey, ""}};
  // What OpenSshRunner says when the server offers another key than the pinned one.
  t_.ssh.FailRunsOn("box-w0", FailedPreconditionError(
                                  "ssh box-w0: Host key verification failed (the server "
                                  "offered SHA256:8yq2OkF0qM8sZtWJ4r4RrNcR9eX6HhQm0yE2Q5mRk1w)"));
  auto start = t_.clock.MonotonicNow();

  UpReport r = Up();

  Status box = Of(r, "box");
  EXPECT_EQ(box.code(), StatusCode::kFailedPrecondition) << box.ToString();
  EXPECT_TRUE(Contains(box.message(), "expected SHA256:HXEt6KyTDmhlpUGpGa0CgTULFwNm5Pa9fSNicnQsXoU"))
      << box.ToString();
  EXPECT_TRUE(Contains(box.message(), "offered SHA256:8yq2")) << box.ToString();
  EXPECT_EQ(t_.ssh.RunsOn("box-w0"), 1) << "no retries";
  EXPECT_LT(t_.clock.MonotonicNow() - start, std::chrono::seconds(5)) << "not after minutes";
  EXPECT_EQ(Of(r, "gpu"), Status::Ok());
}

}  // namespace
}  // namespace tpufleet
