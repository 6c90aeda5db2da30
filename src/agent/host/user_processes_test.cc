// StopProcessesOf's refusals (the processes themselves are stopped in
// accounts_remove_test.cc, as root).
#include "agent/host/user_processes.h"

#include <unistd.h>

#include <gtest/gtest.h>

namespace tpufleet::agent::host {
namespace {

TEST(UserProcesses, RootAndTheAgentsOwnUidAreRefused) {
  HostPaths paths;
  EXPECT_EQ(StopProcessesOf(paths, 0).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(StopProcessesOf(paths, ::getuid()).status().code(), StatusCode::kInvalidArgument);
  EXPECT_GE(CountProcessesOf(paths, ::getuid()), 1);  // this test
}

}  // namespace
}  // namespace tpufleet::agent::host
