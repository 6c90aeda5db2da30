#include "core/fleet_spec.h"

#include <gtest/gtest.h>

#include <string>

#include "core/testing/fleet_spec_fixture.h"

// In the fixture's namespace: its keys and helpers need no using-declarations.
namespace tpufleet::testing {
namespace {

using std::chrono::hours;
using std::chrono::seconds;

// ---------------------------------------------------------------------------------------
// Node names and count.

TEST_F(FleetSpecTest, InvalidNodeNames) {
  auto named = [](const std::string& name) {
    return Head() + "  - name: " + name + "\n    type: v4-8\n";
  };
  EXPECT_TRUE(Contains(Error(named("Trainer")),
                       "fleet.yaml:4:11: nodes[0].name: \"Trainer\" must start with a lowercase"));
  EXPECT_TRUE(Contains(Error(named("1st")), "must start with a lowercase letter"));
  EXPECT_TRUE(
      Contains(Error(named("train_er")), "\"train_er\" has a character that is not allowed"));
  EXPECT_TRUE(Contains(Error(named("'a;rm -rf /'")), "has a character that is not allowed"));
  EXPECT_TRUE(Contains(Error(named("trainer-")), "ends in a hyphen"));
  EXPECT_TRUE(Contains(Error(named(std::string(64, 'a'))), "at most 63 characters"));
  EXPECT_TRUE(Parse(named(std::string(63, 'a'))).ok());
}

TEST_F(FleetSpecTest, NodeNameLeavesRoomForCountSuffix) {
  // With count 10 the last node is NAME-9: two more characters.
  EXPECT_TRUE(FailsWith(
      Head() + "  - name: " + std::string(62, 'a') + "\n    type: v4-8\n    count: 10\n",
      {"fleet.yaml:4:11: nodes[0].name:", "with count 10 tpufleet adds \"-9\", so at most 61"}));
  EXPECT_TRUE(
      Parse(Head() + "  - name: " + std::string(61, 'a') + "\n    type: v4-8\n    count: 10\n")
          .ok());
  EXPECT_EQ(CheckNodeName(std::string(60, 'a'), 101).ok(), false);  // "-100": 4 more
  EXPECT_EQ(CheckNodeName(std::string(59, 'a'), 101).ok(), true);
}

TEST_F(FleetSpecTest, DuplicateNodeNames) {
  EXPECT_TRUE(
      FailsWith(Head() + "  - {name: a, type: v4-8}\n  - {name: a, type: v4-16}\n",
                {"fleet.yaml:5:12: nodes[1].name: node id \"a\" is also made by nodes[0]"}));
}

TEST_F(FleetSpecTest, ExpandedNamesClash) {
  // t with count 2 makes t-0 and t-1; a node named t-1 clashes with it.
  std::string e =
      Error(Head() + "  - {name: t, type: v4-8, count: 2}\n  - {name: t-1, type: v4-8}\n");
  EXPECT_TRUE(Contains(e, "nodes[1].name: node id \"t-1\" is also made by nodes[0]"));
  e = Error(Head() + "  - {name: t-0, type: v4-8}\n  - {name: t, type: v4-8, count: 2}\n");
  EXPECT_TRUE(Contains(e,
                       "nodes[1].name: node id \"t-0\" (from this name with count 2) is also "
                       "made by nodes[0]"));
}

TEST_F(FleetSpecTest, CountOutOfRange) {
  ExpectNodeErrors({
      {"    count: 0\n", "fleet.yaml:6:12: nodes[0].count: expected a whole number from 1 to 256"},
      {"    count: -3\n", "fleet.yaml:6:12: nodes[0].count: expected"},
      {"    count: 257\n", "from 1 to 256"},
      {"    count: 1.5\n", "expected a whole number"},
  });
  Result<FleetSpec> r = Parse(V4Node("    count: 3\n"));
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->nodes[0].names, (std::vector<std::string>{"n-0", "n-1", "n-2"}));
}

// ---------------------------------------------------------------------------------------
// Capacity, queued, durations, idle.

TEST_F(FleetSpecTest, Capacity) {
  EXPECT_EQ(Parse(V4Node("    capacity: reserved\n"))->nodes[0].capacity, Capacity::kReserved);
  EXPECT_TRUE(Contains(Error(V4Node("    capacity: on_demand\n")),
                       "fleet.yaml:6:15: nodes[0].capacity: \"on_demand\" is not one of "
                       "on-demand, spot, reserved (did you mean on-demand?)"));
  EXPECT_TRUE(Contains(Error(V4Node("    capacity: preemptible\n")),
                       "preemptible TPUs are now called spot"));
}

TEST_F(FleetSpecTest, Queued) {
  Result<FleetSpec> r = Parse(V4Node("    queued: true\n"));
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  ASSERT_TRUE(r->nodes[0].queued.has_value());
  EXPECT_FALSE(r->nodes[0].queued->valid_until.has_value());
  EXPECT_FALSE(Parse(V4Node("    queued: false\n"))->nodes[0].queued.has_value());
  r = Parse(V4Node("    queued: {valid_until: 1h30m}\n"));
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->nodes[0].queued->valid_until, seconds(5400));

  EXPECT_TRUE(Contains(Error(V4Node("    queued: maybe\n")),
                       "fleet.yaml:6:13: nodes[0].queued: expected true, false, or {valid_until"));
  EXPECT_TRUE(
      Contains(Error(V4Node("    queued: {valid_until: 0}\n")),
               "fleet.yaml:6:27: nodes[0].queued.valid_until: expected a duration above zero"));
  EXPECT_TRUE(Contains(Error(V4Node("    queued: {valid_untl: 6h}\n")),
                       "nodes[0].queued.valid_untl: unknown field (did you mean valid_until?)"));
}

TEST_F(FleetSpecTest, Durations) {
  ExpectNodeErrors({
      {"    ttl: 24 hours\n", "fleet.yaml:6:10: nodes[0].ttl: '24 hours' is not a duration"},
      {"    ttl: 0s\n", "nodes[0].ttl: expected a duration above zero"},
      {"    ttl: -5\n", "fleet.yaml:6:10: nodes[0].ttl: "},
  });
  EXPECT_EQ(Parse(V4Node("    ttl: 2d\n"))->nodes[0].ttl, hours(48));
  EXPECT_EQ(Parse(V4Node("    ttl: 90\n"))->nodes[0].ttl, seconds(90));  // bare seconds
}

TEST_F(FleetSpecTest, IdlePolicy) {
  Result<FleetSpec> r = Parse(V4Node("    idle: {after: 30m}\n"));
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->nodes[0].idle->after, std::chrono::minutes(30));
  EXPECT_EQ(r->nodes[0].idle->action, IdleAction::kDelete);  // the default
  // v4-8 is one VM: stop is fine.
  EXPECT_EQ(Parse(V4Node("    idle: {after: 30m, action: stop}\n"))->nodes[0].idle->action,
            IdleAction::kStop);

  ExpectNodeErrors({
      {"    idle: {action: delete}\n", "nodes[0].idle.after: this field is required"},
      {"    idle: {after: 0m}\n", "nodes[0].idle.after: expected a duration above zero"},
      {"    idle: {after: 1h, action: pause}\n",
       "nodes[0].idle.action: \"pause\" is not one of delete, stop"},
  });
}

TEST_F(FleetSpecTest, StopIsRefusedForPods) {
  EXPECT_TRUE(FailsWith(Head() + "  - name: trainer\n    type: v4-32\n"
                                 "    idle: {after: 2h, action: stop}\n",
                        {"fleet.yaml:6:31: nodes[0].idle.action: TPU pods cannot be stopped, "
                         "and v4-32 has 4 worker VMs; use delete"}));
}

// ---------------------------------------------------------------------------------------
// Users and SSH keys.

std::string UserSpecText(const std::string& name, const std::string& key) {
  return "fleet: demo\nproject: demo-project\nusers:\n  - name: " + name + "\n    keys: [\"" + key +
         "\"]\nnodes: [{name: n, type: v4-8}]\n";
}

TEST_F(FleetSpecTest, AcceptsEveryKeyType) {
  for (const char* key : {kEd25519, kRsa, kEcdsa256, kSkEd25519}) {
    Result<FleetSpec> r = Parse(UserSpecText("alice", key));
    EXPECT_TRUE(r.ok()) << key << ": " << r.status().ToString();
  }
  EXPECT_TRUE(
      CheckSshPublicKey(
          "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIF8CMJzNhdkO7jeYCceTkgcAMVdmkDM5OkhGSfnuAsrl")
          .ok())
      << "a comment is optional";
}

TEST_F(FleetSpecTest, BadKeysSayWhatIsWrong) {
  EXPECT_TRUE(FailsWith(UserSpecText("alice", "ssh-ed2519 AAAA alice@x"),
                        {"fleet.yaml:5:12: users[0].keys[0]: unknown key type \"ssh-ed2519\" "
                         "(did you mean ssh-ed25519?)"}));
  EXPECT_TRUE(Contains(Error(UserSpecText("alice", kTruncated)), "damaged or cut short"));
  EXPECT_TRUE(Contains(Error(UserSpecText("alice", kShortEd25519)), "damaged or cut short"));
  EXPECT_TRUE(
      Contains(Error(UserSpecText("alice", "ssh-ed25519 not*base64 a@b")), "is not base64"));
  EXPECT_TRUE(Contains(Error(UserSpecText("alice", "ssh-ed25519")), "is not base64"));
  // The embedded type must match the one the line claims.
  std::string mismatched =
      std::string("ssh-rsa ") + (kEd25519 + std::string("ssh-ed25519 ").size());
  EXPECT_TRUE(Contains(Error(UserSpecText("alice", mismatched)),
                       "the line says ssh-rsa but the key data is a ssh-ed25519 key"));
  EXPECT_TRUE(Contains(Error(UserSpecText("alice", "-----BEGIN OPENSSH PRIVATE KEY----- b3BlbnNz")),
                       "this is a private key"));
  EXPECT_TRUE(Contains(Error(UserSpecText("alice", std::string("command=\\\"sh\\\" ") + kEd25519)),
                       "options before the key type are not accepted"));
}

TEST_F(FleetSpecTest, KeyWithLineBreakIsRefused) {
  // A second line would become a second, unchecked entry in authorized_keys.
  std::string spec =
      "fleet: demo\nproject: demo-project\nusers:\n  - name: alice\n    keys:\n"
      "      - |\n        " +
      std::string(kEd25519) + "\n        " + kEd25519Bob + "\nnodes: [{name: n, type: v4-8}]\n";
  EXPECT_TRUE(Contains(Error(spec), "users[0].keys[0]: the key contains a line break"));
}

TEST_F(FleetSpecTest, UserNeedsKeysAndGivesEachOnce) {
  EXPECT_TRUE(
      Contains(Error("fleet: demo\nproject: demo-project\nusers: [{name: alice, keys: []}]\n"
                     "nodes: [{name: n, type: v4-8}]\n"),
               "users[0].keys: expected at least one SSH public key for alice"));
  EXPECT_TRUE(Contains(Error("fleet: demo\nproject: demo-project\nusers: [{name: alice}]\n"
                             "nodes: [{name: n, type: v4-8}]\n"),
                       "users[0].keys: this field is required"));
  std::string twice = std::string(
                          "fleet: demo\nproject: demo-project\nusers:\n  - name: alice\n"
                          "    keys: [\"") +
                      kEd25519 + "\", \"" + kEd25519 + "\"]\nnodes: [{name: n, type: v4-8}]\n";
  EXPECT_TRUE(Contains(Error(twice), "users[0].keys[1]: this key is listed twice for alice"));
}

TEST_F(FleetSpecTest, InvalidUserNames) {
  EXPECT_TRUE(Contains(Error(UserSpecText("Alice", kEd25519)),
                       "fleet.yaml:4:11: users[0].name: \"Alice\" is not a valid user name"));
  EXPECT_TRUE(Contains(Error(UserSpecText("al$ce", kEd25519)), "is not a valid user name"));
  EXPECT_TRUE(
      Contains(Error(UserSpecText(std::string(33, 'a'), kEd25519)), "is not a valid user name"));
  EXPECT_TRUE(Contains(Error(UserSpecText("root", kEd25519)),
                       "users[0].name: \"root\" is a system account"));
  EXPECT_TRUE(Parse(UserSpecText("_svc-1", kEd25519)).ok());
  EXPECT_TRUE(Parse(UserSpecText(std::string(32, 'a'), kEd25519)).ok());
}

// The head of a spec with fleet-wide users: the fleet, its project and `users:`.
constexpr const char* kUsersHead = "fleet: demo\nproject: demo-project\nusers:\n";

// One entry of a users list, indented by `indent`, as a flow mapping.
std::string UserEntry(const std::string& indent, const std::string& name, const std::string& key,
                      const std::string& more = "") {
  return indent + "- {name: " + name + ", " + more + "keys: [\"" + key + "\"]}\n";
}

TEST_F(FleetSpecTest, DuplicateUsers) {
  std::string spec = kUsersHead + UserEntry("  ", "alice", kEd25519) +
                     UserEntry("  ", "alice", kEd25519Bob) + "nodes: [{name: n, type: v4-8}]\n";
  EXPECT_TRUE(
      Contains(Error(spec), "fleet.yaml:5:12: users[1].name: alice is already given in users[0]"));
  // A node's own user may not repeat a fleet-wide one either.
  spec = kUsersHead + UserEntry("  ", "alice", kEd25519) +
         "nodes:\n  - name: n\n    type: v4-8\n    users:\n" +
         UserEntry("      ", "alice", kEd25519Bob);
  EXPECT_TRUE(Contains(Error(spec),
                       "fleet.yaml:9:16: nodes[0].users[0].name: alice is already "
                       "given in users[0]"));
}

TEST_F(FleetSpecTest, SudoMustBeABoolean) {
  std::string spec = kUsersHead + UserEntry("  ", "alice", kEd25519, "sudo: sometimes, ") +
                     "nodes: [{name: n, type: v4-8}]\n";
  EXPECT_TRUE(Contains(Error(spec), "users[0].sudo: expected true or false"));
}

// ---------------------------------------------------------------------------------------
// Data disks.

std::string DiskNode(const std::string& type, const std::string& disks,
                     const std::string& more = "") {
  return "fleet: demo\nproject: p-demo\nnodes:\n  - name: n\n    type: " + type +
         "\n    data_disks:\n" + disks + more;
}
constexpr char kV4Disk[] = "projects/p-demo/zones/us-central2-b/disks/data";

TEST_F(FleetSpecTest, DiskModeAndSource) {
  EXPECT_TRUE(Contains(
      Error(DiskNode("v4-8", "      - {source: " + std::string(kV4Disk) + ", mode: rw}\n")),
      "nodes[0].data_disks[0].mode: \"rw\" is not one of read-only, read-write"));
  EXPECT_TRUE(Contains(Error(DiskNode("v4-8", "      - {source: imagenet}\n")),
                       "fleet.yaml:7:18: nodes[0].data_disks[0].source: expected a zonal disk as "
                       "projects/PROJECT/zones/ZONE/disks/NAME"));
  EXPECT_TRUE(Contains(Error(DiskNode("v4-8", "      - {mode: read-only}\n")),
                       "nodes[0].data_disks[0].source: this field is required"));
  EXPECT_TRUE(Contains(Error(DiskNode("v4-8", "      - {source: " + std::string(kV4Disk) + "}\n" +
                                                  "      - {source: " + kV4Disk + "}\n")),
                       "nodes[0].data_disks[1].source: this disk is listed twice"));
}

TEST_F(FleetSpecTest, DiskMountPath) {
  auto disk = [](const std::string& more) {
    return "      - {source: " + std::string(kV4Disk) + more + "}\n";
  };
  Result<FleetSpec> ok = Parse(DiskNode("v4-8", disk(", mount: /mnt/disks/data")));
  ASSERT_TRUE(ok.ok()) << ok.status().message();
  EXPECT_EQ(ok->nodes[0].data_disks[0].mount, "/mnt/disks/data");
  EXPECT_EQ(ok->nodes[0].data_disks[0].name, "data");
  for (const char* bad : {"data", "/", "/data/", "/data/../etc", "/da ta", "/data//x"}) {
    EXPECT_TRUE(Contains(Error(DiskNode("v4-8", disk(std::string(", mount: '") + bad + "'"))),
                         "nodes[0].data_disks[0].mount: expected an absolute directory"))
        << bad;
  }
  EXPECT_TRUE(Contains(Error(DiskNode("v4-8", disk(", mount: /usr/local/data"))),
                       "nodes[0].data_disks[0].mount: a disk must not be mounted over /usr"));
  EXPECT_TRUE(Contains(Error(DiskNode("v4-8", disk(", mount: /home"))),
                       "a disk must not be mounted over /home"));
  EXPECT_TRUE(Contains(
      Error(DiskNode("v4-8", disk(", mount: /data") +
                                 "      - {source: projects/p-demo/zones/us-central2-b/disks/b, "
                                 "mount: /data/b}\n")),
      "nodes[0].data_disks[1].mount: this mount overlaps data's (/data)"));
}

TEST_F(FleetSpecTest, DiskMustBeInTheFleetsProject) {
  EXPECT_TRUE(
      FailsWith(DiskNode("v4-8", "      - {source: projects/other/zones/us-central2-b/disks/d}\n"),
                {"fleet.yaml:7:18: nodes[0].data_disks[0].source: this disk is in "
                 "project other, not the fleet's (p-demo)"}));
}

TEST_F(FleetSpecTest, ReadWriteDiskNeedsOneVm) {
  std::string rw = "      - {source: " + std::string(kV4Disk) + ", mode: read-write}\n";
  EXPECT_TRUE(Parse(DiskNode("v4-8", rw)).ok());
  EXPECT_TRUE(Contains(Error(DiskNode("v4-8", rw, "    count: 2\n")),
                       "fleet.yaml:7:72: nodes[0].data_disks[0].mode: a read-write disk attaches "
                       "to one VM at a time and this entry has count 2; use read-only"));
  EXPECT_TRUE(Contains(Error(DiskNode("v4-32", rw)),
                       "nodes[0].data_disks[0].mode: a read-write disk attaches to one VM at a "
                       "time and v4-32 has 4 worker VMs"));
  // Read-only is fine on a pod and on many slices.
  EXPECT_TRUE(
      Parse(DiskNode("v4-32", "      - {source: " + std::string(kV4Disk) + "}\n", "    count: 3\n"))
          .ok());
}

TEST_F(FleetSpecTest, DiskPinsTheZone) {
  // Zones given: each must be the disk's zone.
  std::string e = Error(DiskNode("v5litepod-8",
                                 "      - {source: projects/p-demo/zones/us-central1-a/disks/d}\n",
                                 "    zones: [us-central1-a, us-west4-a]\n"));
  EXPECT_TRUE(Contains(e,
                       "fleet.yaml:8:28: nodes[0].zones[1]: the node's data disk is in "
                       "us-central1-a and a node attaches only disks of its own zone"));
  // Disk in a zone that does not offer the family.
  e = Error(DiskNode("v4-8", "      - {source: projects/p-demo/zones/us-central1-a/disks/d}\n"));
  EXPECT_TRUE(Contains(e,
                       "fleet.yaml:7:18: nodes[0].data_disks[0].source: the disk is in "
                       "us-central1-a, which does not offer v4"));
  // Two disks in different zones.
  e = Error(DiskNode("v5litepod-8",
                     "      - {source: projects/p-demo/zones/us-central1-a/disks/a}\n"
                     "      - {source: projects/p-demo/zones/us-west4-a/disks/b}\n"));
  EXPECT_TRUE(Contains(e,
                       "nodes[0].data_disks[1].source: this disk is in us-west4-a but "
                       "nodes[0].data_disks[0] is in us-central1-a"));
}

TEST_F(FleetSpecTest, ReadWriteDiskBelongsToOneNode) {
  std::string ro = "    data_disks: [{source: " + std::string(kV4Disk) + "}]\n";
  std::string rw = "    data_disks: [{source: " + std::string(kV4Disk) + ", mode: read-write}]\n";
  std::string head = "fleet: demo\nproject: p-demo\nnodes:\n";
  EXPECT_TRUE(
      Parse(head + "  - name: a\n    type: v4-8\n" + ro + "  - name: b\n    type: v4-8\n" + ro)
          .ok());
  EXPECT_TRUE(Contains(
      Error(head + "  - name: a\n    type: v4-8\n" + rw + "  - name: b\n    type: v4-8\n" + ro),
      "fleet.yaml:9:17: nodes[1].data_disks: " + std::string(kV4Disk) +
          " is also attached by nodes[0]; a disk attached read-write belongs to one node"));
  EXPECT_TRUE(Contains(
      Error(head + "  - name: a\n    type: v4-8\n" + ro + "  - name: b\n    type: v4-8\n" + rw),
      "is also attached by nodes[0]"));
}

// ---------------------------------------------------------------------------------------
// Labels, setup.

TEST_F(FleetSpecTest, Labels) {
  ExpectNodeErrors({
      {"    labels: {Team: nlp}\n",
       "fleet.yaml:6:14: nodes[0].labels.Team: label key \"Team\" is not valid"},
      {"    labels: {team: NLP}\n",
       "fleet.yaml:6:20: nodes[0].labels.team: label value \"NLP\" is not valid"},
      {"    labels: {team: a b}\n", "label value \"a b\" is not valid"},
      {"    labels: {team: }\n", "nodes[0].labels.team: expected a value"},
      {"    labels: {tpufleet-fleet: x}\n", "reserved"},
      {"    labels: {k: " + std::string(64, 'v') + "}\n", "1 to 63 characters"},
  });
  std::string many = "    labels:\n";
  for (int i = 0; i <= kMaxLabels; ++i) {
    many += "      k" + std::to_string(i) + ": v\n";
  }
  EXPECT_TRUE(Contains(Error(V4Node(many)), "nodes[0].labels: at most 60 labels"));
  Result<FleetSpec> r = Parse(V4Node("    labels: {cost_center: '1234', env: dev-1}\n"));
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->nodes[0].labels.at("cost_center"), "1234");
}

TEST_F(FleetSpecTest, Setup) {
  EXPECT_TRUE(Contains(Error(V4Node("    setup: \"echo a\\0b\"\n")),
                       "nodes[0].setup: the script contains a NUL byte"));
  std::string big = "    setup: |\n";
  for (int i = 0; i < 5000; ++i) {
    big += "      echo " + std::string(60, 'x') + "\n";
  }
  EXPECT_TRUE(Contains(Error(V4Node(big)), "nodes[0].setup: the script is"));
}

// ---------------------------------------------------------------------------------------
// ssh-hosts.

constexpr char kSshHead[] = "fleet: lab\nprovider: ssh-hosts\nnodes:\n";

TEST_F(FleetSpecTest, SshHosts) {
  Result<FleetSpec> r =
      Parse(std::string(kSshHead) +
            "  - name: gpus\n    hosts: [gpu1.lab.example.org, 10.0.0.7, 'fe80::1']\n"
            "    ssh_user: ops\n    port: 2222\n    labels: {room: b12}\n");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  const NodeSpec& n = r->nodes[0];
  EXPECT_EQ(r->project, "");
  EXPECT_EQ(n.hosts.size(), 3u);
  EXPECT_EQ(n.workers, 3);
  EXPECT_EQ(n.ssh_user, "ops");
  EXPECT_EQ(n.port, 2222);
  EXPECT_TRUE(n.type.empty());
  EXPECT_TRUE(n.zones.empty());
}

TEST_F(FleetSpecTest, SshUserMayBeASystemAccount) {
  // tpufleet logs in as ssh_user; it does not create it, so root is allowed here.
  Result<FleetSpec> r =
      Parse(std::string(kSshHead) + "  - {name: g, hosts: [a], ssh_user: root}\n");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->nodes[0].ssh_user, "root");
  EXPECT_TRUE(CheckLoginName("root").ok());
  EXPECT_FALSE(CheckUserName("root").ok());
}

TEST_F(FleetSpecTest, SshHostsRefusesTpuFieldsAndViceVersa) {
  ExpectErrors({
      {std::string(kSshHead) + "  - name: gpus\n    hosts: [a]\n    type: v4-8\n",
       "fleet.yaml:6:5: nodes[0].type: not used with provider ssh-hosts"},
      {std::string(kSshHead) + "  - name: gpus\n    hosts: [a]\n    ttl: 1h\n",
       "nodes[0].ttl: not used with provider ssh-hosts"},
      {V4Node("    hosts: [a]\n"), "fleet.yaml:6:5: nodes[0].hosts: only for provider ssh-hosts"},
      {"fleet: lab\nprovider: ssh-hosts\nproject: demo-project\nnodes: "
       "[{name: g, hosts: [a]}]\n",
       "fleet.yaml:3:1: project: not used with provider ssh-hosts"},
      {"fleet: lab\nprovider: ssh-hosts\nbudget: {usd_total: 5}\nnodes: "
       "[{name: g, hosts: [a]}]\n",
       "budget: not used with provider ssh-hosts"},
  });
}

TEST_F(FleetSpecTest, SshHostAddressesAndPorts) {
  auto host = [](const std::string& h) {
    return std::string(kSshHead) + "  - name: g\n    hosts: ['" + h + "']\n";
  };
  ExpectErrors({
      {host("-oProxyCommand=sh"),
       "fleet.yaml:5:13: nodes[0].hosts[0]: \"-oProxyCommand=sh\" is not a host name"},
      {host("gpu1:22"), "give the port in the port field"},
      {host("a b"), "is not a host name or IP address"},
      {host("host-.example"), "is not a host name"},
      {std::string(kSshHead) + "  - name: g\n    hosts: []\n",
       "nodes[0].hosts: expected at least one host address"},
      {std::string(kSshHead) + "  - name: g\n    hosts: [a]\n    port: 70000\n",
       "nodes[0].port: expected a TCP port from 1 to 65535"},
      {std::string(kSshHead) + "  - name: g\n    hosts: [a]\n    ssh_user: Bob\n",
       "nodes[0].ssh_user: \"Bob\" is not a valid user name"},
      {std::string(kSshHead) + "  - {name: g, hosts: [a, b]}\n  - {name: h, hosts: [b]}\n",
       "nodes[1].hosts: b is already a host of nodes[0]"},
      {std::string(kSshHead) + "  - {name: g, hosts: [a, a]}\n",
       "nodes[0].hosts[1]: a is listed twice"},
  });
}

}  // namespace
}  // namespace tpufleet::testing
