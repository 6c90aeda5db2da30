// The job's environment on each worker (core/job.h): what a process of a job sees, on a
// TPU pod, a single-host TPU and a machine without a TPU, with and without `--env`.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "core/job.h"
#include "core/testing/catalog_fixtures.h"
#include "util/testing/status_printer.h"
#include "util/testing/text_cases.h"

namespace tpufleet {
namespace {

using testing::BuiltinCatalog;

JobTopology Topology(const std::string& type, std::vector<std::string> addresses) {
  Result<AcceleratorType> t = BuiltinCatalog().Lookup(type);
  EXPECT_TRUE(t.ok()) << t.status().ToString();
  Result<JobTopology> topology = MakeJobTopology(&*t, std::move(addresses));
  EXPECT_TRUE(topology.ok()) << topology.status().ToString();
  return *topology;
}

const std::vector<std::string> kPodAddresses = {"10.130.0.2", "10.130.0.3", "10.130.0.4",
                                                "10.130.0.5"};

EnvList EnvOf(const JobTopology& topology, int worker, const EnvList& user = {}) {
  Result<EnvList> env = JobEnvironment(topology, worker, "jabcdefg", "train", user);
  EXPECT_TRUE(env.ok()) << env.status().ToString();
  return env.ok() ? *env : EnvList{};
}

TEST(JobEnvironmentTest, RankTwoOfAV4PodGetsWhatJaxAndPytorchXlaRead) {
  JobTopology pod = Topology("v4-32", kPodAddresses);
  EXPECT_EQ(pod.chips_per_host, 4);
  EXPECT_EQ(EnvOf(pod, 2), (EnvList{
                               {"TPUFLEET_JOB_ID", "jabcdefg"},
                               {"TPUFLEET_JOB_NAME", "train"},
                               {"TPUFLEET_RANK", "2"},
                               {"TPUFLEET_WORLD_SIZE", "4"},
                               {"TPUFLEET_COORDINATOR", "10.130.0.2:8482"},
                               {"TPUFLEET_RESTARTS", "0"},
                               {"TPU_WORKER_ID", "2"},
                               {"TPU_WORKER_HOSTNAMES",
                                "10.130.0.2,10.130.0.3,10.130.0.4,10.130.0.5"},
                               {"CLOUD_TPU_TASK_ID", "2"},
                               {"TPU_ACCELERATOR_TYPE", "v4-32"},
                               {"JAX_COORDINATOR_ADDRESS", "10.130.0.2:8482"},
                           }));
}

TEST(JobEnvironmentTest, EveryRankNamesWorkerZeroAsCoordinatorAndItsOwnIndex) {
  JobTopology pod = Topology("v4-32", kPodAddresses);
  for (int r = 0; r < 4; ++r) {
    EnvList env = EnvOf(pod, r);
    auto value = [&](const std::string& name) {
      for (const auto& [n, v] : env) {
        if (n == name) {
          return v;
        }
      }
      return std::string("<unset>");
    };
    EXPECT_EQ(value("TPUFLEET_RANK"), std::to_string(r));
    EXPECT_EQ(value("TPU_WORKER_ID"), std::to_string(r));
    EXPECT_EQ(value("CLOUD_TPU_TASK_ID"), std::to_string(r));
    EXPECT_EQ(value("JAX_COORDINATOR_ADDRESS"), "10.130.0.2:8482");
  }
}

TEST(JobEnvironmentTest, SingleHostNodeHasNoCoordinatorForJaxToWaitAt) {
  JobTopology one = Topology("v5litepod-8", {"10.0.0.9"});
  EXPECT_EQ(one.chips_per_host, 8);
  EXPECT_EQ(EnvOf(one, 0), (EnvList{
                               {"TPUFLEET_JOB_ID", "jabcdefg"},
                               {"TPUFLEET_JOB_NAME", "train"},
                               {"TPUFLEET_RANK", "0"},
                               {"TPUFLEET_WORLD_SIZE", "1"},
                               {"TPUFLEET_COORDINATOR", "10.0.0.9:8482"},
                               {"TPUFLEET_RESTARTS", "0"},
                               {"TPU_WORKER_ID", "0"},
                               {"TPU_WORKER_HOSTNAMES", "10.0.0.9"},
                               {"CLOUD_TPU_TASK_ID", "0"},
                               {"TPU_ACCELERATOR_TYPE", "v5litepod-8"},
                           }));
}

TEST(JobEnvironmentTest, MachineWithoutATpuGetsOnlyTpufleetVariables) {
  Result<JobTopology> hosts = MakeJobTopology(nullptr, {"box-1.lan"});
  ASSERT_TRUE(hosts.ok()) << hosts.status().ToString();
  EXPECT_EQ(EnvOf(*hosts, 0), (EnvList{
                                  {"TPUFLEET_JOB_ID", "jabcdefg"},
                                  {"TPUFLEET_JOB_NAME", "train"},
                                  {"TPUFLEET_RANK", "0"},
                                  {"TPUFLEET_WORLD_SIZE", "1"},
                                  {"TPUFLEET_COORDINATOR", "box-1.lan:8482"},
                                  {"TPUFLEET_RESTARTS", "0"},
                              }));
}

TEST(JobEnvironmentTest, Ipv6CoordinatorIsBracketed) {
  JobTopology t{.accelerator_type = "v4-16", .worker_addresses = {"fd00::1", "fd00::2"},
                .chips_per_host = 4, .coordinator_port = 9000};
  EnvList env = EnvOf(t, 1);
  EXPECT_EQ(env[4], (std::pair<std::string, std::string>{"TPUFLEET_COORDINATOR", "[fd00::1]:9000"}));
  EXPECT_EQ(env.back(),
            (std::pair<std::string, std::string>{"JAX_COORDINATOR_ADDRESS", "[fd00::1]:9000"}));
}

TEST(JobEnvironmentTest, UserEntriesReplaceOursInPlaceAndFollowInTheirOrderLastWins) {
  JobTopology one = Topology("v5litepod-8", {"10.0.0.9"});
  EnvList env = EnvOf(one, 0,
                      {{"XLA_FLAGS", "--xla_dump_to=/tmp/x"},
                       {"TPUFLEET_COORDINATOR", "10.0.0.9:1234"},
                       {"TPUFLEET_JOB_NAME", "mine"},
                       {"A", "1"},
                       {"XLA_FLAGS", ""}});
  EXPECT_EQ(env, (EnvList{
                     {"TPUFLEET_JOB_ID", "jabcdefg"},
                     {"TPUFLEET_JOB_NAME", "mine"},
                     {"TPUFLEET_RANK", "0"},
                     {"TPUFLEET_WORLD_SIZE", "1"},
                     {"TPUFLEET_COORDINATOR", "10.0.0.9:1234"},
                     {"TPUFLEET_RESTARTS", "0"},
                     {"TPU_WORKER_ID", "0"},
                     {"TPU_WORKER_HOSTNAMES", "10.0.0.9"},
                     {"CLOUD_TPU_TASK_ID", "0"},
                     {"TPU_ACCELERATOR_TYPE", "v5litepod-8"},
                     {"XLA_FLAGS", ""},
                     {"A", "1"},
                 }));
}

TEST(JobEnvironmentTest, JobIdRankAndWorldSizeCannotBeGiven) {
  JobTopology pod = Topology("v4-32", kPodAddresses);
  for (const char* kept :
       {"TPUFLEET_JOB_ID", "TPUFLEET_RANK", "TPUFLEET_WORLD_SIZE", "TPUFLEET_RESTARTS"}) {
    Result<EnvList> env = JobEnvironment(pod, 0, "jabcdefg", "train", {{kept, "0"}});
    ASSERT_FALSE(env.ok()) << kept;
    EXPECT_EQ(env.status(),
              InvalidArgumentError(std::string(kept) +
                                   " is set by tpufleet on each worker and cannot be given: "
                                   "TPUFLEET_JOB_ID, TPUFLEET_RANK, TPUFLEET_WORLD_SIZE and "
                                   "TPUFLEET_RESTARTS tell each process which job, rank and "
                                   "run it is"));
  }
}

// A job started again (`run --restart`) is told how often: every rank the same count.
TEST(JobEnvironmentTest, ARestartedJobSeesItsRestarts) {
  JobTopology pod = Topology("v4-32", kPodAddresses);
  for (int r = 0; r < 4; ++r) {
    Result<EnvList> env = JobEnvironment(pod, r, "jabcdefg", "train", {}, 3);
    ASSERT_TRUE(env.ok()) << env.status().ToString();
    EXPECT_EQ((*env)[5], (std::pair<std::string, std::string>{"TPUFLEET_RESTARTS", "3"}));
  }
  EXPECT_EQ(JobEnvironment(pod, 0, "jabcdefg", "train", {}, -1).status(),
            InvalidArgumentError("restarts is -1; it cannot be negative"));
}

TEST(JobEnvironmentTest, RefusesAWorkerOutsideTheTopologyAndBadUserEntries) {
  JobTopology pod = Topology("v4-32", kPodAddresses);
  EXPECT_EQ(JobEnvironment(pod, 4, "jabcdefg", "train", {}).status(),
            InvalidArgumentError("worker 4 is not one of the 4 workers of the topology"));
  EXPECT_FALSE(JobEnvironment(pod, -1, "jabcdefg", "train", {}).ok());
  EXPECT_EQ(JobEnvironment(pod, 0, "jabcdefg", "train", {{"BAD NAME", "x"}}).status(),
            InvalidArgumentError("environment variable name \"BAD NAME\" is not a letter or _ "
                                 "followed by letters, digits and _"));
  EXPECT_FALSE(JobEnvironment(JobTopology{}, 0, "jabcdefg", "train", {}).ok());
  EXPECT_FALSE(JobEnvironment(pod, 0, "../x", "train", {}).ok());
  EXPECT_FALSE(JobEnvironment(pod, 0, "jabcdefg", std::string("a\0b", 3), {}).ok());
}

TEST(EnvCheckTest, NamesAreWhatAShellCanName) {
  testing::ExpectAcceptsOnly([](std::string_view n) { return CheckEnvName(n); },
                             {"A", "_", "a_b", "XLA_FLAGS", "x9", "_1"},
                             {"", "9x", "A-B", "A=B", "A B", "é", "A.B", "$A"});
}

TEST(EnvCheckTest, ValuesHaveNoNulAndFitOneExecveString) {
  EXPECT_TRUE(CheckUserEnvEntry("A", "any bytes: ;$`'\"\n\t").ok());
  EXPECT_EQ(CheckUserEnvEntry("A", std::string("x\0y", 3)),
            InvalidArgumentError("the value of A holds a NUL byte, which no environment can "
                                 "carry"));
  EXPECT_TRUE(CheckUserEnvEntry("A", std::string(kMaxEnvEntryBytes - 2, 'v')).ok());
  Status too_long = CheckUserEnvEntry("A", std::string(kMaxEnvEntryBytes - 1, 'v'));
  EXPECT_EQ(too_long.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(too_long.message().find("MAX_ARG_STRLEN"), std::string::npos) << too_long.message();
}

TEST(EnvCheckTest, ParsesEnvFlagValues) {
  using Pair = std::pair<std::string, std::string>;
  EXPECT_EQ(*ParseEnvAssignment("A=1"), (Pair{"A", "1"}));
  EXPECT_EQ(*ParseEnvAssignment("A="), (Pair{"A", ""}));
  EXPECT_EQ(*ParseEnvAssignment("XLA_FLAGS=--a=b --c"), (Pair{"XLA_FLAGS", "--a=b --c"}));
  EXPECT_EQ(ParseEnvAssignment("A").status(),
            InvalidArgumentError("--env \"A\": expected NAME=VALUE"));
  EXPECT_FALSE(ParseEnvAssignment("=1").ok());
  EXPECT_FALSE(ParseEnvAssignment("TPUFLEET_RANK=3").ok());
}

TEST(JobTopologyTest, NeedsOneAddressPerWorkerOfTheType) {
  Result<AcceleratorType> v4_32 = BuiltinCatalog().Lookup("v4-32");
  ASSERT_TRUE(v4_32.ok());
  EXPECT_EQ(MakeJobTopology(&*v4_32, {"10.0.0.1", "10.0.0.2", "10.0.0.3"}).status(),
            InvalidArgumentError("the node lists 3 worker addresses; a v4-32 has 4 workers"));
  EXPECT_FALSE(MakeJobTopology(nullptr, {}).ok());
}

TEST(JobTopologyTest, RefusesWhatWouldBreakTheVariables) {
  JobTopology good{.accelerator_type = "v4-16", .worker_addresses = {"10.0.0.1", "10.0.0.2"},
                   .chips_per_host = 4};
  EXPECT_TRUE(CheckJobTopology(good).ok());
  struct Row {
    const char* what;
    JobTopology topology;
  };
  auto with = [&](auto change) {
    JobTopology t = good;
    change(t);
    return t;
  };
  for (const Row& row : {
           Row{"no addresses", with([](JobTopology& t) { t.worker_addresses.clear(); })},
           Row{"a comma in an address",
               with([](JobTopology& t) { t.worker_addresses[1] = "a,b"; })},
           Row{"an empty address", with([](JobTopology& t) { t.worker_addresses[0] = ""; })},
           Row{"port 0", with([](JobTopology& t) { t.coordinator_port = 0; })},
           Row{"port 65536", with([](JobTopology& t) { t.coordinator_port = 65536; })},
           Row{"negative chips", with([](JobTopology& t) { t.chips_per_host = -1; })},
           Row{"a type with a space",
               with([](JobTopology& t) { t.accelerator_type = "v4 32"; })},
       }) {
    Status s = CheckJobTopology(row.topology);
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << row.what;
    EXPECT_EQ(s.message().rfind("topology: ", 0), 0u) << row.what << ": " << s.message();
  }
}

}  // namespace
}  // namespace tpufleet
