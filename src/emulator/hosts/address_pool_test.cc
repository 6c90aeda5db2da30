#include "emulator/hosts/address_pool.h"

#include <gtest/gtest.h>

namespace tpufleet::emulator::hosts {
namespace {

TEST(AddressPool, SlotsCutTheBenchmarkRange) {
  AddressPool p0(0);
  EXPECT_EQ(FormatIpv4(p0.network()), "198.18.0.0");
  EXPECT_EQ(FormatIpv4(p0.gateway()), "198.18.0.1");
  EXPECT_EQ(p0.prefix_length(), 18);
  AddressPool p7(7);
  EXPECT_EQ(FormatIpv4(p7.network()), "198.19.192.0");
}

TEST(AddressPool, SkipsZeroAnd255AndNeverRepeatsAtOnce) {
  AddressPool p(0);
  std::vector<std::string> got;
  for (int i = 0; i < 260; ++i) {
    Result<uint32_t> a = p.Allocate();
    ASSERT_TRUE(a.ok());
    got.push_back(FormatIpv4(*a));
  }
  EXPECT_EQ(got[0], "198.18.0.2");
  EXPECT_EQ(got[252], "198.18.0.254");
  EXPECT_EQ(got[253], "198.18.1.1");  // .255 and .0 skipped
  // A released address is not handed out again right away.
  AddressPool q(0);
  uint32_t a = *q.Allocate();
  q.Release(a);
  EXPECT_NE(*q.Allocate(), a);
}

TEST(AddressPool, FullSlotIsAnError) {
  AddressPool p(1);
  int n = 0;
  while (p.Allocate().ok()) {
    ++n;
  }
  // 16384 addresses less network, bridge, broadcast and the .0/.255 of 64 /24s.
  EXPECT_EQ(n, 16384 - 3 - (64 * 2 - 2));
  EXPECT_EQ(p.Allocate().status().code(), StatusCode::kFailedPrecondition);
}

}  // namespace
}  // namespace tpufleet::emulator::hosts
