#include "core/node_state.h"

#include <gtest/gtest.h>

#include <initializer_list>
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

// `question` is true of every state in `yes` and false of every state in `no`.
void ExpectAnswers(bool (NodeState::*question)() const, std::initializer_list<NodeState> yes,
                   std::initializer_list<NodeState> no) {
  for (NodeState s : yes) {
    EXPECT_TRUE((s.*question)()) << s.Name();
  }
  for (NodeState s : no) {
    EXPECT_FALSE((s.*question)()) << s.Name();
  }
}

TEST(NodeStateTest, BilledFromItsCreateUntilItIsGone) {
  // What status prices and serve's ledger counts: a husk holds its VMs until deleted.
  for (const char* s : {"CREATING", "READY", "REPAIRING", "RESTARTING", "STOPPING", "STARTING",
                        "DELETING", "PREEMPTED", "TERMINATED", "ACTIVE", "UNREACHABLE",
                        "SOMETHING_NEW"}) {
    EXPECT_TRUE(NodeState::Parse(s).IsBilled()) << s;
  }
  // A queued resource waiting, a stopped node, nothing made yet or any more.
  for (const char* s :
       {"", "REQUESTED", "QUEUED", "ACCEPTED", "PROVISIONING", "WAITING_FOR_RESOURCES", "STOCKOUT",
        "STOPPED", "DELETED", "NOT_FOUND", "FAILED", "SUSPENDED"}) {
    EXPECT_FALSE(NodeState::Parse(s).IsBilled()) << s;
  }
}

TEST(NodeStateTest, TheQuestions) {
  ExpectAnswers(&NodeState::IsUsable, {NodeState::kReady}, {NodeState::kRepairing});
  ExpectAnswers(&NodeState::IsGone, {NodeState::kPreempted, NodeState::kTerminated},
                {NodeState::kStopped});
  ExpectAnswers(&NodeState::MustRecreate,
                {NodeState::kPreempted, NodeState::kTerminated, NodeState::kFailed,
                 NodeState::kSuspended, NodeState::kSuspending},
                {NodeState::kWaitingForResources});
  ExpectAnswers(&NodeState::IsInFlight, {NodeState::kRequested, NodeState::kQueued},
                {NodeState::kStockout});
  ExpectAnswers(&NodeState::MayBeUnlisted, {NodeState::kStockout}, {NodeState::kReady});
  ExpectAnswers(&NodeState::IsHalted, {NodeState::kStopped, NodeState::kUnreachable},
                {NodeState::kCreating});
  ExpectAnswers(&NodeState::IsDown,
                {NodeState::kNotFound, NodeState::kPreempted, NodeState::kTerminated,
                 NodeState::kStopped, NodeState::kStopping, NodeState::kDeleting,
                 NodeState::kFailed},
                // Still coming, or there but silent: worth connecting again.
                {NodeState::kReady, NodeState::kCreating, NodeState::kRepairing,
                 NodeState::kUnreachable, NodeState::kRequested});
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
