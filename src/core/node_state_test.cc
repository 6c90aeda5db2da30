#include "core/node_state.h"

#include <gtest/gtest.h>

#include <vector>

namespace tpufleet {
namespace {

// Every Value but kUnknown.
std::vector<NodeState> AllNamed() {
  std::vector<NodeState> out;
  for (int v = NodeState::kNone; v < NodeState::kUnknown; ++v) {
    out.emplace_back(static_cast<NodeState::Value>(v));
  }
  return out;
}

TEST(NodeStateTest, EveryNamedStateRoundTripsThroughItsWireName) {
  for (const NodeState& s : AllNamed()) {
    EXPECT_EQ(NodeState::Parse(s.Name()), s) << s.Name();
    EXPECT_NE(s.value(), NodeState::kUnknown);
  }
}

TEST(NodeStateTest, ParsesTheApisSpellings) {
  EXPECT_EQ(NodeState::Parse("READY"), NodeState::kReady);
  EXPECT_EQ(NodeState::Parse("PREEMPTED"), NodeState::kPreempted);
  EXPECT_EQ(NodeState::Parse("WAITING_FOR_RESOURCES"), NodeState::kWaitingForResources);
  EXPECT_EQ(NodeState::Parse("CREATING"), NodeState::kCreating);  // node and queued resource
  EXPECT_EQ(NodeState::Parse(""), NodeState::kNone);
}

TEST(NodeStateTest, UnknownTextIsKeptForDisplay) {
  NodeState s = NodeState::Parse("MIGRATING");
  EXPECT_EQ(s.value(), NodeState::kUnknown);
  EXPECT_EQ(s.Name(), "MIGRATING");
  EXPECT_NE(s, NodeState::Parse("OTHER"));
  EXPECT_EQ(s, NodeState::Parse("MIGRATING"));
  // The API's own UNKNOWN (after a failed repair) is no state tpufleet can act on either.
  EXPECT_EQ(NodeState::Parse("UNKNOWN").value(), NodeState::kUnknown);
  EXPECT_EQ(NodeState::Parse("UNKNOWN").Name(), "UNKNOWN");
  EXPECT_TRUE(s.IsBilled());
  EXPECT_FALSE(s.IsUsable());
  EXPECT_FALSE(s.MustRecreate());
}

TEST(NodeStateTest, Billed) {
  for (NodeState s : {NodeState::kCreating, NodeState::kReady, NodeState::kRepairing,
                      NodeState::kDeleting, NodeState::kStarting, NodeState::kUnreachable}) {
    EXPECT_TRUE(s.IsBilled()) << s.Name();
  }
  for (NodeState s : {NodeState::kNone, NodeState::kRequested, NodeState::kQueued,
                      NodeState::kStockout, NodeState::kNotFound, NodeState::kStopped,
                      NodeState::kFailed, NodeState::kPreempted, NodeState::kTerminated}) {
    EXPECT_FALSE(s.IsBilled()) << s.Name();
  }
}

TEST(NodeStateTest, TheQuestions) {
  EXPECT_TRUE(NodeState(NodeState::kReady).IsUsable());
  EXPECT_FALSE(NodeState(NodeState::kRepairing).IsUsable());
  EXPECT_TRUE(NodeState(NodeState::kPreempted).IsGone());
  EXPECT_TRUE(NodeState(NodeState::kTerminated).IsGone());
  EXPECT_FALSE(NodeState(NodeState::kStopped).IsGone());
  for (NodeState s : {NodeState::kPreempted, NodeState::kTerminated, NodeState::kFailed,
                      NodeState::kSuspended, NodeState::kSuspending}) {
    EXPECT_TRUE(s.MustRecreate()) << s.Name();
  }
  EXPECT_FALSE(NodeState(NodeState::kWaitingForResources).MustRecreate());
  EXPECT_TRUE(NodeState(NodeState::kRequested).IsInFlight());
  EXPECT_TRUE(NodeState(NodeState::kQueued).IsInFlight());
  EXPECT_FALSE(NodeState(NodeState::kStockout).IsInFlight());
  EXPECT_TRUE(NodeState(NodeState::kStockout).MayBeUnlisted());
  EXPECT_FALSE(NodeState(NodeState::kReady).MayBeUnlisted());
  EXPECT_TRUE(NodeState(NodeState::kStopped).IsHalted());
  EXPECT_TRUE(NodeState(NodeState::kUnreachable).IsHalted());
  EXPECT_FALSE(NodeState(NodeState::kCreating).IsHalted());
}

TEST(NodeStateTest, TransitionEvents) {
  EXPECT_EQ(TransitionEvent(NodeState::kReady, NodeState::kPreempted), "preempted");
  EXPECT_EQ(TransitionEvent(NodeState::kReady, NodeState::kTerminated), "preempted");
  EXPECT_EQ(TransitionEvent(NodeState::kCreating, NodeState::kReady), "ready");
  EXPECT_EQ(TransitionEvent(NodeState::kReady, NodeState::kNotFound), "vanished");
  EXPECT_EQ(TransitionEvent(NodeState::kNotFound, NodeState::kNotFound), "");
  EXPECT_EQ(TransitionEvent(NodeState::kReady, NodeState::kReady), "");
  EXPECT_EQ(TransitionEvent(NodeState::kReady, NodeState::kRepairing), "");
}

}  // namespace
}  // namespace tpufleet
