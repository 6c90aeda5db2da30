// System tests of the workers' shared bucket at /gcs (issue 14): a checkpoint written on
// one node is read by the node made after it, as from a gcsfuse-mounted Cloud Storage
// bucket, and the bucket is no way onto the machine. Real workers, over real ssh, as
// namespace_hosts_test.cc.
#include "emulator/hosts/host_checks.h"
#include "emulator/hosts/namespace_hosts_fixture.h"
#include "emulator/hosts/worker_setup.h"

namespace tpufleet::emulator::hosts_test {
namespace {

// The stand-in as a restartable job runs it: checkpoints in the bucket every 2 steps.
std::string StandinJob(int restarts, int steps) {
  return "TPUFLEET_RESTARTS=" + std::to_string(restarts) + " tpu-standin --steps " +
         std::to_string(steps) +
         " --step-ms 10 --checkpoint-every 2 --checkpoint-dir /gcs/ck 2>&1 | "
         "grep -v '^tpu-standin' | sed 's/ loss=.*//'";
}

// A two-worker v4 node with alice's key.
NodeHostSpec TwoWorkers(NodeHostSpec s) {
  s.accelerator_type = "v4-16";
  s.family = "v4";
  s.chips_per_worker = 4;
  return s;
}

TEST_F(NamespaceHostsTest, ACheckpointInTheBucketOutlivesItsNodeAndResumesOnTheNext) {
  std::vector<WorkerInfo> w = BootOrDie(TwoWorkers(Spec(KeyLine("alice"), 2)));
  ASSERT_EQ(w.size(), 2u);
  ProgramResult first = Ssh("alice", w[0].address, StandinJob(0, 4));
  EXPECT_EQ(first.output,
            "restarts 0\nstep 1/4 rank=0\nstep 2/4 rank=0\ncheckpoint saved at step 2\n"
            "step 3/4 rank=0\nstep 4/4 rank=0\ncheckpoint saved at step 4\n");
  // Every worker of the node has the same bucket, read-write, mode 1777 like /tmp.
  ProgramResult other =
      Ssh("alice", w[1].address,
          "ls /gcs/ck | tr '\\n' ' '; echo; stat -c '%a' /gcs; touch /gcs/from-w1 && "
          "echo written");
  EXPECT_EQ(other.output, "step_2 step_4 \n1777\nwritten\n");
  EXPECT_TRUE(fs::exists(bucket_ + "/ck/step_4")) << "the bucket is the machine's " << bucket_;

  // Preempted and deleted; serve makes it again under the same name with a new id.
  ASSERT_TRUE(hosts_->Destroy(kNode).ok());
  NodeHostSpec next = TwoWorkers(Spec(KeyLine("alice"), 2));
  next.id = "1002";
  std::vector<WorkerInfo> again = BootOrDie(next);
  ASSERT_EQ(again.size(), 2u);
  ProgramResult resumed = Ssh("alice", again[1].address, StandinJob(1, 6));
  EXPECT_EQ(resumed.output,
            "restarts 1\nresumed from step 4\nstep 5/6 rank=0\nstep 6/6 rank=0\n"
            "checkpoint saved at step 6\n");
  // Only the bucket carries over: the old node's disk went with it.
  EXPECT_EQ(Ssh("alice", again[0].address, "ls /gcs | tr '\\n' ' '; echo; ls /tmp | wc -l").output,
            "ck from-w1 \n0\n");
  EXPECT_FALSE(fs::exists(state_ + "/nodes/1001"));
}

TEST_F(NamespaceHostsTest, TheBucketIsNoWayOntoTheMachine) {
  WorkerInfo w = BootOne("v4-8", "v4", 4);
  // A setuid program put there by the worker's root runs without it (nosuid, as gcsfuse
  // mounts), and a link there is the worker's own business.
  ProgramResult r = Ssh("alice", w.address,
                        "sudo -n cp /usr/bin/id /gcs/id && sudo -n chmod 4755 /gcs/id && "
                        "/gcs/id -u; id -u; sudo -n ln -s /etc /gcs/etc; "
                        "grep ' /gcs ' /proc/self/mountinfo | grep -o 'nosuid,nodev' | head -1");
  std::vector<std::string> lines = Split(r.output, '\n');
  ASSERT_GE(lines.size(), 3u) << r.output;
  EXPECT_EQ(lines[0], lines[1]) << "the setuid program ran as root: " << r.output;
  EXPECT_NE(lines[0], "0");
  EXPECT_EQ(lines[2], "nosuid,nodev") << r.output;
  // The mount point on the machine stays empty; the machine's /gcs is not the bucket.
  EXPECT_TRUE(ListDirectory(hosts::kBucketMount).empty());
  hosts_.reset();
  EXPECT_TRUE(fs::is_symlink(bucket_ + "/etc")) << "Shutdown keeps the bucket";
}

TEST_F(NamespaceHostsTest, ABucketDirThatIsALinkIsRefused) {
  hosts_.reset();
  fs::remove_all(bucket_);
  const std::string target = root_ + "/elsewhere";
  fs::create_directory(target);
  fs::permissions(target, fs::perms(0700));
  fs::create_directory_symlink(target, bucket_);
  Status s = hosts::MakeBucketDir(bucket_);
  EXPECT_EQ(s.code(), StatusCode::kFailedPrecondition) << s.ToString();
  EXPECT_NE(s.message().find("is not a directory"), std::string::npos) << s.message();
  EXPECT_EQ(fs::status(target).permissions(), fs::perms(0700)) << "the link's target was changed";
  EXPECT_EQ(hosts::MakeBucketDir("/usr/gcs").code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace tpufleet::emulator::hosts_test
