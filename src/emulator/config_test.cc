#include "emulator/config.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>

#include "emulator/token.h"
#include "util/file.h"

namespace tpufleet::emulator {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

class ConfigTest : public ::testing::Test {
 protected:
  ConfigTest() : catalog_(ParseCatalog(BuiltinCatalogYaml(), "built-in catalog").value()) {}
  Result<EmulatorConfig> Parse(const std::string& text, std::vector<std::string>* keys = nullptr) {
    return ParseEmulatorConfig(text, "emu.yaml", catalog_, keys);
  }
  Catalog catalog_;
};

TEST_F(ConfigTest, DefaultsAreFastAndOpen) {
  EmulatorConfig c;
  EXPECT_EQ(c.timings.create, milliseconds(1000));
  EXPECT_TRUE(c.projects.empty());
  EXPECT_TRUE(c.capacity.empty());
  EXPECT_TRUE(c.quota.empty());
  EXPECT_FALSE(c.auth.require_issued_tokens);
  EXPECT_GT(RealisticTimings().create, seconds(60));
}

TEST_F(ConfigTest, ParsesEveryField) {
  std::vector<std::string> keys;
  Result<EmulatorConfig> c = Parse(R"(
timings: {profile: realistic, create: 500ms, delete: 2s}
seed: 42
projects: [alpha, beta]
default_page_size: 10
max_page_size: 50
capacity:
  - {zone: us-central2-b, family: v4, chips: 64}
quota:
  - {region: us-central2, family: v4, chips: 32, tier: spot}
  - {region: us-east5, family: v6e, chips: 0}
auth:
  service_account_keys: [sa.json]
  authorized_users: [{client_id: a, client_secret: b, refresh_token: c}]
  require_issued_tokens: true
)",
                                   &keys);
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->timings.create, milliseconds(500));
  EXPECT_EQ(c->timings.remove, seconds(2));
  EXPECT_EQ(c->timings.start, RealisticTimings().start);
  EXPECT_EQ(c->seed, 42u);
  EXPECT_EQ(c->projects, (std::vector<std::string>{"alpha", "beta"}));
  EXPECT_EQ(c->default_page_size, 10);
  EXPECT_EQ(c->max_page_size, 50);
  ASSERT_EQ(c->capacity.size(), 1u);
  EXPECT_EQ(c->capacity[0].chips, 64);
  ASSERT_EQ(c->quota.size(), 2u);
  EXPECT_EQ(c->quota[0].tier, QuotaTier::kSpot);
  EXPECT_EQ(c->quota[1].tier, QuotaTier::kAny);
  EXPECT_EQ(c->quota[1].family, "v6e");
  EXPECT_EQ(keys, (std::vector<std::string>{"sa.json"}));
  ASSERT_EQ(c->auth.authorized_users.size(), 1u);
  EXPECT_EQ(c->auth.authorized_users[0].refresh_token, "c");
  EXPECT_TRUE(c->auth.require_issued_tokens);
}

TEST_F(ConfigTest, FamilyAliasesResolve) {
  Result<EmulatorConfig> c = Parse("capacity: [{zone: us-central1-a, family: v5e, chips: 8}]\n");
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->capacity[0].family, "v5litepod");
}

TEST_F(ConfigTest, ErrorsNameTheFileLineAndField) {
  Status s = Parse("capacity:\n  - {zone: z, family: v44, chips: 8}\n").status();
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("emu.yaml:2"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("did you mean v4"), std::string::npos) << s.message();
  for (const char* bad : {"timings: slow\n", "timings: {create: soon}\n", "colour: red\n",
                         "quota: [{region: r, family: v4, chips: -1}]\n",
                         "quota: [{region: r, family: v4, chips: 1, tier: cheap}]\n",
                         "default_page_size: 0\n"}) {
    EXPECT_FALSE(Parse(bad).ok()) << bad;
  }
}

TEST_F(ConfigTest, MaxMultisliceNodesIsBounded) {
  EXPECT_EQ(EmulatorConfig().max_multislice_nodes, 256);
  Result<EmulatorConfig> c = Parse("max_multislice_nodes: 8\n");
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->max_multislice_nodes, 8);
  EXPECT_FALSE(Parse("max_multislice_nodes: 1\n").ok());
  EXPECT_FALSE(Parse("max_multislice_nodes: 3000000\n").ok());
}

TEST_F(ConfigTest, LoadReadsServiceAccountKeysBesideTheFile) {
  std::string dir = ::testing::TempDir() + "emu-config-" + std::to_string(::getpid());
  std::filesystem::create_directories(dir);
  GeneratedServiceAccountKey key =
      GenerateServiceAccountKey("x@p.iam.gserviceaccount.com", "p", "t", 1024).value();
  ASSERT_TRUE(WriteFileAtomic(dir + "/sa.json", key.key_json, 0600).ok());
  ASSERT_TRUE(WriteFileAtomic(dir + "/pub.pem", key.accepted.public_key_pem).ok());
  ASSERT_TRUE(WriteFileAtomic(dir + "/emu.yaml",
                              "auth: {service_account_keys: [sa.json, " + dir + "/pub.pem]}\n")
                  .ok());
  Result<EmulatorConfig> c = LoadEmulatorConfig(dir + "/emu.yaml", catalog_);
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  ASSERT_EQ(c->auth.service_account_keys.size(), 2u);
  EXPECT_EQ(c->auth.service_account_keys[0].client_email, "x@p.iam.gserviceaccount.com");
  EXPECT_EQ(c->auth.service_account_keys[0].key_id, key.accepted.key_id);
  EXPECT_EQ(c->auth.service_account_keys[0].public_key_pem, key.accepted.public_key_pem);
  EXPECT_EQ(c->auth.service_account_keys[1].public_key_pem, key.accepted.public_key_pem);
  EXPECT_TRUE(c->auth.service_account_keys[1].client_email.empty());

  ASSERT_TRUE(
      WriteFileAtomic(dir + "/bad.yaml", "auth: {service_account_keys: [missing.json]}\n").ok());
  EXPECT_EQ(LoadEmulatorConfig(dir + "/bad.yaml", catalog_).status().code(), StatusCode::kNotFound);
  EXPECT_FALSE(ParseServiceAccountKey("{}", "k.json").ok());
  EXPECT_FALSE(ParseServiceAccountKey("hello", "k.json").ok());
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace tpufleet::emulator
