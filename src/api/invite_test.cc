// The invite file and GET /v1/hosts's answer: what tpufleet writes reads back, and each
// way a file can be wrong (hand-edited, cut short, another version) is one message.
#include "api/invite.h"

#include <gtest/gtest.h>

namespace tpufleet::api {
namespace {

const Invite kInvite{"https://lab.example:8471", "SHA256:" + std::string(43, 'A'), "milo",
                     "tpufleet-person-abc_DEF-123"};

std::string WithField(const std::string& field, const std::string& value_json) {
  std::string text = ToJson(kInvite);
  size_t at = text.find("\"" + field + "\": ");
  size_t end = text.find_first_of(",\n", at);
  return text.substr(0, at) + "\"" + field + "\": " + value_json + text.substr(end);
}

TEST(Invite, RoundTrips) {
  Result<Invite> back = ParseInvite(ToJson(kInvite));
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(back->server, kInvite.server);
  EXPECT_EQ(back->fingerprint, kInvite.fingerprint);
  EXPECT_EQ(back->person, kInvite.person);
  EXPECT_EQ(back->token, kInvite.token);
  EXPECT_NE(ToJson(kInvite).find("\"tpufleet_invite\": 1"), std::string::npos);
}

TEST(Invite, EachWrongFieldIsNamed) {
  struct Case {
    std::string text;
    std::string says;
  };
  std::vector<Case> cases = {
      {"", "not a tpufleet invite"},
      {"{\"server\": \"https://x\"}", "not a tpufleet invite"},
      {ToJson(kInvite).substr(0, 40), "not a tpufleet invite"},
      {WithField("tpufleet_invite", "2"), "another format version"},
      {WithField("server", "\"http://lab.example:8471\""), "\"server\" is not an https:// URL"},
      {WithField("server", "7"), "\"server\" is not an https:// URL"},
      {WithField("fingerprint", "\"SHA256:short\""), "\"fingerprint\" is not"},
      {WithField("person", "\"root\""), "\"person\" is not"},
      {WithField("person", "\"Milo Smith\""), "\"person\" is not"},
      {WithField("token", "\"\""), "\"token\" is not a token"},
      {WithField("token", "\"tok en\""), "\"token\" is not a token"},
      {std::string(kMaxInviteBytes + 1, ' '), "larger than an invite file"},
  };
  for (const Case& c : cases) {
    Result<Invite> r = ParseInvite(c.text);
    ASSERT_EQ(r.status().code(), StatusCode::kInvalidArgument) << c.text;
    EXPECT_NE(r.status().message().find(c.says), std::string::npos)
        << c.text << " -> " << r.status().message();
  }
}

TEST(WorkerHosts, RoundTripAndRefuseWhatIsNotOne) {
  std::vector<WorkerHost> hosts = {{"lab", "pod", 0, "198.18.0.7", 22, "ssh-ed25519 AAAA"},
                                   {"lab", "pod", 1, "198.18.0.8", 2222, ""}};
  Result<std::vector<WorkerHost>> back = ParseWorkerHosts(ToJson(hosts));
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  ASSERT_EQ(back->size(), 2u);
  EXPECT_EQ((*back)[1].worker, 1);
  EXPECT_EQ((*back)[1].port, 2222);
  EXPECT_EQ((*back)[0].host_key, "ssh-ed25519 AAAA");
  EXPECT_EQ((*back)[0].address, "198.18.0.7");
  for (const char* bad : {"", "[]", "{\"hosts\": {}}", "{\"hosts\": [{\"node\": \"pod\"}]}",
                          "{\"hosts\": [{\"node\": \"pod\", \"worker\": \"0\", \"port\": 22, "
                          "\"address\": \"a\"}]}",
                          "{\"hosts\": [{\"worker\": 0, \"port\": 22, \"address\": \"a\"}]}"}) {
    EXPECT_EQ(ParseWorkerHosts(bad).status().code(), StatusCode::kInvalidArgument) << bad;
  }
}

}  // namespace
}  // namespace tpufleet::api
