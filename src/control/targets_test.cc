#include "control/targets.h"

#include <gtest/gtest.h>

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "store/sqlite_store.h"
#include "util/testing/status_printer.h"

namespace tpufleet {
namespace {

class TargetsTest : public ::testing::Test {
 protected:
  void SetUp() override { store_ = SqliteStore::Open(":memory:").value(); }

  // A READY gcp-tpu node of `workers` workers at 198.18.N.i, port 0 (22).
  NodeRecord& Add(const std::string& fleet, const std::string& name, int workers,
                  std::map<std::string, std::string> labels = {}) {
    NodeRecord r;
    r.fleet = fleet;
    r.name = name;
    r.provider = "gcp-tpu";
    r.state = NodeState::kReady;
    r.login = "tester";
    r.labels = std::move(labels);
    for (int i = 0; i < workers; ++i) {
      r.workers.push_back({i, "198.18." + std::to_string(records_.size()) + "." + std::to_string(i),
                           name + "-host-" + std::to_string(i),
                           "ssh-ed25519 AAAA" + name + std::to_string(i), true, ""});
    }
    records_.push_back(r);
    return records_.back();
  }
  void Save() {
    for (const NodeRecord& r : records_) {
      ASSERT_EQ(store_->PutNode(r), Status::Ok());
    }
  }

  // A fleet "lab" with pod (4 workers, team=a role=train) and eval (1, team=a role=eval),
  // and a fleet "other" with an ssh-hosts box (port 2222) and a node still CREATING.
  void Standard() {
    Add("lab", "pod", 4, {{"team", "a"}, {"role", "train"}});
    Add("lab", "eval", 1, {{"team", "a"}, {"role", "eval"}});
    NodeRecord& box = Add("other", "box", 1, {{"team", "b"}});
    box.provider = "ssh-hosts";
    box.port = 2222;
    box.login = "me";
    Add("other", "new", 0).state = NodeState::kCreating;
    Save();
  }

  std::vector<std::string> WorkerNames(const std::vector<std::string>& words) {
    Result<std::vector<WorkerTarget>> r = ResolveTargets(*store_, words);
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    std::vector<std::string> names;
    for (const WorkerTarget& t : r.ok() ? *r : std::vector<WorkerTarget>{}) {
      names.push_back(t.name);
    }
    return names;
  }
  Status Error(const std::vector<std::string>& words) {
    Result<std::vector<WorkerTarget>> r = ResolveTargets(*store_, words);
    return r.ok() ? Status::Ok() : r.status();
  }

  std::unique_ptr<SqliteStore> store_;
  std::vector<NodeRecord> records_;
};

using Names = std::vector<std::string>;

TEST_F(TargetsTest, AllIsEveryWorkerOfEveryNodeWithWorkersInOrder) {
  Standard();
  EXPECT_EQ(WorkerNames({"all"}),
            (Names{"eval/w0", "pod/w0", "pod/w1", "pod/w2", "pod/w3", "box/w0"}));
}

TEST_F(TargetsTest, ATargetCarriesWhatSshNeeds) {
  Standard();
  Result<std::vector<WorkerTarget>> r = ResolveTargets(*store_, {"pod:3", "box"});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  ASSERT_EQ(r->size(), 2u);
  const WorkerTarget& pod = (*r)[0];
  EXPECT_EQ(pod.fleet, "lab");
  EXPECT_EQ(pod.node, "pod");
  EXPECT_EQ(pod.worker, 3);
  EXPECT_EQ(pod.name, "pod/w3");
  EXPECT_EQ(pod.alias, "pod-w3");
  EXPECT_EQ(pod.address, "198.18.0.3");
  EXPECT_EQ(pod.port, 22);
  EXPECT_EQ(pod.login, "tester");
  EXPECT_EQ(pod.host_key, "ssh-ed25519 AAAApod3");
  EXPECT_EQ(pod.provider, "gcp-tpu");
  const WorkerTarget& box = (*r)[1];
  EXPECT_EQ(box.alias, "box-w0");
  EXPECT_EQ(box.port, 2222);
  EXPECT_EQ(box.login, "me");
  EXPECT_EQ(box.host_key, "") << "ssh-hosts keys are the user's known_hosts' business";
  EXPECT_EQ(box.provider, "ssh-hosts");
}

TEST_F(TargetsTest, RangesAndWordsUnionWithoutDuplicates) {
  Standard();
  EXPECT_EQ(WorkerNames({"pod"}), (Names{"pod/w0", "pod/w1", "pod/w2", "pod/w3"}));
  EXPECT_EQ(WorkerNames({"pod:1-2,0", "pod:2", "eval"}),
            (Names{"eval/w0", "pod/w0", "pod/w1", "pod/w2"}));
  EXPECT_EQ(WorkerNames({"pod:3,1"}), (Names{"pod/w1", "pod/w3"}));
  EXPECT_EQ(WorkerNames({"pod:0-3", "all"}).size(), 6u);
}

TEST_F(TargetsTest, LabelSelectorsMatchNodesThatHaveEveryLabel) {
  Standard();
  EXPECT_EQ(WorkerNames({"team=a"}), (Names{"eval/w0", "pod/w0", "pod/w1", "pod/w2", "pod/w3"}));
  EXPECT_EQ(WorkerNames({"team=a,role=train"}), (Names{"pod/w0", "pod/w1", "pod/w2", "pod/w3"}));
  EXPECT_EQ(WorkerNames({"role=eval", "pod:3", "team=b"}), (Names{"eval/w0", "pod/w3", "box/w0"}));
  Status none = Error({"team=a,role=eval,role=train"});
  EXPECT_EQ(none.code(), StatusCode::kNotFound);
  EXPECT_EQ(none.message(),
            "no node has the labels team=a,role=eval,role=train (labels are "
            "the fleet spec's `labels:`, recorded by `tpufleet up`)");
}

TEST_F(TargetsTest, NamesAndValuesAreComparedAsPlainStrings) {
  Add("lab", "pod", 1, {{"team", "a*"}});
  Add("lab", "pod2", 1, {{"team", "ab"}});
  Add("lab", "a;b", 1, {{"x", "$(id)"}});
  Save();
  EXPECT_EQ(WorkerNames({"pod"}), Names{"pod/w0"});
  EXPECT_EQ(WorkerNames({"team=a*"}), Names{"pod/w0"});
  EXPECT_EQ(Error({"team=a"}).code(), StatusCode::kNotFound);
  EXPECT_EQ(Error({"po*"}).code(), StatusCode::kNotFound);
  Result<std::vector<WorkerTarget>> odd = ResolveTargets(*store_, {"x=$(id)"});
  ASSERT_TRUE(odd.ok()) << odd.status().ToString();
  ASSERT_EQ(odd->size(), 1u);
  EXPECT_EQ((*odd)[0].alias, "a;b-w0");
}

TEST_F(TargetsTest, AnUnknownNodeGetsTheNearestNames) {
  Add("lab", "trainer", 2);
  Add("lab", "eval", 1);
  Save();
  Status s = Error({"trainr"});
  EXPECT_EQ(s, NotFoundError("no node 'trainr' in tpufleet's state; did you mean 'trainer'? "
                             "(tpufleet status lists them)"));
  EXPECT_EQ(Error({"trainr:1"}), s);
  EXPECT_EQ(Error({"zzzzzz"}),
            NotFoundError("no node 'zzzzzz' in tpufleet's state (tpufleet status lists them)"));
  EXPECT_EQ(Error({"eval", "nope"}).code(), StatusCode::kNotFound) << "every word must resolve";
}

TEST_F(TargetsTest, WorkerIndicesOutsideTheNodeAreRefused) {
  Standard();
  EXPECT_EQ(Error({"pod:7"}),
            InvalidArgumentError("node 'pod' has workers 0-3; 'pod:7' names none"));
  EXPECT_EQ(Error({"pod:2-9"}),
            InvalidArgumentError("node 'pod' has workers 0-3; 'pod:2-9' names workers it does "
                                 "not have"));
  EXPECT_EQ(Error({"eval:1"}),
            InvalidArgumentError("node 'eval' has only worker 0; 'eval:1' names none"));
  EXPECT_EQ(Error({"pod:99999999999999999999"}).code(), StatusCode::kInvalidArgument);
}

TEST_F(TargetsTest, MalformedWordsSayTheExpectedForm) {
  Standard();
  EXPECT_EQ(Error({"pod:3-1"}),
            InvalidArgumentError("'pod:3-1': the range 3-1 runs backwards; write 1-3"));
  for (const char* word : {"pod:x", "pod:", "pod:1-", "pod:-1", "pod:1,,2", "pod:+1", "pod: 1"}) {
    Status s = Error({word});
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << word;
    EXPECT_NE(s.message().find("expected NODE:N, NODE:N-M or a list such as NODE:1-3,5"),
              std::string::npos)
        << s.message();
  }
  for (const char* word : {"team=", "=a", "team=a,role", "team=a,"}) {
    Status s = Error({word});
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << word;
    EXPECT_NE(s.message().find("expected key=value"), std::string::npos) << s.message();
  }
  EXPECT_EQ(Error({}).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(Error({""}).code(), StatusCode::kInvalidArgument);
}

TEST_F(TargetsTest, NodesWithoutWorkersOrAddresses) {
  Standard();
  EXPECT_EQ(Error({"new"}), FailedPreconditionError("node 'new' has no workers yet (state "
                                                    "CREATING); wait for `tpufleet up`"));
  EXPECT_EQ(Error({"new:0"}).code(), StatusCode::kFailedPrecondition);
  // "all" and selectors leave out nodes still coming up, unless that is all they match.
  EXPECT_EQ(WorkerNames({"all"}).size(), 6u);
  records_.back().labels = {{"team", "b"}};
  Add("other", "newer", 0, {{"team", "c"}}).state = NodeState::kRequested;
  Save();
  EXPECT_EQ(WorkerNames({"team=b"}), Names{"box/w0"});
  EXPECT_EQ(Error({"team=c"}),
            FailedPreconditionError("the nodes with team=c have no workers yet: newer "
                                    "(REQUESTED); wait for `tpufleet up`"));

  records_[0].workers[2].address = "";
  records_[0].state = NodeState::kStopped;
  Save();
  EXPECT_EQ(Error({"pod:2"}),
            FailedPreconditionError("worker 2 of node 'pod' has no address (state STOPPED); "
                                    "`tpufleet status --refresh` asks the cloud again"));
  EXPECT_EQ(Error({"all"}).code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(WorkerNames({"pod:3"}), Names{"pod/w3"});
}

TEST_F(TargetsTest, AllWithNoNodesSaysHowToGetSome) {
  EXPECT_EQ(Error({"all"}),
            NotFoundError("no nodes; bring a fleet up with `tpufleet up FLEET.yaml`"));
  EXPECT_EQ(Error({"pod"}).code(), StatusCode::kNotFound);
  Add("lab", "new", 0).state = NodeState::kCreating;
  Save();
  EXPECT_EQ(Error({"all"}),
            FailedPreconditionError("no node has workers yet: new (CREATING); wait for "
                                    "`tpufleet up`"));
}

TEST_F(TargetsTest, OneTargetIsWorkerZeroOfABareNode) {
  Standard();
  Result<WorkerTarget> pod = ResolveOneTarget(*store_, "pod");
  ASSERT_TRUE(pod.ok()) << pod.status().ToString();
  EXPECT_EQ(pod->name, "pod/w0");
  EXPECT_EQ(ResolveOneTarget(*store_, "pod:2")->name, "pod/w2");
  EXPECT_EQ(ResolveOneTarget(*store_, "pod:2-2")->name, "pod/w2");
  EXPECT_EQ(ResolveOneTarget(*store_, "role=eval")->name, "eval/w0");
  EXPECT_EQ(ResolveOneTarget(*store_, "pod:1-2").status(),
            InvalidArgumentError("'pod:1-2' names 2 workers; pick one with NODE:N, e.g. pod:1"));
  EXPECT_EQ(ResolveOneTarget(*store_, "team=a").status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(ResolveOneTarget(*store_, "all").status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(ResolveOneTarget(*store_, "trainr").status().code(), StatusCode::kNotFound);
  EXPECT_EQ(ResolveOneTarget(*store_, "new").status().code(), StatusCode::kFailedPrecondition);
}

}  // namespace
}  // namespace tpufleet
