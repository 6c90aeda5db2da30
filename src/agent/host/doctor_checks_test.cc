#include "agent/host/doctor_checks.h"

#include <gtest/gtest.h>

#include "agent/host/plain_http.h"
#include "agent/host/testing/fake_host.h"
#include "agent/host/testing/loopback_http.h"
#include "util/strings.h"
#include "util/testing/fake_clock.h"
#include "util/testing/text_cases.h"

namespace tpufleet::agent::host {
namespace {

using testing::FakeHost;
using testing::LoopbackHttpServer;
using testing::LoopbackRequest;

std::vector<Accelerator> V4Chips(int n) {
  std::vector<Accelerator> out;
  for (int i = 0; i < n; ++i) {
    out.push_back({i, "0000:00:0" + std::to_string(4 + i) + ".0", "v4", "0x005e",
                   "/dev/accel" + std::to_string(i)});
  }
  return out;
}

TEST(DoctorChecks, Accelerators) {
  const DoctorExpect v4{"v4-32", 4, 1, {}};
  DoctorCheck ok = CheckAccelerators(V4Chips(4), {}, v4);
  EXPECT_TRUE(ok.ok);
  EXPECT_EQ(ok.detail, "4 v4 TPU chips (/dev/accel0, /dev/accel1, /dev/accel2, /dev/accel3)");
  EXPECT_EQ(ok.fix, "");

  DoctorCheck missing = CheckAccelerators(V4Chips(3), {}, v4);
  EXPECT_FALSE(missing.ok);
  EXPECT_EQ(missing.detail,
            "3 v4 TPU chips (/dev/accel0, /dev/accel1, /dev/accel2); 4 expected on a worker of v4-32");
  EXPECT_NE(missing.fix.find("recreate the node"), std::string::npos);

  DoctorCheck no_node = CheckAccelerators(V4Chips(4), {"/dev/accel3"}, v4);
  EXPECT_FALSE(no_node.ok);
  EXPECT_NE(no_node.detail.find("missing device node /dev/accel3"), std::string::npos);

  std::vector<Accelerator> no_group = V4Chips(4);
  no_group[2].path = "";
  EXPECT_NE(CheckAccelerators(no_group, {}, v4).detail.find("0000:00:06.0 has no iommu group"),
            std::string::npos);

  std::vector<Accelerator> tpu7x = {{0, "0000:00:04.0", "tpu7x", "0x0076", "/dev/vfio/0"},
                                     {1, "0000:00:04.1", "tpu7x", "0x0076", "/dev/vfio/0"}};
  EXPECT_EQ(CheckAccelerators(tpu7x, {}, {"tpu7x-8", 1, 0, {}}).detail,
            "1 tpu7x TPU chip (/dev/vfio/0)");

  EXPECT_TRUE(CheckAccelerators({}, {}, {}).ok);
  EXPECT_EQ(CheckAccelerators({}, {}, {}).detail, "no TPU chips (none expected)");
  EXPECT_FALSE(CheckAccelerators(V4Chips(1), {}, {}).ok) << "a chip where none is expected";
}

TEST(DoctorChecks, TpuUse) {
  ProcessInfo p{4242, 1001, "alice", "python3 train.py", 1};
  EXPECT_TRUE(CheckTpuUse({}).ok);
  DoctorCheck held = CheckTpuUse({TpuVerdictKind::kHeldByJob, "jabc", {{p, {}, "jabc"}}, "", {}});
  EXPECT_TRUE(held.ok);
  EXPECT_EQ(held.detail, "in use by job jabc: pid 4242 (alice): python3 train.py");
  DoctorCheck stale = CheckTpuUse({TpuVerdictKind::kStaleLockfile, "", {}, "", {}});
  EXPECT_FALSE(stale.ok);
  EXPECT_EQ(stale.detail, "/tmp/libtpu_lockfile is left over: no process holds its lock or a TPU device");
  DoctorCheck orphan = CheckTpuUse({TpuVerdictKind::kOrphan, "", {{p, {}, ""}}, "", {}});
  EXPECT_FALSE(orphan.ok);
  EXPECT_EQ(orphan.detail, "held by pid 4242 (alice): python3 train.py, a process of no tpufleet job");
  EXPECT_EQ(orphan.fix, "stop it (`sudo kill 4242`), or start the next job with `tpufleet run --kill-stale`");
}

TEST(DoctorChecks, Metadata) {
  const DoctorExpect expect{"v4-32", 4, 1, {"10.0.0.2", "10.0.0.3"}};
  const MetadataAnswers good{Status::Ok(), "1", "w-0:1:10.0.0.2,w-1:1:10.0.0.3", "v4-32\n"};
  DoctorCheck ok = CheckMetadata(good, expect, "169.254.169.254");
  EXPECT_TRUE(ok.ok) << ok.detail;
  EXPECT_EQ(ok.detail, "worker 1 of 2, v4-32, answered by 169.254.169.254");

  MetadataAnswers bad = good;
  bad.worker_number = "3";
  EXPECT_EQ(CheckMetadata(bad, expect, "m").detail, "metadata says worker 3, the TPU API worker 1");
  bad = good;
  bad.accelerator_type = "v4-8";
  EXPECT_EQ(CheckMetadata(bad, expect, "m").detail,
            "metadata says accelerator type v4-8, the TPU API v4-32");
  bad = good;
  bad.endpoints = "10.0.0.2,10.0.0.9";
  EXPECT_EQ(CheckMetadata(bad, expect, "m").detail,
            "metadata says worker endpoints 10.0.0.2,10.0.0.9, the TPU API 10.0.0.2,10.0.0.3");
  bad = good;
  bad.error = TimeoutError("no answer from http://169.254.169.254/x in time");
  DoctorCheck down = CheckMetadata(bad, expect, "169.254.169.254");
  EXPECT_FALSE(down.ok);
  EXPECT_EQ(down.detail.rfind("the metadata server at 169.254.169.254 does not answer: ", 0), 0u);
  EXPECT_TRUE(CheckMetadata({Status::Ok(), "7", "", "x"}, {}, "m").ok) << "nothing expected";
}

TEST(DoctorChecks, EndpointsAndUrl) {
  auto join = [](std::string_view v) { return Join(EndpointAddresses(std::string(v)), "|"); };
  tpufleet::testing::ExpectEachGives(
      join, {{"t1v-n-0f996b37-w-0:12345:10.130.0.26,t1v-n-0f996b37-w-1:12345:10.130.0.27",
              "10.130.0.26|10.130.0.27"},
             {"host-a, host-b\n", "host-a|host-b"},
             {"", ""}});
  EXPECT_EQ(MetadataBaseUrl(nullptr), "http://169.254.169.254/computeMetadata/v1/");
  EXPECT_EQ(MetadataBaseUrl(""), "http://169.254.169.254/computeMetadata/v1/");
  EXPECT_EQ(MetadataBaseUrl("127.0.0.1:8080"), "http://127.0.0.1:8080/computeMetadata/v1/");
}

TEST(DoctorChecks, FreeSpace) {
  DoctorCheck ok = CheckFreeSpace("free_space_root", "/", 10ull << 30, 100ull << 30);
  EXPECT_TRUE(ok.ok);
  EXPECT_EQ(ok.detail, "10 GiB free of 100 GiB on /");
  DoctorCheck low = CheckFreeSpace("free_space_tmp", "/tmp", 512ull << 20, 100ull << 30);
  EXPECT_FALSE(low.ok);
  EXPECT_EQ(low.detail, "512 MiB free of 100 GiB on /tmp (less than 2 GiB)");
  EXPECT_NE(low.fix.find("sudo du -xh /tmp"), std::string::npos);
}

// A metadata server like a TPU VM's, on loopback: it refuses requests without the
// Metadata-Flavor header, as Google's does.
std::pair<int, std::string> Metadata(const LoopbackRequest& r) {
  if (r.head.find("\r\nMetadata-Flavor: Google\r\n") == std::string::npos) {
    return {403, "Missing Metadata-Flavor:Google header."};
  }
  const std::string prefix = "/computeMetadata/v1/instance/attributes/";
  std::map<std::string, std::string> values = {
      {"agent-worker-number", "1"},
      {"worker-network-endpoints", "w-0:1:10.0.0.2,w-1:1:10.0.0.3"},
      {"accelerator-type", "v4-16"}};
  auto it = values.find(r.path.substr(prefix.size()));
  return it == values.end() ? std::pair{404, std::string("not found")} : std::pair{200, it->second};
}

TEST(HostDoctor, AHealthyV4Worker) {
  FakeHost host;
  for (int i = 0; i < 4; ++i) {
    host.AddPci("0000:00:0" + std::to_string(4 + i) + ".0", "0x005e");
    host.AddNode("accel" + std::to_string(i));
  }
  LoopbackHttpServer server(Metadata);
  PlainHttpClient http;
  FakeClock clock;
  HostDoctorReport report =
      RunHostDoctor(host.paths(), {"v4-16", 4, 1, {"10.0.0.2", "10.0.0.3"}}, {}, http,
                    MetadataBaseUrl(server.address().c_str()), clock);
  ASSERT_EQ(report.checks.size(), 5u);
  std::vector<std::string> names;
  for (const DoctorCheck& c : report.checks) {
    names.push_back(c.name);
    if (c.name != "free_space_root" && c.name != "free_space_tmp") {  // this machine's disks
      EXPECT_TRUE(c.ok) << c.name << ": " << c.detail;
    }
  }
  EXPECT_EQ(names, (std::vector<std::string>{"accelerators", "tpu_use", "metadata",
                                             "free_space_root", "free_space_tmp"}));
  EXPECT_EQ(report.checks[2].detail, "worker 1 of 2, v4-16, answered by " + server.address());
  EXPECT_NE(report.checks[4].detail.find(" on /tmp"), std::string::npos);
  EXPECT_EQ(report.time_unix_ms, 1767225600000);  // FakeClock's 2026-01-01T00:00:00Z
}

TEST(HostDoctor, NamesEachProblem) {
  FakeHost host;
  host.AddPci("0000:00:04.0", "0x005e");
  host.AddPci("0000:00:05.0", "0x005e");
  host.AddNode("accel0");  // accel1 is gone
  host.AddProcess(4242, 1001, {"python3", "old.py"}, {host.paths().dev + "/accel0"});
  LoopbackHttpServer server(Metadata);
  PlainHttpClient http;
  FakeClock clock;
  HostDoctorReport report = RunHostDoctor(host.paths(), {"v4-16", 4, 0, {}}, {}, http,
                                          MetadataBaseUrl(server.address().c_str()), clock);
  EXPECT_FALSE(report.checks[0].ok);
  EXPECT_NE(report.checks[0].detail.find("2 v4 TPU chips"), std::string::npos);
  EXPECT_FALSE(report.checks[1].ok);
  EXPECT_NE(report.checks[1].detail.find("pid 4242 (alice): python3 old.py"), std::string::npos);
  EXPECT_FALSE(report.checks[2].ok);
  EXPECT_EQ(report.checks[2].detail, "metadata says worker 1, the TPU API worker 0");

  // No metadata server at all: named, and bounded by the timeout.
  std::string gone;
  {
    LoopbackHttpServer closed(Metadata);
    gone = closed.address();
  }
  report = RunHostDoctor(host.paths(), {}, {}, http, MetadataBaseUrl(gone.c_str()), clock);
  EXPECT_FALSE(report.checks[2].ok);
  EXPECT_EQ(report.checks[2].detail.rfind("the metadata server at " + gone + " does not answer", 0),
            0u)
      << report.checks[2].detail;
}

}  // namespace
}  // namespace tpufleet::agent::host
