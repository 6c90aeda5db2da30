// The worker's minimal service manager, without a worker: reading units (a real
// directory in a temp dir). Starting and restarting them is in the system tests.
#include "emulator/hosts/boot_units.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>

#include "util/file.h"

namespace tpufleet::emulator::hosts {
namespace {

namespace fs = std::filesystem;

TEST(BootUnits, ExecStartIsTheLastOfTheServiceSection) {
  Result<std::vector<std::string>> argv = ParseExecStart(
      "[Unit]\nDescription=x\nExecStart=/wrong\n\n[Service]\n# comment\nExecStart=/bin/false\n"
      "ExecStart=\nExecStart = /usr/local/bin/tpufleet-agent  serve\t--quiet\nRestart=always\n"
      "[Install]\nWantedBy=multi-user.target\n");
  ASSERT_TRUE(argv.ok()) << argv.status().ToString();
  EXPECT_EQ(*argv, (std::vector<std::string>{"/usr/local/bin/tpufleet-agent", "serve", "--quiet"}));
}

TEST(BootUnits, WhatCannotBeStartedSaysWhy) {
  EXPECT_EQ(ParseExecStart("[Service]\nType=oneshot\n").status().message(),
            "no ExecStart= in its [Service] section");
  EXPECT_EQ(ParseExecStart("[Service]\nExecStart=-/bin/true\n").status().message(),
            "ExecStart=-/bin/true: the program must be an absolute path (prefixes such as - or @ "
            "are not supported here)");
}

TEST(BootUnits, EveryEnabledServiceByName) {
  std::string root = testing::TempDir() + "/units_" + std::to_string(::getpid());
  fs::remove_all(root);
  std::string wants = root + "/multi-user.target.wants";
  fs::create_directories(wants);
  ASSERT_TRUE(WriteFileAtomic(root + "/b.service", "[Service]\nExecStart=/bin/b\n").ok());
  fs::create_symlink(root + "/b.service", wants + "/b.service");
  ASSERT_TRUE(WriteFileAtomic(wants + "/a.service", "[Service]\nExecStart=/bin/a x\n").ok());
  ASSERT_TRUE(WriteFileAtomic(wants + "/c.service", "[Service]\nExecStart=c\n").ok());
  ASSERT_TRUE(WriteFileAtomic(wants + "/d.timer", "[Timer]\n").ok());
  fs::create_symlink(root + "/gone.service", wants + "/e.service");
  std::vector<std::string> skipped;
  std::vector<BootUnit> units = FindBootUnits(wants, wants, &skipped);
  ASSERT_EQ(units.size(), 2u);
  EXPECT_EQ(units[0].name, "a.service");
  EXPECT_EQ(units[0].argv, (std::vector<std::string>{"/bin/a", "x"}));
  EXPECT_EQ(units[1].name, "b.service");
  ASSERT_EQ(skipped.size(), 2u);
  EXPECT_EQ(skipped[0].rfind("c.service: ExecStart=c: the program must be", 0), 0u) << skipped[0];
  EXPECT_EQ(skipped[1].rfind("e.service: ", 0), 0u) << skipped[1];
  // Only what was enabled here counts.
  std::string upper = root + "/upper-wants";
  fs::create_directories(upper);
  ASSERT_TRUE(WriteFileAtomic(upper + "/b.service", "").ok());
  ASSERT_TRUE(WriteFileAtomic(upper + "/disabled.service", "").ok());
  units = FindBootUnits(wants, upper, &skipped);
  ASSERT_EQ(units.size(), 1u);
  EXPECT_EQ(units[0].name, "b.service");
  EXPECT_EQ(skipped.size(), 2u);
  fs::remove_all(root);
}

}  // namespace
}  // namespace tpufleet::emulator::hosts
