// System tests of NamespaceHosts: real namespaces, veths, sshd, ssh and curl. They need
// root (as CI runs them); otherwise every test is skipped with the reason. Each test
// cleans up in TearDown, even when it fails; a crash of this process is covered by the
// workers' death signal and by CleanStale at the next start.
#include "emulator/hosts/namespace_hosts.h"

#include "emulator/hosts/namespace_hosts_fixture.h"

namespace tpufleet::emulator {
namespace {

using namespace hosts_test;  // NOLINT: the fixture's helpers

TEST_F(NamespaceHostsTest, BootsFourWorkersEachWithItsOwnSshd) {
  std::vector<WorkerInfo> w = BootOrDie(Spec(KeyLine("alice")));
  ASSERT_EQ(w.size(), 4u);
  std::set<std::string> addresses, names, keys;
  for (const WorkerInfo& i : w) {
    EXPECT_TRUE(StartsWith(i.address, "198.18.") || StartsWith(i.address, "198.19.")) << i.address;
    EXPECT_TRUE(StartsWith(i.host_key, "ssh-ed25519 AAAA")) << i.host_key;
    addresses.insert(i.address);
    names.insert(i.hostname);
    keys.insert(i.host_key);
  }
  EXPECT_EQ(addresses.size(), 4u);
  EXPECT_EQ(names.size(), 4u);
  EXPECT_EQ(keys.size(), 4u) << "every worker has its own host key";
  for (const WorkerInfo& i : w) {
    ProgramResult r = Ssh("alice", i.address, "hostname");
    EXPECT_EQ(r.exit_code, 0) << r.output;
    EXPECT_EQ(Trim(r.output), i.hostname);
  }
  // No root login, as on a TPU VM; and the worker's users are not the machine's.
  ProgramResult root = Ssh("alice", w[0].address, "id -un; sudo -n id -un");
  EXPECT_EQ(root.exit_code, 0) << root.output;
  EXPECT_EQ(root.output, "alice\nroot\n");
  EXPECT_EQ(Must(ReadFile("/etc/passwd")), host_passwd_);
  // Repeating Boot of a running node changes nothing.
  Result<std::vector<WorkerInfo>> again = hosts_->Boot(Spec(KeyLine("alice")), false);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ((*again)[3].address, w[3].address);
}

TEST_F(NamespaceHostsTest, MetadataServerAnswersLikeATpuVm) {
  std::vector<WorkerInfo> w = BootOrDie(Spec(KeyLine("alice")));
  ASSERT_EQ(w.size(), 4u);
  std::vector<pid_t> pids = hosts_->InitPids(kNode);
  for (int i = 0; i < 4; ++i) {
    ProgramResult r = Curl(pids[static_cast<size_t>(i)], "instance/attributes/agent-worker-number");
    EXPECT_EQ(r.exit_code, 0) << r.output;
    EXPECT_NE(r.output.find("Metadata-Flavor: Google\r\n"), std::string::npos) << r.output;
    EXPECT_NE(r.output.find("ETag: "), std::string::npos);
    EXPECT_EQ(Body(r), std::to_string(i));
  }
  ProgramResult endpoints = Curl(pids[2], "instance/attributes/worker-network-endpoints");
  std::vector<std::string> parts = Split(Body(endpoints), ',');
  ASSERT_EQ(parts.size(), 4u) << endpoints.output;
  for (size_t i = 0; i < 4; ++i) {
    std::vector<std::string> f = Split(parts[i], ':');
    ASSERT_EQ(f.size(), 3u);
    EXPECT_EQ(f[0], w[i].hostname);
    EXPECT_EQ(f[2], w[i].address);
  }
  EXPECT_EQ(Body(Curl(pids[1], "instance/attributes/accelerator-type")), "v4-32");
  EXPECT_EQ(Body(Curl(pids[1], "instance/attributes/ssh-keys")), KeyLine("alice"));
  EXPECT_EQ(Body(Curl(pids[1], "instance/preempted")), "FALSE");
  EXPECT_EQ(Body(Curl(pids[1], "instance/maintenance-event")), "NONE");
  EXPECT_NE(Body(Curl(pids[1], "instance/service-accounts/default/token")).find("\"access_token\""),
            std::string::npos);
  ProgramResult no_flavor = Curl(pids[1], "instance/preempted", /*flavor=*/false);
  EXPECT_NE(no_flavor.output.find("HTTP/1.1 403"), std::string::npos) << no_flavor.output;
  // From a user's session on the worker, by the usual name.
  ProgramResult from_user = Ssh(
      "alice", w[3].address,
      "curl -s -H 'Metadata-Flavor: Google' "
      "http://metadata.google.internal/computeMetadata/v1/instance/attributes/agent-worker-number");
  EXPECT_EQ(from_user.output, "3");
}

TEST_F(NamespaceHostsTest, WorkersHaveTheirOwnFilesUsersAndLocks) {
  std::vector<WorkerInfo> w = BootOrDie(Spec(KeyLine("alice")));
  ASSERT_EQ(w.size(), 4u);
  std::string unique = "tpf-test-" + std::to_string(::getpid());
  ProgramResult made = Ssh("alice", w[0].address,
                           "echo w0 > /tmp/" + unique + " && echo w0 > ~/" + unique +
                               " && touch /tmp/libtpu_lockfile && sudo -n touch /etc/" + unique +
                               " /usr/local/" + unique);
  ASSERT_EQ(made.exit_code, 0) << made.output;
  EXPECT_EQ(Ssh("alice", w[0].address, "cat /tmp/" + unique + " ~/" + unique).output, "w0\nw0\n");
  ProgramResult absent = Ssh("alice", w[1].address,
                             "test ! -e /tmp/" + unique + " && test ! -e ~/" + unique +
                                 " && test ! -e /tmp/libtpu_lockfile && test ! -e /etc/" + unique +
                                 " && test ! -e /usr/local/" + unique + " && echo clean");
  EXPECT_EQ(absent.output, "clean\n");
  for (const std::string& p :
       {"/tmp/" + unique, "/home/alice/" + unique, "/etc/" + unique, "/usr/local/" + unique}) {
    EXPECT_FALSE(fs::exists(p)) << p << " leaked onto the machine";
  }
  EXPECT_EQ(Must(ReadFile("/etc/passwd")), host_passwd_);
}

TEST_F(NamespaceHostsTest, SshKeysPatchAddsAndRemovesUsersOnEveryWorker) {
  std::vector<WorkerInfo> w = BootOrDie(Spec(KeyLine("alice")));
  ASSERT_EQ(w.size(), 4u);
  EXPECT_EQ(Ssh("bob", w[0].address, "true").exit_code, 255);
  ASSERT_TRUE(
      hosts_->SetMetadata(kNode, {{"ssh-keys", KeyLine("alice") + "\n" + KeyLine("bob")}}).ok());
  for (const WorkerInfo& i : w) {
    ProgramResult r = Ssh("bob", i.address, "id -un");
    EXPECT_EQ(r.output, "bob\n") << i.address << ": " << r.output;
  }
  ASSERT_TRUE(hosts_->SetMetadata(kNode, {{"ssh-keys", "# alice left\n" + KeyLine("bob")}}).ok());
  for (const WorkerInfo& i : w) {
    ProgramResult alice = Ssh("alice", i.address, "true");
    EXPECT_EQ(alice.exit_code, 255) << "alice still gets in on " << i.address;
    EXPECT_NE(alice.output.find("Permission denied"), std::string::npos) << alice.output;
    EXPECT_EQ(Ssh("bob", i.address, "true").exit_code, 0);
  }
  // Hostile lines are skipped, the good ones still applied.
  ASSERT_TRUE(hosts_
                  ->SetMetadata(kNode, {{"ssh-keys", "root:" + pub_["alice"] + "\n" + "x;reboot:" +
                                                         pub_["alice"] + "\n" + KeyLine("bob")}})
                  .ok());
  EXPECT_EQ(Ssh("bob", w[2].address, "true").exit_code, 0);
}

// The guest agent used to adopt any existing account with a uid from 1000 up: `nobody`
// in ssh-keys got keys, and its home /nonexistent was made on the machine's own root
// file system (the part a worker shares). It now manages only the accounts it made.
class GuestAgentRegression : public NamespaceHostsTest {
 protected:
  std::string WorkerLog() { return Must(ReadFile(state_ + "/nodes/1001/w0/worker.log")); }

  // ssh as `login` with `key_owner`'s key.
  ProgramResult SshWithKey(const std::string& key_owner, const std::string& login,
                           const std::string& address, const std::string& cmd) {
    Result<ProgramResult> r = RunCommand(
        {ssh_, "-F", "/dev/null", "-i", root_ + "/" + key_owner, "-o", "IdentitiesOnly=yes", "-o",
         "BatchMode=yes", "-o", "UserKnownHostsFile=" + root_ + "/known_hosts", "-o",
         "StrictHostKeyChecking=yes", "-o", "ConnectTimeout=10", "-o", "LogLevel=ERROR",
         login + "@" + address, "--", cmd},
        "", kSshTimeout);
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    return r.ok() ? *r : ProgramResult{};
  }
};

TEST_F(GuestAgentRegression, OnlyAccountsTheAgentMadeGetKeys) {
  bool had_nonexistent = fs::exists("/nonexistent");
  std::vector<WorkerInfo> w = BootOrDie(Spec(KeyLine("alice"), 1));
  ASSERT_EQ(w.size(), 1u);
  // An account made by hand on the worker, and the system's nobody.
  ASSERT_EQ(Ssh("alice", w[0].address, "sudo -n useradd -m -s /bin/bash carol").exit_code, 0);
  ASSERT_TRUE(hosts_
                  ->SetMetadata(kNode, {{"ssh-keys", KeyLine("alice") + "\nnobody:" + pub_["bob"] +
                                                         "\ncarol:" + pub_["bob"]}})
                  .ok());
  for (const char* user : {"nobody", "carol"}) {
    ProgramResult r = SshWithKey("bob", user, w[0].address, "true");
    EXPECT_EQ(r.exit_code, 255) << user << " got in: " << r.output;
  }
  if (!had_nonexistent) {
    EXPECT_FALSE(fs::exists("/nonexistent")) << "nobody's home was made on the machine";
  }
  ProgramResult groups = Ssh("alice", w[0].address,
                             "getent group google-sudoers; sudo -n test -e ~carol/.ssh && echo keys");
  EXPECT_EQ(groups.exit_code, 1) << groups.output;  // no ~carol/.ssh
  EXPECT_EQ(groups.output.find("nobody"), std::string::npos) << groups.output;
  EXPECT_EQ(groups.output.find("carol"), std::string::npos) << groups.output;
  std::string log = WorkerLog();
  EXPECT_NE(log.find("ssh-keys names nobody"), std::string::npos) << log;
  EXPECT_NE(log.find("ssh-keys names carol"), std::string::npos) << log;
  EXPECT_EQ(Ssh("alice", w[0].address, "true").exit_code, 0) << "the others still applied";
}

TEST_F(GuestAgentRegression, KeysGoOnlyIntoTheHomeTheAgentMade) {
  std::vector<WorkerInfo> w = BootOrDie(Spec(KeyLine("alice"), 1));
  ASSERT_EQ(w.size(), 1u);
  // Root on the worker moves alice's home; the agent must not follow it there.
  ASSERT_EQ(Ssh("alice", w[0].address,
                "sudo -n mkdir -p /var/tmp/elsewhere && sudo -n chown alice /var/tmp/elsewhere && "
                "sudo -n sed -i 's#:/home/alice:#:/var/tmp/elsewhere:#' /etc/passwd")
                .exit_code,
            0);
  ASSERT_TRUE(
      hosts_->SetMetadata(kNode, {{"ssh-keys", KeyLine("alice") + "\nalice:" + pub_["bob"]}}).ok());
  EXPECT_EQ(Ssh("bob", w[0].address, "true").exit_code, 255);
  // (alice cannot log in any more to look: sshd reads the moved home too.)
  Result<ProgramResult> moved =
      RunCommand({nsenter_, "--target", std::to_string(hosts_->InitPids(kNode)[0]), "--mount",
                  "--", "ls", "-A", "/var/tmp/elsewhere"});
  ASSERT_TRUE(moved.ok());
  EXPECT_EQ(moved->exit_code, 0) << moved->output;
  EXPECT_EQ(moved->output, "") << "keys were written into the moved home";
  EXPECT_NE(WorkerLog().find("no longer the one the guest agent created"), std::string::npos);
}

// A worker used to see the machine's own login accounts, so a tpufleet login with the
// name of one (the machine owner's $USER) could not be created, and was adopted.
TEST_F(GuestAgentRegression, MachineLoginsAreNotOnTheWorker) {
  std::string machine_login;
  for (const std::string& line : Split(host_passwd_, '\n')) {
    std::vector<std::string> f = Split(line, ':');
    long long uid = 0;
    if (f.size() >= 7 && ParseInt(f[2], &uid) && uid >= 1000 && uid != 65534 &&
        f[0] != "alice" && f[0] != "bob") {
      machine_login = f[0];
      break;
    }
  }
  std::string keys = KeyLine("alice");
  if (!machine_login.empty()) {
    keys += "\n" + machine_login + ":" + pub_["bob"];
  }
  std::vector<WorkerInfo> w = BootOrDie(Spec(keys, 1));
  ASSERT_EQ(w.size(), 1u);
  ProgramResult users = Ssh("alice", w[0].address,
                            "getent passwd | awk -F: '$3 >= 1000 && $3 != 65534 {print $1}' | LC_ALL=C sort");
  std::set<std::string> want = {"alice"};
  if (!machine_login.empty()) {
    want.insert(machine_login);
  }
  EXPECT_EQ(users.output, Join(std::vector<std::string>(want.begin(), want.end()), "\n") + "\n");
  // No password hash of the machine's is readable there.
  ProgramResult hashes =
      Ssh("alice", w[0].address, "sudo -n awk -F: '$2 != \"*\" && $2 != \"!\"' /etc/shadow");
  EXPECT_EQ(hashes.exit_code, 0);
  EXPECT_EQ(hashes.output, "") << hashes.output;
  if (!machine_login.empty()) {
    // A new account of that name, made by the agent, with its home on the worker.
    ProgramResult r = SshWithKey("bob", machine_login, w[0].address, "pwd");
    EXPECT_EQ(r.output, "/home/" + machine_login + "\n") << machine_login;
  }
  EXPECT_EQ(Must(ReadFile("/etc/passwd")), host_passwd_);
}

TEST_F(NamespaceHostsTest, NoticesReachTheMetadataServerBeforeAnythingElse) {
  std::vector<WorkerInfo> w = BootOrDie(Spec(KeyLine("alice")));
  ASSERT_EQ(w.size(), 4u);
  std::vector<pid_t> pids = hosts_->InitPids(kNode);
  auto poll = std::async(std::launch::async, [&] {
    return Curl(pids[1], "instance/preempted?wait_for_change=true&timeout_sec=60", true, 60);
  });
  EXPECT_EQ(poll.wait_for(milliseconds(700)), std::future_status::timeout)
      << "the long-poll answered before anything changed";
  ASSERT_TRUE(hosts_->Notify(kNode, HostEvent::kPreemptionNotice).ok());
  ASSERT_EQ(poll.wait_for(seconds(10)), std::future_status::ready);
  EXPECT_EQ(Body(poll.get()), "TRUE");
  ASSERT_TRUE(hosts_->Notify(kNode, HostEvent::kMaintenanceNotice).ok());
  EXPECT_EQ(Body(Curl(pids[3], "instance/maintenance-event")), "TERMINATE_ON_HOST_MAINTENANCE");
}

TEST_F(NamespaceHostsTest, HaltKillsEverythingOnTheWorkers) {
  std::vector<WorkerInfo> w = BootOrDie(Spec(KeyLine("alice")));
  ASSERT_EQ(w.size(), 4u);
  ProgramResult bg = Ssh("alice", w[0].address,
                         "nohup sleep 4242 >/dev/null 2>&1 & setsid sleep 4243 >/dev/null 2>&1 "
                         "< /dev/null & echo started");
  ASSERT_EQ(bg.output, "started\n");
  std::vector<pid_t> inits = hosts_->InitPids(kNode);
  // The shell that ssh ran may return before its background child has exec'd sleep.
  std::vector<pid_t> sleeps;
  ASSERT_TRUE(Eventually([&] {
    sleeps =
        ProcessesWithArg(std::string("sleep\0"
                                     "4242",
                                     10));
    return sleeps.size() == 1;
  }));
  std::set<pid_t> on_workers = ProcessesOn(inits);
  EXPECT_EQ(on_workers.count(sleeps[0]), 1u);
  EXPECT_GE(on_workers.size(), 4u * 2 + 2);  // init + sshd per worker, and the sleeps

  ASSERT_TRUE(hosts_->Halt(kNode).ok());
  for (pid_t p : hosts_->InitPids(kNode)) {
    EXPECT_EQ(p, -1);
  }
  EXPECT_TRUE(Eventually([&] { return NoneAlive(on_workers); })) << "processes survived the halt";
  ProgramResult down = Ssh("alice", w[0].address, "true", /*connect_timeout_s=*/3);
  EXPECT_EQ(down.exit_code, 255) << down.output;
  std::string bridge = hosts_->bridge();
  std::string slot = bridge.substr(5);
  EXPECT_TRUE(Eventually([&] { return LinksWithPrefix("tpf" + slot + "v").empty(); }));
}

TEST_F(NamespaceHostsTest, RebootWithNewAddressesKeepsTheDisks) {
  std::vector<WorkerInfo> before = BootOrDie(Spec(KeyLine("alice")));
  ASSERT_EQ(before.size(), 4u);
  ASSERT_EQ(Ssh("alice", before[0].address,
                "echo kept > ~/kept && sudo -n sh -c 'echo kept > /etc/kept-etc'")
                .exit_code,
            0);
  ASSERT_TRUE(hosts_->Halt(kNode).ok());
  std::vector<WorkerInfo> after = BootOrDie(Spec(KeyLine("alice")), /*new_addresses=*/true);
  ASSERT_EQ(after.size(), 4u);
  for (size_t i = 0; i < 4; ++i) {
    EXPECT_NE(after[i].address, before[i].address);
    EXPECT_EQ(after[i].host_key, before[i].host_key) << "host keys live on the disk";
    EXPECT_EQ(after[i].hostname, before[i].hostname);
  }
  EXPECT_EQ(Ssh("alice", after[0].address, "cat ~/kept /etc/kept-etc").output, "kept\nkept\n");
  // Maintenance on a running node: new addresses, processes restarted.
  std::vector<WorkerInfo> moved = BootOrDie(Spec(KeyLine("alice")), true);
  ASSERT_EQ(moved.size(), 4u);
  EXPECT_NE(moved[0].address, after[0].address);
  EXPECT_EQ(Ssh("alice", moved[0].address, "cat ~/kept").output, "kept\n");
}

TEST_F(NamespaceHostsTest, CutOffMakesAWorkerUnreachableAndBack) {
  std::vector<WorkerInfo> w = BootOrDie(Spec(KeyLine("alice")));
  ASSERT_EQ(w.size(), 4u);
  ASSERT_TRUE(hosts_->SetCutOff(kNode, 1, true).ok());
  EXPECT_EQ(Ssh("alice", w[1].address, "true", 2).exit_code, 255);
  EXPECT_EQ(Ssh("alice", w[0].address, "true").exit_code, 0);
  // Nor can the other workers reach it.
  ProgramResult peer = Ssh("alice", w[0].address,
                           "timeout 3 bash -c 'echo > /dev/tcp/" + w[1].address +
                               "/22' 2>/dev/null && echo reached || echo unreachable");
  EXPECT_EQ(peer.output, "unreachable\n");
  ASSERT_TRUE(hosts_->SetCutOff(kNode, 1, false).ok());
  EXPECT_EQ(Ssh("alice", w[1].address, "hostname").output, w[1].hostname + "\n");
  EXPECT_EQ(hosts_->SetCutOff(kNode, 9, true).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(hosts_->SetCutOff("projects/p/locations/z/nodes/none", 0, true).code(),
            StatusCode::kNotFound);
}

TEST_F(NamespaceHostsTest, DestroyAndShutdownLeaveNothingBehind) {
  std::vector<WorkerInfo> a = BootOrDie(Spec(KeyLine("alice")));
  ASSERT_EQ(a.size(), 4u);
  NodeHostSpec other = Spec(KeyLine("bob"), 1);
  other.name = "projects/p/locations/us-central2-b/nodes/t2";
  other.id = "1002";
  ASSERT_TRUE(hosts_->Boot(other, false).ok());
  std::set<pid_t> on_a = ProcessesOn(hosts_->InitPids(kNode));
  std::set<pid_t> on_b = ProcessesOn(hosts_->InitPids(other.name));
  // Other emulators may run on this machine, so checks are on these workers' processes:
  // each init and its sshd at least.
  std::vector<pid_t> sshds = ProcessesNamed("sshd");
  size_t our_sshds = 0;
  for (pid_t p : sshds) {
    our_sshds += on_a.count(p) + on_b.count(p);
  }
  EXPECT_GE(our_sshds, 5u);  // a listener each, and maybe a child for the readiness probe
  std::string bridge = hosts_->bridge();
  ASSERT_FALSE(bridge.empty());
  std::string slot = bridge.substr(5);
  EXPECT_EQ(LinksWithPrefix("tpf" + slot + "v").size(), 5u);

  ASSERT_TRUE(hosts_->Destroy(kNode).ok());
  EXPECT_FALSE(fs::exists(state_ + "/nodes/1001"));
  EXPECT_TRUE(fs::exists(state_ + "/nodes/1002"));
  EXPECT_TRUE(Eventually([&] {
    for (pid_t p : on_a) {
      if (Alive(p)) {
        return false;
      }
    }
    return true;
  }));
  EXPECT_TRUE(hosts_->Destroy(kNode).ok()) << "Destroy is idempotent";

  hosts_.reset();  // Shutdown
  EXPECT_TRUE(Eventually([&] {
    for (pid_t p : on_b) {
      if (Alive(p)) {
        return false;
      }
    }
    return true;
  }));
  EXPECT_TRUE(Eventually([&] { return LinksWithPrefix("tpf" + slot + "v").empty(); }));
  EXPECT_TRUE(LinksWithPrefix(bridge).empty()) << "the bridge outlived Shutdown";
  EXPECT_FALSE(MountsMention(state_));
  EXPECT_TRUE(ProcessesWithArg(state_).empty());
  EXPECT_TRUE(fs::exists(state_ + "/nodes/1002/w0/home")) << "Shutdown keeps the disks";
}

TEST_F(NamespaceHostsTest, SigkillOfTheOwnerLeavesNothingBehind) {
  hosts_.reset();
  std::string state = root_ + "/killed";
  int report[2];
  ASSERT_EQ(::pipe(report), 0);
  pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    ::close(report[0]);
    RealClock clock;
    NamespaceHostsOptions o;
    o.state_dir = state;
    o.worker_binary = TPUFLEET_EMULATOR_WORKER;
    Result<std::unique_ptr<NamespaceHosts>> h = NamespaceHosts::Create(o, clock);
    std::string out = "ERR";
    if (h.ok()) {
      NodeHostSpec s = Spec(KeyLine("alice"), 2);
      Result<std::vector<WorkerInfo>> r = (*h)->Boot(s, false);
      if (r.ok()) {
        out = (*h)->bridge();
        for (pid_t p : (*h)->InitPids(s.name)) {
          out += " " + std::to_string(p);
        }
      } else {
        out += " " + r.status().ToString();
      }
    } else {
      out += " " + h.status().ToString();
    }
    out += "\n";
    [[maybe_unused]] ssize_t n = ::write(report[1], out.data(), out.size());
    while (true) {
      ::pause();  // until SIGKILLed
    }
  }
  ::close(report[1]);
  std::string line;
  char c;
  while (::read(report[0], &c, 1) == 1 && c != '\n') {
    line += c;
  }
  ::close(report[0]);
  std::vector<std::string> f = Split(line, ' ');
  ASSERT_EQ(f.size(), 3u) << line;
  ASSERT_NE(f[0], "ERR") << line;
  std::string bridge = f[0];
  std::vector<pid_t> inits = {std::stoi(f[1]), std::stoi(f[2])};
  std::set<pid_t> on_workers = ProcessesOn(inits);
  EXPECT_GE(on_workers.size(), 4u);

  ::kill(child, SIGKILL);
  int status = 0;
  ::waitpid(child, &status, 0);
  EXPECT_TRUE(Eventually([&] { return NoneAlive(on_workers); })) << "workers outlived their emulator";
  std::string slot = bridge.substr(5);
  EXPECT_TRUE(Eventually([&] { return LinksWithPrefix("tpf" + slot + "v").empty(); }));
  EXPECT_TRUE(ProcessesWithArg(state).empty());
  // The bridge is all that is left; the next start (or CleanStale) removes it.
  EXPECT_FALSE(LinksWithPrefix(bridge).empty());
  ASSERT_TRUE(NamespaceHosts::CleanStale(state).ok());
  EXPECT_TRUE(LinksWithPrefix(bridge).empty());
}

TEST_F(NamespaceHostsTest, WithoutRootTheErrorSaysSo) {
  std::string out = InChild([] {
    if (::setresgid(65534, 65534, 65534) != 0 || ::setresuid(65534, 65534, 65534) != 0) {
      return std::string("setresuid failed");
    }
    return NamespaceHosts::CheckSupport().ToString();
  });
  EXPECT_TRUE(StartsWith(out, "failed_precondition: ")) << out;
  EXPECT_NE(out.find("need root"), std::string::npos) << out;
}

TEST_F(NamespaceHostsTest, BadSpecsAreRejected) {
  NodeHostSpec s = Spec(KeyLine("alice"), 1);
  s.id = "../../etc";
  EXPECT_EQ(hosts_->Boot(s, false).status().code(), StatusCode::kInvalidArgument);
  s = Spec(KeyLine("alice"), 0);
  EXPECT_EQ(hosts_->Boot(s, false).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(hosts_->SetMetadata("projects/p/locations/z/nodes/none", {}).code(),
            StatusCode::kNotFound);
  EXPECT_TRUE(hosts_->Halt("projects/p/locations/z/nodes/none").ok());
  NamespaceHostsOptions o;
  o.state_dir = "/etc/tpufleet";
  o.worker_binary = TPUFLEET_EMULATOR_WORKER;
  EXPECT_EQ(NamespaceHosts::Create(o, clock_).status().code(), StatusCode::kInvalidArgument);
  o.state_dir = state_;
  EXPECT_EQ(NamespaceHosts::Create(o, clock_).status().code(), StatusCode::kFailedPrecondition)
      << "a second emulator on the same state dir";
}

// Root on a worker was root on the machine: it could write the machine's files outside
// the worker's overlays, mount, reach the machine's disks in /dev, and set kernel
// settings (core_pattern runs a command on the machine).
class WorkerRootRegression : public NamespaceHostsTest {};

TEST_F(WorkerRootRegression, CannotChangeTheMachine) {
  std::vector<WorkerInfo> w = BootOrDie(Spec(KeyLine("alice"), 1));
  ASSERT_EQ(w.size(), 1u);
  const std::string mark = "/tpufleet-worker-root-test-" + std::to_string(::getpid());
  // A directory of the machine's in "/" that no mount of the worker's covers.
  std::string machine_dir = "/sys";
  std::error_code ec;
  for (const char* dir : {"/srv", "/boot", "/media"}) {
    if (fs::is_directory(dir, ec) && !fs::is_symlink(dir, ec)) {
      machine_dir = dir;
      break;
    }
  }
  // Each line prints "<check> <exit code>"; 0 would be a way out.
  ProgramResult r = Ssh(
      "alice", w[0].address,
      "t() { name=$1; shift; sudo -n \"$@\" >/dev/null 2>&1; echo \"$name $?\"; }; "
      "t write-machine touch " + machine_dir + mark + "; "
      "t mount mount -t tmpfs none /mnt; "
      "t umount umount -l /etc; "
      "t sysctl sh -c 'cat /proc/sys/kernel/hostname > /proc/sys/kernel/hostname'; "
      "t sysrq sh -c 'echo > /proc/sysrq-trigger'; "
      "t mknod mknod /tmp/disk b 8 0; "
      "echo devices $(ls /dev | LC_ALL=C sort); "
      "echo bounding $(sudo -n awk '/^CapBnd/ {print $2}' /proc/self/status)");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  for (const char* check :
       {"write-machine", "mount", "umount", "sysctl", "sysrq", "mknod"}) {
    EXPECT_EQ(r.output.find(std::string(check) + " 0\n"), std::string::npos)
        << check << " worked: " << r.output;
    EXPECT_NE(r.output.find(std::string(check) + " "), std::string::npos) << r.output;
  }
  // disk: /dev/disk/by-id, empty without data disks (namespace_hosts_disks_test.cc).
  EXPECT_NE(r.output.find("devices disk fd full null ptmx pts random shm stderr stdin stdout "
                          "tty urandom zero\n"),
            std::string::npos)
      << r.output;
  // CapBnd: CHOWN DAC_OVERRIDE FOWNER FSETID KILL SETGID SETUID SETPCAP NET_BIND_SERVICE
  // NET_RAW NET_ADMIN (the worker's own network: the agent's nftables, issue 16)
  // SYS_CHROOT AUDIT_WRITE SETFCAP.
  EXPECT_NE(r.output.find("bounding 00000000a00435fb\n"), std::string::npos) << r.output;
  EXPECT_FALSE(fs::exists(machine_dir + mark, ec));
  fs::remove(machine_dir + mark, ec);
  // What users do still works: sudo, and writing where the worker has its own files,
  // "/" included (worker_root.h: its root directory is on its disk, not the machine's).
  ProgramResult ok = Ssh("alice", w[0].address,
                         "sudo -n touch /etc/ok /usr/local/ok /var/ok /opt/ok ~/ok /tmp/ok " +
                             mark + " && echo hi > /dev/null && sudo -n id -un");
  EXPECT_EQ(ok.output, "root\n") << ok.output;
  EXPECT_FALSE(fs::exists(mark, ec));
  fs::remove(mark, ec);
}

// On a machine with net.ipv4.ip_forward=1 (Docker sets it), a worker's root could
// route through the bridge to any network the machine reaches. Tried in a network
// namespace of its own, so the machine's forwarding setting is never touched.
TEST(HostNetworkRegression, TheBridgeNeverForwards) {
  if (::geteuid() != 0) {
    GTEST_SKIP() << "needs root: makes a network namespace and a bridge";
  }
  std::string out = InChild([] {
    auto sysctl = [](const std::string& path) {
      Result<std::string> v = ReadFile(path);
      return v.ok() ? std::string(Trim(*v)) : "?";
    };
    auto set_sysctl = [](const char* path, const std::string& value) {
      int fd = ::open(path, O_WRONLY | O_CLOEXEC);  // in place: no temporary files in /proc
      bool ok = fd >= 0 && ::write(fd, value.data(), value.size()) ==
                               static_cast<ssize_t>(value.size());
      if (fd >= 0) {
        ::close(fd);
      }
      return ok;
    };
    // A sysfs of the new namespace, so /sys/class/net lists its links.
    if (::unshare(CLONE_NEWNET | CLONE_NEWNS) != 0 ||
        ::mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0 ||
        ::mount("sysfs", "/sys", "sysfs", 0, nullptr) != 0 ||
        !set_sysctl("/proc/sys/net/ipv4/ip_forward", "1\n") ||
        sysctl("/proc/sys/net/ipv4/conf/default/forwarding") != "1") {
      return "setup failed: " + std::string(std::strerror(errno));
    }
    Result<std::unique_ptr<hosts::HostNetwork>> net = hosts::HostNetwork::Claim();
    if (!net.ok()) {
      return "claim failed: " + net.status().ToString();
    }
    return "forwarding=" + sysctl("/proc/sys/net/ipv4/conf/" + (*net)->bridge() + "/forwarding") +
           " disable_ipv6=" +
           sysctl("/proc/sys/net/ipv6/conf/" + (*net)->bridge() + "/disable_ipv6");
  });
  EXPECT_EQ(out, "forwarding=0 disable_ipv6=1");
}

}  // namespace
}  // namespace tpufleet::emulator
