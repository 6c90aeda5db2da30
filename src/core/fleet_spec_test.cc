#include "core/fleet_spec.h"

#include <gtest/gtest.h>

#include <string>

#include "core/testing/fleet_spec_fixture.h"
#include "util/testing/text_cases.h"

// In the fixture's namespace: its keys and helpers need no using-declarations.
namespace tpufleet::testing {
namespace {

using std::chrono::hours;
using std::chrono::seconds;

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
  EXPECT_TRUE(FailsWith(Head() + "  - name: trainer\n   type: v4-32\n",
                        {"fleet.yaml:5:4: not valid YAML", "indentation"}));
}

TEST_F(FleetSpecTest, EmptyFile) {
  EXPECT_TRUE(Contains(Error("# nothing here\n"), "fleet.yaml: the file is empty"));
}

TEST_F(FleetSpecTest, RootMustBeAMapping) {
  EXPECT_TRUE(Contains(Error("- a\n- b\n"), "fleet.yaml:1:1: expected a mapping of fields"));
}

TEST_F(FleetSpecTest, UnknownTopLevelFieldSuggestsNearest) {
  EXPECT_TRUE(FailsWith("fleet: demo\nproject: demo-project\nnodse: []\n",
                        {"fleet.yaml:3:1: nodse: unknown field (did you mean nodes?)"}));
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
  EXPECT_TRUE(FailsWith(Head() + "  - name: trainer\n    type: v4_32\n",
                        {"fleet.yaml:5:11: nodes[0].type: unknown accelerator type \"v4_32\"",
                         "did you mean v4-32"}));
}

TEST_F(FleetSpecTest, TypeWithSizeThatDoesNotExist) {
  EXPECT_TRUE(FailsWith(Head() + "  - name: trainer\n    type: v4-48\n",
                        {"fleet.yaml:5:11: nodes[0].type: \"v4-48\" is not a v4 slice size",
                         "nearest: v4-32, v4-64"}));
}

TEST_F(FleetSpecTest, ZoneThatDoesNotOfferTheType) {
  EXPECT_TRUE(FailsWith(V4Node("    zones: [us-central2-b, us-central1-a]\n"),
                        {"fleet.yaml:6:28: nodes[0].zones[1]: zone us-central1-a does not "
                         "offer v4 (did you mean us-central2-b?)",
                         "v4 is offered in us-central2-b", "--catalog"}));
}

TEST_F(FleetSpecTest, MisspelledZone) {
  EXPECT_TRUE(FailsWith(V4Node("    zones: [us-central-2b]\n"),
                        {"nodes[0].zones[0]: unknown zone \"us-central-2b\" (did you mean "
                         "us-central2-b?)"}));
}

TEST_F(FleetSpecTest, ZoneListedTwiceOrEmpty) {
  ExpectNodeErrors({
      {"    zones: [us-central2-b, us-central2-b]\n",
       "nodes[0].zones[1]: us-central2-b is listed twice"},
      {"    zones: []\n", "fleet.yaml:6:12: nodes[0].zones: expected at least one zone"},
  });
}

TEST_F(FleetSpecTest, RuntimeVersionNotValidForFamily) {
  EXPECT_TRUE(FailsWith(V4Node("    runtime_version: tpu-vm-v4-bse\n"),
                        {"fleet.yaml:6:22: nodes[0].runtime_version: runtime version "
                         "\"tpu-vm-v4-bse\" is not known for v4 (did you mean tpu-vm-v4-base",
                         "v4 runtime versions: tpu-ubuntu2204-base, ", "--catalog FILE"}));
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

TEST_F(FleetSpecTest, MonitoringPrometheusPort) {
  auto with = [](const std::string& monitoring) {
    return "fleet: demo\nproject: demo-project\nmonitoring: " + monitoring +
           "\nnodes: [{name: n, type: v4-8}]\n";
  };
  Result<FleetSpec> r = Parse(with("{prometheus_port: 9100}"));
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->monitoring.prometheus_port, 9100);
  r = Parse("fleet: demo\nproject: demo-project\nnodes: [{name: n, type: v4-8}]\n");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->monitoring.prometheus_port, 0);  // off unless asked for
  EXPECT_TRUE(Parse(with("{prometheus_port: 1024}")).ok());
  EXPECT_TRUE(Parse(with("{prometheus_port: 65535}")).ok());
  EXPECT_TRUE(Contains(Error(with("{prometheus_port: 80}")),
                       "fleet.yaml:3:31: monitoring.prometheus_port: expected a TCP port from "
                       "1024 to 65535 (9100 is Prometheus' usual), found 80"));
  EXPECT_TRUE(Contains(Error(with("{prometheus_port: 65536}")), "from 1024 to 65535"));
  EXPECT_TRUE(Contains(Error(with("{prometheus_port: web}")), "monitoring.prometheus_port: "));
  EXPECT_TRUE(Contains(Error(with("{}")),
                       "fleet.yaml:3:13: monitoring.prometheus_port: this field is required"));
  EXPECT_TRUE(Contains(Error(with("{prometheus: 9100}")),
                       "monitoring.prometheus: unknown field (did you mean prometheus_port?)"));
  EXPECT_TRUE(Contains(Error(with("9100")), "monitoring: expected a mapping of fields"));
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
  EXPECT_TRUE(
      FailsWith(bomb + "fleet: demo\n",
                {"with its aliases (*name) expanded, the spec grows past 8 MiB", "fleet.yaml:"}));
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
  EXPECT_TRUE(FailsWith(Head() + "  - name: n\n    type: " + std::string(100000, 'v') + "\n",
                        {"fleet.yaml:5:11: nodes[0].type: expected at most 128 characters"}));
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
  ExpectAcceptsOnly(CheckHostAddress, {"gpu-1.lab.example.org", "192.168.1.20", "2001:db8::7"},
                    {"", "a..b", "[2001:db8::7]", std::string(64, 'a') + ".org"});
}

TEST(FleetSpecChecks, LabelKeysAndValues) {
  ExpectAcceptsOnly(CheckLabelKey, {"team", "a_b-1"}, {"1team", std::string(64, 'a')});
  ExpectAcceptsOnly(CheckLabelValue, {"1"}, {"", "a.b"});
}

TEST(FleetSpecChecks, Names) {
  EXPECT_EQ(ProviderName(Provider::kSshHosts), "ssh-hosts");
  EXPECT_EQ(CapacityName(Capacity::kOnDemand), "on-demand");
  EXPECT_EQ(DiskModeName(DiskMode::kReadWrite), "read-write");
  EXPECT_EQ(IdleActionName(IdleAction::kStop), "stop");
}

}  // namespace
}  // namespace tpufleet::testing
