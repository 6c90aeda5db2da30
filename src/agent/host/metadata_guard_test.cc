#include "agent/host/metadata_guard.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include "agent/host/system_programs.h"
#include "agent/host/testing/loopback_http.h"
#include "agent/host/plain_http.h"
#include "util/file.h"
#include "util/subprocess.h"
#include "util/testing/temp_dir.h"

namespace tpufleet::agent::host {
namespace {

constexpr const char* kPasswd =
    "root:x:0:0:root:/root:/bin/bash\n"
    "milo:x:1001:1001::/home/milo:/bin/bash\n"
    "ada:x:1002:1002::/home/ada:/bin/bash\n"
    "old:x:1003:1003::/home/old:/bin/bash\n"
    "agent:x:999:999::/var/lib/agent:/bin/false\n"
    "zed:x:1000:1000::/home/zed:/bin/bash\n";

TEST(MetadataGuard, GuardsTheListedUsersWithoutSudoAndTheRemovedOnes) {
  std::vector<AccountSpec> users = {{"milo", {}, false}, {"ada", {}, true},   {"root", {}, false},
                                    {"agent", {}, false}, {"ghost", {}, false}, {"zed", {}, false}};
  std::vector<AccountResult> results = {{"milo", "created", "", ""}, {"old", "removed", "", ""},
                                        {"ada", "revoked", "", ""}};
  std::vector<GuardedAccount> got = GuardedAccounts(users, results, ParsePasswd(kPasswd), 999);
  // ada is listed with sudo but taken away too (users remove); root and the agent are
  // never guarded; ghost has no account (yet).
  EXPECT_EQ(got, (std::vector<GuardedAccount>{
                     {"zed", 1000}, {"milo", 1001}, {"ada", 1002}, {"old", 1003}}));
  users[0].sudo = true;  // milo promoted
  got = GuardedAccounts(users, {}, ParsePasswd(kPasswd), 999);
  EXPECT_EQ(got, (std::vector<GuardedAccount>{{"zed", 1000}}));
  EXPECT_TRUE(GuardedAccounts({{"ada", {}, true}}, {}, ParsePasswd(kPasswd), 999).empty());
}

TEST(MetadataGuard, AddressesAreTheFixedOnesAndWhatEtcHostsSays) {
  MetadataAddresses a = MetadataAddressesIn(
      "127.0.0.1 localhost\n169.254.169.254\tmetadata.google.internal metadata  # GCE\n"
      "10.1.2.3 Metadata\nfd20:ce::254 metadata.google.internal\n2001:db8::1 metadata\n"
      "# 10.9.9.9 metadata\n10.4.4.4 other metadata-not\nbogus metadata\n");
  EXPECT_EQ(a.ipv4, (std::vector<std::string>{"169.254.169.254", "10.1.2.3"}));
  EXPECT_EQ(a.ipv6, (std::vector<std::string>{"fd20:ce::254", "2001:db8::1"}));
}

TEST(MetadataGuard, TheRulesetReplacesItsOwnTableWhole) {
  EXPECT_EQ(GuardRuleset({}, MetadataAddressesIn(""), 4321),
            "table inet tpufleet_metadata\ndelete table inet tpufleet_metadata\n");
  EXPECT_EQ(GuardRuleset({{"milo", 1001}, {"old", 1003}}, MetadataAddressesIn(""), 4321),
            "table inet tpufleet_metadata\n"
            "delete table inet tpufleet_metadata\n"
            "table inet tpufleet_metadata {\n"
            "\tset guarded_uids {\n\t\ttype uid\n\t\telements = { 1001, 1003 }\n\t}\n"
            "\tset metadata_ipv4 {\n\t\ttype ipv4_addr\n\t\telements = { 169.254.169.254 }\n\t}\n"
            "\tset metadata_ipv6 {\n\t\ttype ipv6_addr\n\t\telements = { fd20:ce::254 }\n\t}\n"
            "\tchain to_proxy {\n"
            "\t\ttype nat hook output priority -100; policy accept;\n"
            "\t\tmeta skuid @guarded_uids ip daddr @metadata_ipv4 tcp dport 80 redirect to :4321\n"
            "\t}\n"
            "\tchain elsewhere {\n"
            "\t\ttype filter hook output priority 0; policy accept;\n"
            "\t\tmeta skuid @guarded_uids ip daddr @metadata_ipv4 tcp dport != 53 reject with "
            "tcp reset\n"
            "\t\tmeta skuid @guarded_uids ip6 daddr @metadata_ipv6 tcp dport != 53 reject with "
            "tcp reset\n"
            "\t}\n"
            "}\n");
}

// The real nft takes the ruleset, in a network namespace of the test's own.
TEST(MetadataGuard, NftTakesTheRuleset) {
  std::string nft = FindSystemProgram("nft");
  std::string unshare = FindSystemProgram("unshare");
  if (geteuid() != 0 || nft.empty() || unshare.empty()) {
    GTEST_SKIP() << "needs root, nft (nftables) and unshare, for a network namespace";
  }
  std::string script =
      GuardRuleset({{"milo", 1001}}, MetadataAddressesIn("10.1.2.3 metadata\n"), 4321);
  Result<ProgramResult> r =
      RunSubprocess({unshare, "--net", "/bin/sh", "-c",
                     nft + " -f - && " + nft + " list table inet tpufleet_metadata && " + nft +
                         " -f - <<'EOF'\n" +
                         GuardRuleset({}, MetadataAddressesIn(""), 4321) + "EOF\n" + nft +
                         " list ruleset"},
                    script, std::chrono::seconds(20), SpawnOptions{});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->exit_code, 0) << r->output;
  EXPECT_NE(r->output.find("meta skuid @guarded_uids ip daddr @metadata_ipv4 tcp dport 80 "
                           "redirect to :4321"),
            std::string::npos)
      << r->output;
  EXPECT_NE(r->output.find("elements = { 10.1.2.3, 169.254.169.254 }"), std::string::npos)
      << r->output;
  // Deleted: the listing after the empty ruleset has no table.
  EXPECT_EQ(r->output.rfind("tpufleet_metadata {"), r->output.find("tpufleet_metadata {"))
      << r->output;
}

// A stand-in nft: records its stdin, and fails when told to.
class GuardWithStandIn : public ::testing::Test {
 protected:
  void SetUp() override {
    nft_ = dir_.Write("nft", "#!/bin/sh\ncat >>" + dir_.Path("rules") +
                                 "\n[ -e " + dir_.Path("fail") +
                                 " ] && { echo 'Error: Could not process rule'; exit 1; }\n"
                                 "exit 0\n");
    ::chmod(nft_.c_str(), 0755);
    host_.state = dir_.path();
    host_.etc = dir_.Path("etc");
  }
  std::string Rules() {
    Result<std::string> r = ReadFile(dir_.Path("rules"));
    return r.ok() ? *r : "";
  }
  TempDir dir_;
  std::string nft_;
  HostPaths host_;
  PlainHttpClient http_;
};

TEST_F(GuardWithStandIn, SavesWhomItGuardsAndPutsItBackAtStart) {
  MetadataGuard guard(host_, {nft_, ""}, "http://127.0.0.1:1", http_);
  guard.set_proxy_port(4000);
  // Never guarded: an empty apply runs no nft.
  EXPECT_EQ(guard.Apply({}).detail, "no account without sudo: nothing to guard");
  EXPECT_EQ(Rules(), "");
  const GuardState& s = guard.Apply({{"milo", 1001}});
  EXPECT_TRUE(s.active);
  EXPECT_EQ(s.error, "");
  EXPECT_EQ(s.users, std::vector<std::string>{"milo"});
  EXPECT_NE(Rules().find("redirect to :4000"), std::string::npos) << Rules();
  Result<std::string> saved = ReadFile(dir_.Path(kGuardFile));
  ASSERT_TRUE(saved.ok());
  EXPECT_EQ(*saved, "milo 1001\n");
  struct stat st{};
  ASSERT_EQ(::stat(dir_.Path(kGuardFile).c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);

  // The next serve: another port, the same accounts.
  MetadataGuard again(host_, {nft_, ""}, "http://127.0.0.1:1", http_);
  again.set_proxy_port(4001);
  EXPECT_TRUE(again.Restore().active);
  EXPECT_NE(Rules().find("redirect to :4001"), std::string::npos) << Rules();

  // Nobody left: the table and the list go.
  EXPECT_FALSE(again.Apply({}).active);
  EXPECT_EQ(::access(dir_.Path(kGuardFile).c_str(), F_OK), -1);
  EXPECT_NE(Rules().rfind("delete table inet tpufleet_metadata\n"), std::string::npos);
}

TEST_F(GuardWithStandIn, AFailingNftIsAnErrorThatNamesWhoIsNotGuarded) {
  dir_.Write("fail", "");
  MetadataGuard guard(host_, {nft_, ""}, "http://127.0.0.1:1", http_);
  const GuardState& s = guard.Apply({{"milo", 1001}, {"bob", 1002}});
  EXPECT_FALSE(s.active);
  EXPECT_EQ(s.error,
            "nft could not keep the metadata server's token from milo, bob: Error: Could not "
            "process rule");
}

TEST_F(GuardWithStandIn, WithoutNftAndIptablesOnlyAHostWithoutAMetadataServerIsLeftUnguarded) {
  testing::LoopbackHttpServer metadata(
      [](const testing::LoopbackRequest&) { return std::pair{200, std::string("computeMetadata/\n")}; });
  const GuardPrograms neither{dir_.Path("no-nft-here"), dir_.Path("iptables")};
  MetadataGuard with_server(host_, neither, "http://" + metadata.address(), http_);
  EXPECT_EQ(with_server.Apply({{"milo", 1001}}).error,
            "neither nft nor iptables is installed, so the metadata server's token cannot be "
            "kept from milo (install one: sudo apt-get install -y nftables)");
  // A lab machine: nothing answers at the metadata address.
  MetadataGuard without(host_, neither, "http://127.0.0.1:1", http_);
  const GuardState& s = without.Apply({{"milo", 1001}});
  EXPECT_EQ(s.error, "");
  EXPECT_FALSE(s.active);
  EXPECT_EQ(s.detail, "no metadata server answers here: nothing to guard");
}

}  // namespace
}  // namespace tpufleet::agent::host
