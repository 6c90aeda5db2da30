#include "emulator/hosts/guest_agent.h"

#include <gtest/gtest.h>

namespace tpufleet::emulator::hosts {
namespace {

TEST(GuestAgent, ProjectKeysFollowInstanceKeysUnlessBlockedAsGooglesAgentDoes) {
  std::map<std::string, std::string> project = {{"ssh-keys", "p:ssh-ed25519 PPPP p"},
                                                {"sshKeys", "q:ssh-ed25519 QQQQ q"}};
  EXPECT_EQ(MetadataSshKeys({{"ssh-keys", "i:ssh-ed25519 IIII i"}}, project),
            "i:ssh-ed25519 IIII i\np:ssh-ed25519 PPPP p\nq:ssh-ed25519 QQQQ q");
  EXPECT_EQ(MetadataSshKeys({}, project), "p:ssh-ed25519 PPPP p\nq:ssh-ed25519 QQQQ q");
  for (const char* yes : {"TRUE", "true", "True", "t", "T", "1"}) {
    EXPECT_EQ(MetadataSshKeys({{"block-project-ssh-keys", yes}}, project), "") << yes;
  }
  for (const char* no : {"FALSE", "false", "0", "yes", ""}) {
    EXPECT_NE(MetadataSshKeys({{"block-project-ssh-keys", no}}, project), "") << no;
  }
  // A legacy instance-level sshKeys blocks the project's keys too.
  EXPECT_EQ(MetadataSshKeys({{"sshKeys", "o:ssh-ed25519 OOOO o"}}, project), "o:ssh-ed25519 OOOO o");
  // OS Login is not emulated: keys still apply.
  EXPECT_EQ(MetadataSshKeys({{"enable-oslogin", "TRUE"}}, project),
            "p:ssh-ed25519 PPPP p\nq:ssh-ed25519 QQQQ q");
}

// A worker's /etc starts as a view of the machine's. Its login accounts (the machine
// owner's "alice") used to stay, and the agent then gave keys to that foreign account.
TEST(GuestAgentRegression, MachineLoginsAreForgotten) {
  AccountFiles in;
  in.passwd =
      "root:x:0:0:root:/root:/bin/bash\n"
      "daemon:x:1:1:daemon:/usr/sbin:/usr/sbin/nologin\n"
      "alice:x:1000:1000:Alice:/home/alice:/bin/bash\n"
      "svc:x:1001:1001::/srv/svc:/bin/sh\n"
      "tpu:x:1002:1002::/home/tpu:/bin/bash\n"
      "nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n"
      "+::::::\n";
  in.shadow =
      "root:$y$roothash:19000:0:99999:7:::\n"
      "daemon:!$y$lockedhash:19000:0:99999:7:::\n"
      "alice:$y$hash:19000:0:99999:7:::\n"
      "svc:!:19000::::::\n"
      "tpu:*:19000::::::\n"
      "nobody:*:19000:0:99999:7:::\n";
  in.group =
      "root:x:0:\n"
      "sudo:x:27:alice,tpu\n"
      "alice:x:1000:\n"
      "svc:x:1001:\n"
      "tpu:x:1002:\n"
      "google-sudoers:x:1003:alice,svc,tpu\n"
      "nogroup:x:65534:\n";
  in.gshadow =
      "root:$y$grouphash::\n"
      "sudo:*:alice:alice,tpu\n"
      "alice:!::\n"
      "svc:!::\n"
      "tpu:!::\n"
      "google-sudoers:!::alice,svc,tpu\n"
      "nogroup:*::\n";
  // tpu is one the agent made on this worker before: it stays.
  AccountFiles out = WithoutMachineLogins(in, {"tpu"});
  EXPECT_EQ(out.passwd,
            "root:x:0:0:root:/root:/bin/bash\n"
            "daemon:x:1:1:daemon:/usr/sbin:/usr/sbin/nologin\n"
            "tpu:x:1002:1002::/home/tpu:/bin/bash\n"
            "nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n"
            "+::::::\n");
  EXPECT_EQ(out.shadow,
            "root:*:19000:0:99999:7:::\n"
            "daemon:!:19000:0:99999:7:::\n"
            "tpu:*:19000::::::\n"
            "nobody:*:19000:0:99999:7:::\n");
  EXPECT_EQ(out.group,
            "root:x:0:\n"
            "sudo:x:27:tpu\n"
            "tpu:x:1002:\n"
            "google-sudoers:x:1003:tpu\n"
            "nogroup:x:65534:\n");
  EXPECT_EQ(out.gshadow,
            "root:*::\n"
            "sudo:*::tpu\n"
            "tpu:!::\n"
            "google-sudoers:!::tpu\n"
            "nogroup:*::\n");
  // Nothing to forget: unchanged, byte for byte.
  AccountFiles again = WithoutMachineLogins(out, {"tpu"});
  EXPECT_EQ(again.passwd, out.passwd);
  EXPECT_EQ(again.shadow, out.shadow);
  EXPECT_EQ(again.group, out.group);
  EXPECT_EQ(again.gshadow, out.gshadow);
}

TEST(GuestAgentRegression, SystemGroupsNamedLikeALoginStay) {
  AccountFiles in;
  in.passwd = "staff:x:1500:50::/home/staff:/bin/bash\n";
  in.group = "staff:x:50:staff\nusers:x:100:staff\n";
  AccountFiles out = WithoutMachineLogins(in, {});
  EXPECT_EQ(out.passwd, "");
  EXPECT_EQ(out.group, "staff:x:50:\nusers:x:100:\n");
}

}  // namespace
}  // namespace tpufleet::emulator::hosts
