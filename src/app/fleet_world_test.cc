// FleetWorlds, tpufleet's world factory: a process that opens worlds for weeks (the
// reconciler, the server) keeps one provider per name and project for its App's life.
// Providers are counted through the factory's maker, not by memory.
#include "app/fleet_world.h"

#include <gtest/gtest.h>

#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "cli/app.h"
#include "core/fleet_spec.h"
#include "provider/gcp_tpu.h"
#include "provider/ssh_hosts.h"
#include "ssh/testing/temp_dir.h"
#include "store/store.h"
#include "util/testing/status_printer.h"

namespace tpufleet::app {
namespace {

// Worlds opened in a row, as a long-running process opens one per command: far more
// than a pool of one provider per (name, project) could hide.
constexpr int kOpens = 200;

// Counts the token sources the maker built that are still alive: one per provider.
class CountedTokens final : public TokenSource {
 public:
  explicit CountedTokens(int* alive) : alive_(alive) { ++*alive_; }
  ~CountedTokens() override { --*alive_; }
  Result<std::string> AccessToken() override { return std::string("test-token"); }
  std::string Describe() const override { return "test token"; }

 private:
  int* alive_;
};

class Issue11 : public ::testing::Test {
 protected:
  Issue11()
      : worlds_([this](const ProviderTarget& t,
                       const std::map<std::string, std::string>&) -> Result<PooledProvider> {
          ++made_;
          endpoints_.push_back(t.endpoint);
          PooledProvider p;
          p.tokens = std::make_unique<CountedTokens>(&alive_);
          // Any CloudProvider does: the test only looks at which instance it gets.
          p.provider = std::make_unique<SshHostsProvider>(std::vector<NodeSpec>{});
          return p;
        }),
        app_{cli::CliCommands(), worlds_.Factory()} {
    env_ = {{"TPUFLEET_STATE_DIR", dir_.path() + "/state"},
            {"HOME", dir_.path()},
            {"TPUFLEET_HOLDER", "off"},
            {"TPUFLEET_SSH_INCLUDE", "off"}};
  }

  // Opens a world as a command would, through the App's factory.
  std::unique_ptr<cli::WorldHandle> Open(bool exclusive,
                                         const std::map<std::string, std::string>& env) {
    cli::Invocation inv(app_, out_, err_, cli::Args{}, env);
    Result<std::unique_ptr<cli::WorldHandle>> h = cli::OpenWorld(inv, exclusive);
    EXPECT_TRUE(h.ok()) << h.status().message();
    return h.ok() ? std::move(*h) : nullptr;
  }

  static NodeRecord Record(const std::string& provider, const std::string& project) {
    NodeRecord r;
    r.fleet = "f";
    r.name = "n1";
    r.provider = provider;
    r.project = project;
    return r;
  }

  TempDir dir_;
  int made_ = 0;
  int alive_ = 0;
  std::vector<std::string> endpoints_;
  FleetWorlds worlds_;
  cli::App app_;
  std::map<std::string, std::string> env_;
  std::ostringstream out_, err_;
};

TEST_F(Issue11, OneAppOpeningManyWorldsBuildsOneProviderPerNameAndProject) {
  FleetSpec fleet;
  fleet.provider = Provider::kGcpTpu;
  fleet.project = "lab";
  CloudProvider* lab = nullptr;
  CloudProvider* other = nullptr;
  for (int i = 0; i < kOpens; ++i) {
    std::unique_ptr<cli::WorldHandle> h = Open(/*exclusive=*/i % 2 == 0, env_);
    ASSERT_NE(h, nullptr);
    ProviderSource& providers = h->world().providers;
    Result<CloudProvider*> by_fleet = providers.ForFleet(fleet);
    Result<CloudProvider*> by_record = providers.ForRecord(Record("gcp-tpu", "lab"));
    Result<CloudProvider*> by_other = providers.ForRecord(Record("gcp-tpu", "other"));
    ASSERT_TRUE(by_fleet.ok() && by_record.ok() && by_other.ok()) << by_fleet.status().message();
    if (i == 0) {
      lab = *by_fleet;
      other = *by_other;
    }
    EXPECT_EQ(*by_fleet, lab) << "open " << i;
    EXPECT_EQ(*by_record, lab) << "open " << i;
    EXPECT_EQ(*by_other, other) << "open " << i;
    // ssh-hosts providers hold the record's addresses and go with the world; asked
    // again for the same machines, the world answers with the same one.
    NodeRecord lab_server = Record("ssh-hosts", "");
    WorkerRecord w;
    w.address = "127.0.0.1";
    lab_server.workers.push_back(w);
    Result<CloudProvider*> server = providers.ForRecord(lab_server);
    ASSERT_TRUE(server.ok());
    for (int again = 0; again < 3; ++again) {
      EXPECT_EQ(*providers.ForRecord(lab_server), *server);
    }
    lab_server.workers[0].address = "127.0.0.2";
    EXPECT_NE(*providers.ForRecord(lab_server), *server);
  }
  EXPECT_NE(lab, other);
  EXPECT_EQ(made_, 2);  // one per (name, project), whatever the number of worlds
  EXPECT_EQ(worlds_.providers().built(), 2u);
  EXPECT_EQ(worlds_.providers().held(), 2u);
  EXPECT_EQ(alive_, 2);  // every world closed; the pool keeps exactly its two
  EXPECT_EQ(endpoints_, std::vector<std::string>(2, std::string(kTpuEndpoint)));
}

TEST_F(Issue11, AProviderWhoseEndpointChangedIsReplacedNotAdded) {
  std::map<std::string, std::string> moved = env_;
  moved["CLOUDSDK_API_ENDPOINT_OVERRIDES_TPU"] = "http://127.0.0.1:9/";
  std::unique_ptr<cli::WorldHandle> before = Open(false, env_);
  ASSERT_NE(before, nullptr);
  Result<CloudProvider*> old_provider =
      before->world().providers.ForRecord(Record("gcp-tpu", "lab"));
  ASSERT_TRUE(old_provider.ok());
  for (int i = 0; i < kOpens; ++i) {
    std::unique_ptr<cli::WorldHandle> h = Open(false, moved);
    ASSERT_NE(h, nullptr);
    Result<CloudProvider*> p = h->world().providers.ForRecord(Record("gcp-tpu", "lab"));
    ASSERT_TRUE(p.ok()) << p.status().message();
    EXPECT_NE(*p, *old_provider);
  }
  EXPECT_EQ(made_, 2);
  EXPECT_EQ(worlds_.providers().held(), 1u);
  EXPECT_EQ(alive_, 2);  // the old one lives while the world that uses it is open
  before.reset();
  EXPECT_EQ(alive_, 1);
  EXPECT_EQ(endpoints_.back(), "http://127.0.0.1:9/");
}

TEST_F(Issue11, AnEmulatorFleetWithNoEmulatorRunningSaysSoAndBuildsNothing) {
  std::map<std::string, std::string> env = env_;
  env["TPUFLEET_EMULATOR_DIR"] = dir_.path() + "/no-emulator";
  std::unique_ptr<cli::WorldHandle> h = Open(false, env);
  ASSERT_NE(h, nullptr);
  Result<CloudProvider*> p = h->world().providers.ForRecord(Record("emulator", "lab"));
  ASSERT_FALSE(p.ok());
  EXPECT_EQ(p.status().code(), StatusCode::kFailedPrecondition) << p.status().message();
  EXPECT_NE(p.status().message().find("tpufleet emulator start"), std::string::npos);
  EXPECT_EQ(made_, 0);
  EXPECT_EQ(worlds_.providers().held(), 0u);
}

}  // namespace
}  // namespace tpufleet::app
