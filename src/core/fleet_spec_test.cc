#include "core/fleet_spec.h"

#include <gtest/gtest.h>

#include <string>

namespace tpufleet {
namespace {

using std::chrono::hours;
using std::chrono::seconds;

// Whether `text` contains `part`; on failure, shows both.
::testing::AssertionResult Contains(const std::string& text, const std::string& part) {
  if (text.find(part) != std::string::npos) {
    return ::testing::AssertionSuccess();
  }
  return ::testing::AssertionFailure() << "\n  message: " << text << "\n  lacks:   " << part;
}

// Real keys made with ssh-keygen for these tests (public halves only).
constexpr char kEd25519[] =
    "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIF8CMJzNhdkO7jeYCceTkgcAMVdmkDM5OkhGSfnuAsrl "
    "alice@laptop";
constexpr char kEd25519Bob[] =
    "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIEJRPDF2Ls8M/iUvYINLgiHOimRyl2Qw5/Ne86WVqpLx bob@laptop";
constexpr char kRsa[] =
    "ssh-rsa "
    "AAAAB3NzaC1yc2EAAAADAQABAAABgQCxaxJTzH81N+u2pATmC40s6O/kigWbcgz+w4FQQmOoU3a8a50tUyBhSno7EVzA"
    "MczhFkyjKmfiWxbUzbNJ31vlv2bJutCdVvWGeyc0iGEJbHW3/oAl/FXhjtpEXNB4nA7cggJkD8D4S5T79MKAa14ldajB"
    "lADntDgtP11So/zKL7iQVUe/AsG7m8JxpvWxz2S8R/UDqMaHsoQALSXwkVSRS2kGqFkRFV3vCHzGCzjprJWgix8554jb"
    "WZzQ0gYFjXMikrOZCbZ+wtQNNaOrYY+Yiq8DbstUQYDn0moQtkhHsaWiwaKyCDRpEuPtRHeH1EO5QyYVGk0zAwnC2Nki"
    "yKz+ZUXlTMYC9rVrRt5rH4yt6+EpMncAXA+6IHXcA3ZeKscYok+u0D24qFa2nrNDz4YHZIdegiOzfWibMHA/WTgg2Tw3"
    "LjNaSLgMGRwlYiviyMFRlo6Ef4Va92ZlGsA2YTlMxIuVV/gvS84j2P3DduvYrFG9lG5Hqm9vhR5+i6vteDE= "
    "bob@workstation";
constexpr char kEcdsa256[] =
    "ecdsa-sha2-nistp256 "
    "AAAAE2VjZHNhLXNoYTItbmlzdHAyNTYAAAAIbmlzdHAyNTYAAABBBJdwV/Ggn6TuzdoCHl95zsHCrDHFUc1IF0hsBLUr"
    "WTJiD7UknF8DikjKR3SZvin4IOugMBwG8FP67D4p9xPPQNw= ec@x";
// A security-key (FIDO) ed25519 key, built by hand: type, 32-byte key, application.
constexpr char kSkEd25519[] =
    "sk-ssh-ed25519@openssh.com "
    "AAAAGnNrLXNzaC1lZDI1NTE5QG9wZW5zc2guY29tAAAAIAABAgMEBQYHCAkKCwwNDg8QERITFBUWFxgZGhscHR4fAAAA"
    "BHNzaDo=";

// kEd25519 without its last 3 bytes: still base64, but the key is cut short.
constexpr char kTruncated[] =
    "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIF8CMJzNhdkO7jeYCceTkgcAMVdmkDM5OkhGSfnu";
// A blob whose lengths add up but whose ed25519 key is 31 bytes.
constexpr char kShortEd25519[] =
    "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAHwAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=";

class FleetSpecTest : public ::testing::Test {
 protected:
  void SetUp() override {
    Result<Catalog> c = ParseCatalog(BuiltinCatalogYaml(), "built-in catalog");
    ASSERT_TRUE(c.ok()) << c.status().ToString();
    catalog_ = std::move(*c);
  }

  Result<FleetSpec> Parse(const std::string& text) {
    return ParseFleetSpec(text, "fleet.yaml", catalog_);
  }

  // A spec that must fail; returns its message.
  std::string Error(const std::string& text) {
    Result<FleetSpec> r = Parse(text);
    EXPECT_FALSE(r.ok()) << "parsed, but should not have:\n" << text;
    if (r.ok()) {
      return "";
    }
    EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
    return r.status().message();
  }

  // Lines 1-3 of most specs below; node entries start on line 4.
  static std::string Head() { return "fleet: demo\nproject: demo-project\nnodes:\n"; }
  // Head() and a v4-8 node "n" (lines 4-5); more node fields follow from line 6.
  static std::string V4Node(const std::string& more = "") {
    return Head() + "  - name: n\n    type: v4-8\n" + more;
  }

  Catalog catalog_;
};

// ---------------------------------------------------------------------------------------
// Valid specs and their resolved values.

// The content of examples/fleet.yaml, keys shortened to one per user.
const std::string kExample = std::string(R"(fleet: nlp-lab
provider: gcp-tpu
project: nlp-lab-tpu
budget: {usd_per_day: 1600, usd_total: 20000}
users:
  - name: alice
    keys:
      - )") + kEd25519 + R"(
    sudo: true
  - name: bob
    keys: [")" + kRsa + R"("]
nodes:
  - name: trainer
    type: v6e-16
    zones: [us-east5-b, us-east5-a]
    capacity: spot
    queued: {valid_until: 6h}
    labels: {team: nlp, purpose: training}
    setup: |
      pip install -U "jax[tpu]"
    ttl: 24h
    idle: {after: 2h, action: delete}
  - name: notebook
    type: v5litepod-8
    runtime_version: v2-alpha-tpuv5-lite
    data_disks:
      - {source: projects/nlp-lab-tpu/zones/us-central1-a/disks/datasets, mode: read-only}
      - {source: projects/nlp-lab-tpu/zones/us-central1-a/disks/scratch, mode: read-write}
    users:
      - name: carol
        keys: [")" + kEd25519Bob +
                             R"("]
    idle: {after: 1h, action: stop}
  - name: eval
    type: v5e-4
    count: 2
    capacity: spot
    data_disks:
      - {source: projects/nlp-lab-tpu/zones/us-central1-a/disks/datasets}
)";

TEST_F(FleetSpecTest, ExampleParsesWithResolvedValues) {
  Result<FleetSpec> r = Parse(kExample);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  const FleetSpec& f = *r;
  EXPECT_EQ(f.name, "nlp-lab");
  EXPECT_EQ(f.provider, Provider::kGcpTpu);
  EXPECT_EQ(f.project, "nlp-lab-tpu");
  ASSERT_TRUE(f.budget.has_value());
  EXPECT_EQ(f.budget->usd_per_day, 1600);
  EXPECT_EQ(f.budget->usd_total, 20000);

  ASSERT_EQ(f.users.size(), 2u);
  EXPECT_EQ(f.users[0].name, "alice");
  EXPECT_TRUE(f.users[0].sudo);
  EXPECT_EQ(f.users[0].keys, std::vector<std::string>{kEd25519});
  EXPECT_EQ(f.users[0].line, 6);
  EXPECT_FALSE(f.users[1].sudo);

  ASSERT_EQ(f.nodes.size(), 3u);
  const NodeSpec& trainer = f.nodes[0];
  EXPECT_EQ(trainer.name, "trainer");
  EXPECT_EQ(trainer.names, std::vector<std::string>{"trainer"});
  EXPECT_EQ(trainer.line, 13);
  EXPECT_EQ(trainer.type, "v6e-16");
  EXPECT_EQ(trainer.family, "v6e");
  EXPECT_EQ(trainer.chips, 16);
  EXPECT_EQ(trainer.workers, 4);
  EXPECT_EQ(trainer.runtime_version, "v2-alpha-tpuv6e");  // the v6e default
  EXPECT_TRUE(trainer.runtime_version_defaulted);
  EXPECT_EQ(trainer.zones, (std::vector<std::string>{"us-east5-b", "us-east5-a"}));
  EXPECT_FALSE(trainer.zones_defaulted);
  EXPECT_EQ(trainer.capacity, Capacity::kSpot);
  ASSERT_TRUE(trainer.queued.has_value());
  EXPECT_EQ(trainer.queued->valid_until, hours(6));
  EXPECT_EQ(trainer.labels,
            (std::map<std::string, std::string>{{"team", "nlp"}, {"purpose", "training"}}));
  EXPECT_EQ(trainer.setup, "pip install -U \"jax[tpu]\"\n");
  EXPECT_EQ(trainer.ttl, hours(24));
  ASSERT_TRUE(trainer.idle.has_value());
  EXPECT_EQ(trainer.idle->after, hours(2));
  EXPECT_EQ(trainer.idle->action, IdleAction::kDelete);

  const NodeSpec& notebook = f.nodes[1];
  EXPECT_EQ(notebook.workers, 1);
  EXPECT_EQ(notebook.runtime_version, "v2-alpha-tpuv5-lite");
  EXPECT_FALSE(notebook.runtime_version_defaulted);
  // No zones given: the data disks' zone, not every v5litepod zone.
  EXPECT_EQ(notebook.zones, std::vector<std::string>{"us-central1-a"});
  EXPECT_TRUE(notebook.zones_defaulted);
  EXPECT_EQ(notebook.capacity, Capacity::kOnDemand);
  EXPECT_FALSE(notebook.queued.has_value());
  ASSERT_EQ(notebook.data_disks.size(), 2u);
  EXPECT_EQ(notebook.data_disks[0].zone, "us-central1-a");
  EXPECT_EQ(notebook.data_disks[0].mode, DiskMode::kReadOnly);
  EXPECT_EQ(notebook.data_disks[1].mode, DiskMode::kReadWrite);
  EXPECT_EQ(notebook.idle->action, IdleAction::kStop);
  ASSERT_EQ(notebook.users.size(), 1u);
  EXPECT_EQ(notebook.users[0].name, "carol");

  const NodeSpec& eval = f.nodes[2];
  EXPECT_EQ(eval.type, "v5litepod-4");  // the alias v5e-4 resolved to the API name
  EXPECT_EQ(eval.count, 2);
  EXPECT_EQ(eval.names, (std::vector<std::string>{"eval-0", "eval-1"}));
  EXPECT_EQ(eval.data_disks[0].mode, DiskMode::kReadOnly);  // the default mode
  EXPECT_FALSE(eval.ttl.has_value());
  EXPECT_FALSE(eval.idle.has_value());

  std::vector<UserSpec> on_notebook = UsersOn(f, notebook);
  ASSERT_EQ(on_notebook.size(), 3u);
  EXPECT_EQ(on_notebook[2].name, "carol");
  EXPECT_EQ(UsersOn(f, trainer).size(), 2u);
}

TEST_F(FleetSpecTest, MinimalSpecGetsCatalogDefaults) {
  Result<FleetSpec> r = Parse(V4Node());
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  const NodeSpec& n = r->nodes[0];
  EXPECT_EQ(r->provider, Provider::kGcpTpu);
  EXPECT_FALSE(r->budget.has_value());
  EXPECT_TRUE(r->users.empty());
  EXPECT_EQ(n.line, 4);
  EXPECT_EQ(n.count, 1);
  EXPECT_EQ(n.names, std::vector<std::string>{"n"});
  EXPECT_EQ(n.chips, 4);
  EXPECT_EQ(n.runtime_version, "tpu-ubuntu2204-base");
  EXPECT_EQ(n.zones, std::vector<std::string>{"us-central2-b"});
  EXPECT_TRUE(n.zones_defaulted);
  EXPECT_EQ(n.capacity, Capacity::kOnDemand);
  EXPECT_FALSE(n.queued.has_value());
  EXPECT_FALSE(n.ttl.has_value());
  EXPECT_FALSE(n.idle.has_value());
}

TEST_F(FleetSpecTest, DefaultZonesAreTheFamilysInCatalogOrder) {
  Result<FleetSpec> r = Parse(Head() + "  - {name: n, type: v5p-8}\n");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->nodes[0].zones, catalog_.FindFamily("v5p")->zones);
}

TEST_F(FleetSpecTest, SingleZoneMayBeAScalar) {
  Result<FleetSpec> r = Parse(V4Node("    zones: us-central2-b\n"));
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->nodes[0].zones, std::vector<std::string>{"us-central2-b"});
}

// ---------------------------------------------------------------------------------------
// Syntax and structure.

TEST_F(FleetSpecTest, BadIndentationNamesLineAndColumn) {
  std::string e = Error(Head() + "  - name: trainer\n   type: v4-32\n");
  EXPECT_TRUE(Contains(e, "fleet.yaml:5:4: not valid YAML"));
  EXPECT_TRUE(Contains(e, "indentation"));
}

TEST_F(FleetSpecTest, EmptyFile) {
  EXPECT_TRUE(Contains(Error("# nothing here\n"), "fleet.yaml: the file is empty"));
}

TEST_F(FleetSpecTest, RootMustBeAMapping) {
  EXPECT_TRUE(Contains(Error("- a\n- b\n"), "fleet.yaml:1:1: expected a mapping of fields"));
}

TEST_F(FleetSpecTest, UnknownTopLevelFieldSuggestsNearest) {
  std::string e = Error("fleet: demo\nproject: demo-project\nnodse: []\n");
  EXPECT_TRUE(Contains(e, "fleet.yaml:3:1: nodse: unknown field (did you mean nodes?)"));
}

TEST_F(FleetSpecTest, UnknownNodeFieldSuggestsNearest) {
  std::string e = Error(V4Node("    zone: us-central2-b\n"));
  EXPECT_TRUE(Contains(e, "fleet.yaml:6:5: nodes[0].zone: unknown field (did you mean zones?)"));
  // A Cloud TPU node's list of fields does not offer the ssh-hosts ones.
  EXPECT_FALSE(Contains(e, "ssh_user"));
}

TEST_F(FleetSpecTest, FieldGivenTwice) {
  EXPECT_TRUE(
      Contains(Error(V4Node("    type: v4-16\n")), "fleet.yaml:6:5: nodes[0].type: appears twice"));
}

TEST_F(FleetSpecTest, RequiredFields) {
  EXPECT_TRUE(
      Contains(Error("project: demo-project\nnodes: []\n"), "fleet: this field is required"));
  EXPECT_TRUE(
      Contains(Error("fleet: demo\nproject: demo-project\n"), "nodes: this field is required"));
  EXPECT_TRUE(Contains(Error("fleet: demo\nnodes: [{name: n, type: v4-8}]\n"),
                       "project: this field is required"));
  EXPECT_TRUE(Contains(Error(Head() + "  - name: n\n"), "nodes[0].type: this field is required"));
  EXPECT_TRUE(
      Contains(Error(Head() + "  - type: v4-8\n"), "nodes[0].name: this field is required"));
}

TEST_F(FleetSpecTest, WrongKinds) {
  EXPECT_TRUE(Contains(Error("fleet: demo\nproject: demo-project\nnodes: {n: 1}\n"),
                       "fleet.yaml:3:8: nodes: expected a list, found a mapping"));
  EXPECT_TRUE(Contains(Error(V4Node("    count: two\n")),
                       "fleet.yaml:6:12: nodes[0].count: expected a whole number, found \"two\""));
  EXPECT_TRUE(Contains(Error(V4Node("    labels: [a, b]\n")),
                       "fleet.yaml:6:13: nodes[0].labels: expected a mapping, found a list"));
  EXPECT_TRUE(Contains(Error(V4Node("    zones: {a: b}\n")),
                       "fleet.yaml:6:12: nodes[0].zones: expected text, found a mapping"));
  EXPECT_TRUE(Contains(Error(Head() + "  - name: [a]\n    type: v4-8\n"),
                       "fleet.yaml:4:11: nodes[0].name: expected text, found a list"));
}

TEST_F(FleetSpecTest, EmptyNodeList) {
  EXPECT_TRUE(Contains(Error("fleet: demo\nproject: demo-project\nnodes: []\n"),
                       "fleet.yaml:3:8: nodes: expected at least one node"));
}

// ---------------------------------------------------------------------------------------
// Types, zones, runtime versions.

TEST_F(FleetSpecTest, UnknownTypeSuggestsNearest) {
  std::string e = Error(Head() + "  - name: trainer\n    type: v4_32\n");
  EXPECT_TRUE(Contains(e, "fleet.yaml:5:11: nodes[0].type: unknown accelerator type \"v4_32\""));
  EXPECT_TRUE(Contains(e, "did you mean v4-32"));
}

TEST_F(FleetSpecTest, TypeWithSizeThatDoesNotExist) {
  std::string e = Error(Head() + "  - name: trainer\n    type: v4-48\n");
  EXPECT_TRUE(Contains(e, "fleet.yaml:5:11: nodes[0].type: \"v4-48\" is not a v4 slice size"));
  EXPECT_TRUE(Contains(e, "nearest: v4-32, v4-64"));
}

TEST_F(FleetSpecTest, ZoneThatDoesNotOfferTheType) {
  std::string e = Error(V4Node("    zones: [us-central2-b, us-central1-a]\n"));
  EXPECT_TRUE(Contains(e,
                       "fleet.yaml:6:28: nodes[0].zones[1]: zone us-central1-a does not "
                       "offer v4 (did you mean us-central2-b?)"));
  EXPECT_TRUE(Contains(e, "v4 is offered in us-central2-b"));
  EXPECT_TRUE(Contains(e, "--catalog"));
}

TEST_F(FleetSpecTest, MisspelledZone) {
  std::string e = Error(V4Node("    zones: [us-central-2b]\n"));
  EXPECT_TRUE(Contains(e,
                       "nodes[0].zones[0]: unknown zone \"us-central-2b\" (did you mean "
                       "us-central2-b?)"));
}

TEST_F(FleetSpecTest, ZoneListedTwiceOrEmpty) {
  EXPECT_TRUE(Contains(Error(V4Node("    zones: [us-central2-b, us-central2-b]\n")),
                       "nodes[0].zones[1]: us-central2-b is listed twice"));
  EXPECT_TRUE(Contains(Error(V4Node("    zones: []\n")),
                       "fleet.yaml:6:12: nodes[0].zones: expected at least one zone"));
}

TEST_F(FleetSpecTest, RuntimeVersionNotValidForFamily) {
  std::string e = Error(V4Node("    runtime_version: tpu-vm-v4-bse\n"));
  EXPECT_TRUE(Contains(e,
                       "fleet.yaml:6:22: nodes[0].runtime_version: runtime version "
                       "\"tpu-vm-v4-bse\" is not known for v4 (did you mean tpu-vm-v4-base"));
  EXPECT_TRUE(Contains(e, "v4 runtime versions: tpu-ubuntu2204-base, "));
  EXPECT_TRUE(Contains(e, "--catalog FILE"));
  // Valid for another family is still wrong here.
  EXPECT_TRUE(Contains(Error(V4Node("    runtime_version: v2-alpha-tpuv5\n")),
                       "\"v2-alpha-tpuv5\" is not known for v4"));
}

TEST_F(FleetSpecTest, CatalogOverrideAddsRuntimeVersion) {
  Result<Catalog> extended =
      ParseCatalog("families:\n  v4:\n    runtime_versions: [tpu-ubuntu2204-base, tpu-vm-v4-new]\n",
                   "mine.yaml", catalog_);
  ASSERT_TRUE(extended.ok()) << extended.status().ToString();
  Result<FleetSpec> r =
      ParseFleetSpec(V4Node("    runtime_version: tpu-vm-v4-new\n"), "fleet.yaml", *extended);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->nodes[0].runtime_version, "tpu-vm-v4-new");
}

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
  std::string e =
      Error(Head() + "  - name: " + std::string(62, 'a') + "\n    type: v4-8\n    count: 10\n");
  EXPECT_TRUE(Contains(e, "fleet.yaml:4:11: nodes[0].name:"));
  EXPECT_TRUE(Contains(e, "with count 10 tpufleet adds \"-9\", so at most 61"));
  EXPECT_TRUE(
      Parse(Head() + "  - name: " + std::string(61, 'a') + "\n    type: v4-8\n    count: 10\n")
          .ok());
  EXPECT_EQ(CheckNodeName(std::string(60, 'a'), 101).ok(), false);  // "-100": 4 more
  EXPECT_EQ(CheckNodeName(std::string(59, 'a'), 101).ok(), true);
}

TEST_F(FleetSpecTest, DuplicateNodeNames) {
  std::string e = Error(Head() + "  - {name: a, type: v4-8}\n  - {name: a, type: v4-16}\n");
  EXPECT_TRUE(
      Contains(e, "fleet.yaml:5:12: nodes[1].name: node id \"a\" is also made by nodes[0]"));
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
  EXPECT_TRUE(Contains(Error(V4Node("    count: 0\n")),
                       "fleet.yaml:6:12: nodes[0].count: expected a whole number from 1 to 256"));
  EXPECT_TRUE(
      Contains(Error(V4Node("    count: -3\n")), "fleet.yaml:6:12: nodes[0].count: expected"));
  EXPECT_TRUE(Contains(Error(V4Node("    count: 257\n")), "from 1 to 256"));
  EXPECT_TRUE(Contains(Error(V4Node("    count: 1.5\n")), "expected a whole number"));
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
  EXPECT_TRUE(Contains(Error(V4Node("    ttl: 24 hours\n")),
                       "fleet.yaml:6:10: nodes[0].ttl: '24 hours' is not a duration"));
  EXPECT_TRUE(
      Contains(Error(V4Node("    ttl: 0s\n")), "nodes[0].ttl: expected a duration above zero"));
  EXPECT_TRUE(Contains(Error(V4Node("    ttl: -5\n")), "fleet.yaml:6:10: nodes[0].ttl: "));
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

  EXPECT_TRUE(Contains(Error(V4Node("    idle: {action: delete}\n")),
                       "nodes[0].idle.after: this field is required"));
  EXPECT_TRUE(Contains(Error(V4Node("    idle: {after: 0m}\n")),
                       "nodes[0].idle.after: expected a duration above zero"));
  EXPECT_TRUE(Contains(Error(V4Node("    idle: {after: 1h, action: pause}\n")),
                       "nodes[0].idle.action: \"pause\" is not one of delete, stop"));
}

TEST_F(FleetSpecTest, StopIsRefusedForPods) {
  std::string e = Error(Head() +
                        "  - name: trainer\n    type: v4-32\n"
                        "    idle: {after: 2h, action: stop}\n");
  EXPECT_TRUE(Contains(e,
                       "fleet.yaml:6:31: nodes[0].idle.action: TPU pods cannot be stopped, "
                       "and v4-32 has 4 worker VMs; use delete"));
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
  std::string e = Error(UserSpecText("alice", "ssh-ed2519 AAAA alice@x"));
  EXPECT_TRUE(Contains(e,
                       "fleet.yaml:5:12: users[0].keys[0]: unknown key type \"ssh-ed2519\" "
                       "(did you mean ssh-ed25519?)"));
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

TEST_F(FleetSpecTest, DuplicateUsers) {
  std::string spec =
      "fleet: demo\nproject: demo-project\nusers:\n"
      "  - {name: alice, keys: [\"" +
      std::string(kEd25519) +
      "\"]}\n"
      "  - {name: alice, keys: [\"" +
      kEd25519Bob +
      "\"]}\n"
      "nodes: [{name: n, type: v4-8}]\n";
  EXPECT_TRUE(
      Contains(Error(spec), "fleet.yaml:5:12: users[1].name: alice is already given in users[0]"));
  // A node's own user may not repeat a fleet-wide one either.
  spec =
      "fleet: demo\nproject: demo-project\nusers:\n"
      "  - {name: alice, keys: [\"" +
      std::string(kEd25519) +
      "\"]}\n"
      "nodes:\n  - name: n\n    type: v4-8\n    users:\n"
      "      - {name: alice, keys: [\"" +
      kEd25519Bob + "\"]}\n";
  EXPECT_TRUE(Contains(Error(spec),
                       "fleet.yaml:9:16: nodes[0].users[0].name: alice is already "
                       "given in users[0]"));
}

TEST_F(FleetSpecTest, SudoMustBeABoolean) {
  std::string spec =
      "fleet: demo\nproject: demo-project\nusers:\n"
      "  - {name: alice, sudo: sometimes, keys: [\"" +
      std::string(kEd25519) +
      "\"]}\n"
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

TEST_F(FleetSpecTest, DiskMustBeInTheFleetsProject) {
  std::string e =
      Error(DiskNode("v4-8", "      - {source: projects/other/zones/us-central2-b/disks/d}\n"));
  EXPECT_TRUE(Contains(e,
                       "fleet.yaml:7:18: nodes[0].data_disks[0].source: this disk is in "
                       "project other, not the fleet's (p-demo)"));
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
  EXPECT_TRUE(Contains(Error(V4Node("    labels: {Team: nlp}\n")),
                       "fleet.yaml:6:14: nodes[0].labels.Team: label key \"Team\" is not valid"));
  EXPECT_TRUE(Contains(Error(V4Node("    labels: {team: NLP}\n")),
                       "fleet.yaml:6:20: nodes[0].labels.team: label value \"NLP\" is not valid"));
  EXPECT_TRUE(
      Contains(Error(V4Node("    labels: {team: a b}\n")), "label value \"a b\" is not valid"));
  EXPECT_TRUE(
      Contains(Error(V4Node("    labels: {team: }\n")), "nodes[0].labels.team: expected a value"));
  EXPECT_TRUE(Contains(Error(V4Node("    labels: {tpufleet-fleet: x}\n")), "reserved"));
  EXPECT_TRUE(Contains(Error(V4Node("    labels: {k: " + std::string(64, 'v') + "}\n")),
                       "1 to 63 characters"));
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
// Fleet-level fields.

TEST_F(FleetSpecTest, FleetName) {
  EXPECT_TRUE(
      Contains(Error("fleet: NLP Lab\nproject: demo-project\nnodes: [{name: n, type: v4-8}]\n"),
               "fleet.yaml:1:8: fleet: \"NLP Lab\" must start with a lowercase letter"));
}

TEST_F(FleetSpecTest, Providers) {
  EXPECT_TRUE(Contains(Error("fleet: demo\nprovider: gcp_tpu\nnodes: [{name: n, type: v4-8}]\n"),
                       "fleet.yaml:2:11: provider: \"gcp_tpu\" is not one of gcp-tpu, ssh-hosts, "
                       "emulator (did you mean gcp-tpu?)"));
  Result<FleetSpec> r = Parse("fleet: demo\nprovider: emulator\nnodes: [{name: n, type: v4-8}]\n");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->provider, Provider::kEmulator);
  EXPECT_EQ(r->project, "tpufleet-emulator");
}

TEST_F(FleetSpecTest, Project) {
  EXPECT_TRUE(Contains(Error("fleet: demo\nproject: My Project\nnodes: [{name: n, type: v4-8}]\n"),
                       "fleet.yaml:2:10: project: expected a GCP project id"));
  EXPECT_TRUE(Contains(Error("fleet: demo\nproject: abc\nnodes: [{name: n, type: v4-8}]\n"),
                       "expected a GCP project id"));
  EXPECT_TRUE(Parse("fleet: demo\nproject: 123456789012\nnodes: [{name: n, type: v4-8}]\n").ok());
}

TEST_F(FleetSpecTest, Budget) {
  auto with = [](const std::string& budget) {
    return "fleet: demo\nproject: demo-project\nbudget: " + budget +
           "\nnodes: [{name: n, type: v4-8}]\n";
  };
  Result<FleetSpec> r = Parse(with("{usd_per_day: 12.5}"));
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->budget->usd_per_day, 12.5);
  EXPECT_FALSE(r->budget->usd_total.has_value());
  EXPECT_TRUE(
      Contains(Error(with("{usd_per_day: 0}")),
               "fleet.yaml:3:23: budget.usd_per_day: expected an amount of US dollars above zero"));
  EXPECT_TRUE(Contains(Error(with("{usd_total: -1}")), "budget.usd_total: expected an amount"));
  EXPECT_TRUE(
      Contains(Error(with("{}")), "fleet.yaml:3:9: budget: give usd_per_day, usd_total or both"));
  EXPECT_TRUE(Contains(Error(with("{usd_a_day: 5}")),
                       "budget.usd_a_day: unknown field (did you mean usd_per_day?)"));
  EXPECT_TRUE(Contains(Error(with("300")), "budget: expected a mapping of fields"));
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
  EXPECT_TRUE(
      Contains(Error(std::string(kSshHead) + "  - name: gpus\n    hosts: [a]\n    type: v4-8\n"),
               "fleet.yaml:6:5: nodes[0].type: not used with provider ssh-hosts"));
  EXPECT_TRUE(
      Contains(Error(std::string(kSshHead) + "  - name: gpus\n    hosts: [a]\n    ttl: 1h\n"),
               "nodes[0].ttl: not used with provider ssh-hosts"));
  EXPECT_TRUE(Contains(Error(V4Node("    hosts: [a]\n")),
                       "fleet.yaml:6:5: nodes[0].hosts: only for provider ssh-hosts"));
  EXPECT_TRUE(Contains(Error("fleet: lab\nprovider: ssh-hosts\nproject: demo-project\nnodes: "
                             "[{name: g, hosts: [a]}]\n"),
                       "fleet.yaml:3:1: project: not used with provider ssh-hosts"));
  EXPECT_TRUE(Contains(Error("fleet: lab\nprovider: ssh-hosts\nbudget: {usd_total: 5}\nnodes: "
                             "[{name: g, hosts: [a]}]\n"),
                       "budget: not used with provider ssh-hosts"));
}

TEST_F(FleetSpecTest, SshHostAddressesAndPorts) {
  auto host = [](const std::string& h) {
    return std::string(kSshHead) + "  - name: g\n    hosts: ['" + h + "']\n";
  };
  EXPECT_TRUE(
      Contains(Error(host("-oProxyCommand=sh")),
               "fleet.yaml:5:13: nodes[0].hosts[0]: \"-oProxyCommand=sh\" is not a host name"));
  EXPECT_TRUE(Contains(Error(host("gpu1:22")), "give the port in the port field"));
  EXPECT_TRUE(Contains(Error(host("a b")), "is not a host name or IP address"));
  EXPECT_TRUE(Contains(Error(host("host-.example")), "is not a host name"));
  EXPECT_TRUE(Contains(Error(std::string(kSshHead) + "  - name: g\n    hosts: []\n"),
                       "nodes[0].hosts: expected at least one host address"));
  EXPECT_TRUE(
      Contains(Error(std::string(kSshHead) + "  - name: g\n    hosts: [a]\n    port: 70000\n"),
               "nodes[0].port: expected a TCP port from 1 to 65535"));
  EXPECT_TRUE(
      Contains(Error(std::string(kSshHead) + "  - name: g\n    hosts: [a]\n    ssh_user: Bob\n"),
               "nodes[0].ssh_user: \"Bob\" is not a valid user name"));
  EXPECT_TRUE(Contains(
      Error(std::string(kSshHead) + "  - {name: g, hosts: [a, b]}\n  - {name: h, hosts: [b]}\n"),
      "nodes[1].hosts: b is already a host of nodes[0]"));
  EXPECT_TRUE(Contains(Error(std::string(kSshHead) + "  - {name: g, hosts: [a, a]}\n"),
                       "nodes[0].hosts[1]: a is listed twice"));
}

// ---------------------------------------------------------------------------------------
// Hostile input: the parser refuses it with a message and never crashes.

TEST_F(FleetSpecTest, RefusesHugeFiles) {
  std::string huge = V4Node() + "# " + std::string(kMaxSpecBytes, 'x') + "\n";
  EXPECT_TRUE(
      Contains(Error(huge), "fleet.yaml: the file is 1024 KiB; a fleet spec may be at most 1 MiB"));
}

TEST_F(FleetSpecTest, RefusesAliasBombs) {
  // Each level holds ten aliases of the one before: 10^9 copies of "lol" if expanded.
  std::string bomb = "a0: &a0 [lol, lol, lol, lol, lol, lol, lol, lol, lol, lol]\n";
  for (int i = 1; i <= 9; ++i) {
    std::string prev = "*a" + std::to_string(i - 1);
    bomb += "a" + std::to_string(i) + ": &a" + std::to_string(i) + " [";
    for (int j = 0; j < 10; ++j) {
      bomb += (j ? ", " : "") + prev;
    }
    bomb += "]\n";
  }
  std::string e = Error(bomb + "fleet: demo\n");
  EXPECT_TRUE(Contains(e, "with its aliases (*name) expanded, the spec grows past 8 MiB"));
  EXPECT_TRUE(Contains(e, "fleet.yaml:"));
}

TEST_F(FleetSpecTest, AllowsModestAliases) {
  std::string spec =
      std::string("fleet: demo\nproject: demo-project\n") +
      "x-team: &team [{name: alice, keys: [\"" + kEd25519 + "\"]}]\n" +
      "nodes:\n  - {name: a, type: v4-8, users: *team}\n  - {name: b, type: v4-8, users: *team}\n";
  // x-team is not a field: aliases are allowed, unknown fields still are not.
  EXPECT_TRUE(Contains(Error(spec), "x-team: unknown field"));
  spec = std::string("fleet: demo\nproject: demo-project\nusers: &team [{name: alice, keys: [\"") +
         kEd25519 +
         "\"]}]\nnodes:\n  - {name: a, type: v4-8, labels: &l {team: nlp}}\n"
         "  - {name: b, type: v4-8, labels: *l}\n";
  Result<FleetSpec> r = Parse(spec);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->nodes[1].labels.at("team"), "nlp");
}

TEST_F(FleetSpecTest, RefusesCyclicAlias) {
  EXPECT_TRUE(Contains(Error("fleet: demo\nloop: &a [*a]\n"), "refers to a node that contains it"));
}

TEST_F(FleetSpecTest, RefusesDeepNesting) {
  std::string deep = "fleet: " + std::string(100000, '[') + std::string(100000, ']') + "\n";
  EXPECT_TRUE(Contains(Error(deep), "fleet.yaml:1:"));
}

TEST_F(FleetSpecTest, LongValuesAreRefusedBeforeSuggestions) {
  // "did you mean" compares with every type; a megabyte of type name must not cost seconds.
  std::string e = Error(Head() + "  - name: n\n    type: " + std::string(100000, 'v') + "\n");
  EXPECT_TRUE(Contains(e, "fleet.yaml:5:11: nodes[0].type: expected at most 128 characters"));
}

TEST_F(FleetSpecTest, EchoedValuesAreShortAndEscaped) {
  // A name with a terminal escape and a long tail: shown escaped and cut at 64 characters.
  std::string e = Error("fleet: \"x\\e[2J" + std::string(200, 'y') +
                        "\"\nproject: demo-project\n"
                        "nodes: [{name: n, type: v4-8}]\n");
  EXPECT_TRUE(Contains(e, "fleet: \"x\\x1b[2Jyyy"));
  EXPECT_TRUE(Contains(e, "yyy...\" has a character"));
  EXPECT_EQ(e.find('\x1b'), std::string::npos);
  EXPECT_LT(e.size(), 300u);
  EXPECT_EQ(QuoteForMessage("a\"b\n"), "\"a\\\"b\\x0a\"");
}

TEST_F(FleetSpecTest, RefusesSecondDocument) {
  EXPECT_TRUE(Contains(Error(V4Node() + "---\nfleet: other\n"),
                       "fleet.yaml:6:1: a second YAML document starts here"));
}

// ---------------------------------------------------------------------------------------
// The single-value checks, as commands taking flags will call them.

TEST(FleetSpecChecks, HostAddresses) {
  EXPECT_TRUE(CheckHostAddress("gpu-1.lab.example.org").ok());
  EXPECT_TRUE(CheckHostAddress("192.168.1.20").ok());
  EXPECT_TRUE(CheckHostAddress("2001:db8::7").ok());
  EXPECT_FALSE(CheckHostAddress("").ok());
  EXPECT_FALSE(CheckHostAddress("a..b").ok());
  EXPECT_FALSE(CheckHostAddress("[2001:db8::7]").ok());
  EXPECT_FALSE(CheckHostAddress(std::string(64, 'a') + ".org").ok());
}

TEST(FleetSpecChecks, LabelKeysAndValues) {
  EXPECT_TRUE(CheckLabelKey("team").ok());
  EXPECT_TRUE(CheckLabelKey("a_b-1").ok());
  EXPECT_FALSE(CheckLabelKey("1team").ok());
  EXPECT_FALSE(CheckLabelKey(std::string(64, 'a')).ok());
  EXPECT_TRUE(CheckLabelValue("1").ok());
  EXPECT_FALSE(CheckLabelValue("").ok());
  EXPECT_FALSE(CheckLabelValue("a.b").ok());
}

TEST(FleetSpecChecks, Names) {
  EXPECT_EQ(ProviderName(Provider::kSshHosts), "ssh-hosts");
  EXPECT_EQ(CapacityName(Capacity::kOnDemand), "on-demand");
  EXPECT_EQ(DiskModeName(DiskMode::kReadWrite), "read-write");
  EXPECT_EQ(IdleActionName(IdleAction::kStop), "stop");
}

}  // namespace
}  // namespace tpufleet
