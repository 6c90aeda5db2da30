// The ssh config a collaborator's own ssh gets for a team server's workers
// (DirectServerSshEntries): made from the server's answer alone: their name, no key of
// tpufleet's, each host key pinned under the worker's name, none for a worker the
// server has no key of (so ssh refuses it: nothing is trusted on first use).
#include "control/server_ssh.h"

#include <gtest/gtest.h>

#include "ssh/ssh_files.h"

namespace tpufleet {
namespace {

constexpr const char* kKey0 =
    "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIB69SJ1+y4FfrZCv79wrUAU/rEiOSE8nvmwomH7/5h77";
constexpr const char* kKey1 =
    "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIGv4Kf7lOKbdmTbWAt0xwmYbVgYQn0VxXDpSVl3jj9jv";

std::vector<api::WorkerHost> PodHosts() {
  return {{"lab", "pod", 0, "198.18.0.7", 2222, kKey0},
          {"lab", "pod", 1, "198.18.0.8", 2222, kKey1},
          {"lab", "fresh", 0, "198.18.0.9", 22, ""}};
}

TEST(ServerSshFiles, TheConfigHasTheirNameTheServersKeysAndNoKeyOfTpufleets) {
  std::vector<SshHostEntry> entries = DirectServerSshEntries("milo", PodHosts());
  Result<std::string> config = RenderSshConfig(entries, "/tmp/d/known_hosts");
  ASSERT_TRUE(config.ok()) << config.status().message();
  for (const std::string& line :
       {std::string("Host pod-w1\n  HostName 198.18.0.8\n  Port 2222\n  User milo\n  HostKeyAlias pod-w1\n"
        "  UserKnownHostsFile /tmp/d/known_hosts\n  StrictHostKeyChecking yes\n"),
        std::string("Host pod\n  HostName 198.18.0.7\n")}) {
    EXPECT_NE(config->find(line), std::string::npos) << line << " in\n" << *config;
  }
  EXPECT_EQ(config->find("IdentityFile"), std::string::npos) << "their own keys";
  EXPECT_EQ(config->find("ProxyCommand"), std::string::npos) << "the answer is fresh";
  std::string known = RenderKnownHosts(entries);
  EXPECT_NE(known.find(std::string("\npod-w1 ") + kKey1 + "\n"), std::string::npos) << known;
  EXPECT_NE(known.find(std::string("\npod ") + kKey0 + "\n"), std::string::npos) << known;
  // A worker the server knows no key of gets none: ssh refuses it (never first use).
  EXPECT_EQ(known.find("fresh"), std::string::npos) << known;
  // Without a join, no User: ssh's own default, the local user.
  Result<std::string> anonymous = RenderSshConfig(DirectServerSshEntries("", PodHosts()), "/k");
  ASSERT_TRUE(anonymous.ok());
  EXPECT_EQ(anonymous->find("  User "), std::string::npos) << *anonymous;
}

}  // namespace
}  // namespace tpufleet
