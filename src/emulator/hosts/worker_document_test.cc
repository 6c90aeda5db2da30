#include "emulator/hosts/worker_document.h"

#include <gtest/gtest.h>

#include "emulator/hosts/metadata_server.h"

namespace tpufleet::emulator::hosts {
namespace {

WorkerDocumentInput Input() {
  WorkerDocumentInput in;
  in.version = 4;
  in.node_name = "projects/p/locations/us-central2-b/nodes/n1";
  in.node_id = "1234";
  in.accelerator_type = "v4-32";
  in.index = 1;
  for (int i = 0; i < 4; ++i) {
    in.workers.push_back({WorkerHostname("1234", i), "198.18.0." + std::to_string(2 + i)});
  }
  in.prefix_length = 18;
  in.gateway = "198.18.0.1";
  in.metadata = {{"ssh-keys", "alice:ssh-ed25519 AAAA alice"},
                 {"agent-worker-number", "99"},  // users cannot override the agent's
                 {"startup-script", "echo hi"}};
  return in;
}

// What `server` answers to a metadata client's GET of /computeMetadata/v1/<path>.
std::string Served(MetadataServer& server, const std::string& path) {
  HttpRequest r;
  r.method = "GET";
  r.target = "/computeMetadata/v1/" + path;
  r.headers["metadata-flavor"] = "Google";
  return server.Render(r, Clock::MonoTime()).body;
}

TEST(WorkerDocument, HostnamesFollowTheTpuVmScheme) {
  std::string h = WorkerHostname("1234", 3);
  EXPECT_EQ(h.size(), std::string("t1v-n-12345678-w-3").size());
  EXPECT_EQ(h.substr(0, 6), "t1v-n-");
  EXPECT_EQ(h.substr(14), "-w-3");
  EXPECT_EQ(WorkerHostname("1234", 3), h);
  EXPECT_NE(WorkerHostname("1235", 3), h);
}

TEST(WorkerDocument, EndpointsPutTheAddressThird) {
  std::vector<WorkerAddress> w = {{"h0", "198.18.0.2"}, {"h1", "198.18.0.3"}};
  std::string e = WorkerNetworkEndpoints("7", w);
  ASSERT_EQ(e.find("h0:"), 0u);
  size_t comma = e.find(',');
  ASSERT_NE(comma, std::string::npos);
  EXPECT_EQ(e.substr(comma - 11), ":198.18.0.2,h1" + e.substr(comma + 3));
  EXPECT_EQ(e.substr(e.size() - 11), ":198.18.0.3");
}

TEST(WorkerDocument, RoundTripsWhatTheInitNeeds) {
  Result<WorkerDocument> d = ParseWorkerDocument(BuildWorkerDocument(Input()));
  ASSERT_TRUE(d.ok()) << d.status().ToString();
  EXPECT_EQ(d->version, 4);
  EXPECT_EQ(d->index, 1);
  EXPECT_EQ(d->address, "198.18.0.3");
  EXPECT_EQ(d->gateway, "198.18.0.1");
  EXPECT_EQ(d->prefix_length, 18);
  EXPECT_EQ(d->hostname, WorkerHostname("1234", 1));
  EXPECT_EQ(d->domain, "us-central2-b.c.p.internal");
  ASSERT_EQ(d->hosts.size(), 4u);
  EXPECT_EQ(d->ssh_keys, "alice:ssh-ed25519 AAAA alice");
}

TEST(WorkerDocument, ServedAttributesAreThoseOfATpuVm) {
  MetadataServer server("seed");
  ASSERT_TRUE(server.SetDocument(BuildWorkerDocument(Input())).ok());
  auto get = [&](const std::string& path) { return Served(server, path); };
  EXPECT_EQ(get("instance/attributes/agent-worker-number"), "1");
  EXPECT_EQ(get("instance/attributes/accelerator-type"), "v4-32");
  EXPECT_EQ(get("instance/attributes/startup-script"), "echo hi");
  EXPECT_EQ(get("instance/attributes/instance-id"), "n1");
  EXPECT_EQ(get("instance/preempted"), "FALSE");
  EXPECT_EQ(get("instance/maintenance-event"), "NONE");
  EXPECT_EQ(get("instance/network-interfaces/0/ip"), "198.18.0.3");
  EXPECT_EQ(get("project/project-id"), "p");
  EXPECT_EQ(get("instance/name"), WorkerHostname("1234", 1));
  EXPECT_NE(get("instance/attributes/worker-network-endpoints").find(":198.18.0.5"),
            std::string::npos);
}

TEST(WorkerDocument, ProjectKeysAreServedAndAppliedUnlessTheNodeBlocksThem) {
  WorkerDocumentInput in = Input();
  in.project_metadata = {{"ssh-keys", "bob:ssh-ed25519 BBBB bob"}, {"enable-oslogin", "FALSE"}};
  MetadataServer server("seed");
  ASSERT_TRUE(server.SetDocument(BuildWorkerDocument(in)).ok());
  HttpRequest r;
  r.method = "GET";
  r.target = "/computeMetadata/v1/project/attributes/ssh-keys";
  r.headers["metadata-flavor"] = "Google";
  EXPECT_EQ(server.Render(r, Clock::MonoTime()).body, "bob:ssh-ed25519 BBBB bob");
  Result<WorkerDocument> d = ParseWorkerDocument(BuildWorkerDocument(in));
  ASSERT_TRUE(d.ok()) << d.status().ToString();
  EXPECT_EQ(d->ssh_keys, "alice:ssh-ed25519 AAAA alice\nbob:ssh-ed25519 BBBB bob");

  in.metadata["block-project-ssh-keys"] = "TRUE";
  d = ParseWorkerDocument(BuildWorkerDocument(in));
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(d->ssh_keys, "alice:ssh-ed25519 AAAA alice");
}

TEST(WorkerDocument, FlagsTurnIntoPreemptedAndMaintenanceEvent) {
  WorkerDocumentInput in = Input();
  in.preempted = true;
  in.maintenance = true;
  std::string doc = BuildWorkerDocument(in);
  EXPECT_NE(doc.find("\"preempted\": \"TRUE\""), std::string::npos);
  EXPECT_NE(doc.find("TERMINATE_ON_HOST_MAINTENANCE"), std::string::npos);
}

TEST(WorkerDocument, CarriesTheDataDisks) {
  WorkerDocumentInput in = Input();
  in.disks = {{"sdb", "data", 7, 3, false}, {"sdc", "ro-set-2", 7, 12, true}};
  Result<WorkerDocument> d = ParseWorkerDocument(BuildWorkerDocument(in));
  ASSERT_TRUE(d.ok()) << d.status().ToString();
  EXPECT_EQ(d->disks, in.disks);
  MetadataServer server("seed");
  ASSERT_TRUE(server.SetDocument(BuildWorkerDocument(in)).ok());
  auto get = [&](const std::string& path) { return Served(server, "instance/disks/" + path); };
  EXPECT_EQ(get(""), "0/\n1/\n2/\n");
  EXPECT_EQ(get("0/device-name"), "persistent-disk-0");
  EXPECT_EQ(get("1/device-name"), "data");
  EXPECT_EQ(get("1/mode"), "READ_WRITE");
  EXPECT_EQ(get("2/mode"), "READ_ONLY");
  EXPECT_EQ(get("2/index"), "2");
  // A name that would leave /dev/disk/by-id, or a device that is not sdX, is refused.
  for (DataDiskDevice bad : {DataDiskDevice{"sdb", "../../x", 7, 3, false},
                             DataDiskDevice{"sda", "data", 7, 3, false},
                             DataDiskDevice{"sdb/", "data", 7, 3, false}}) {
    in.disks = {bad};
    EXPECT_FALSE(ParseWorkerDocument(BuildWorkerDocument(in)).ok()) << bad.name << " " << bad.device;
  }
  EXPECT_TRUE(IsDiskName("a"));
  EXPECT_FALSE(IsDiskName("data-"));
  EXPECT_FALSE(IsDiskName("1data"));
  EXPECT_FALSE(IsDiskName(std::string(64, 'a')));
}

TEST(WorkerDocument, RejectsBadDocuments) {
  EXPECT_FALSE(ParseWorkerDocument("not json").ok());
  EXPECT_FALSE(ParseWorkerDocument("{}").ok());
  std::string doc = BuildWorkerDocument(Input());
  std::string bad = doc;
  bad.replace(bad.find("\"address\": \"198.18.0.3\"") + 12, 10, "1.2.3.4;rm");
  EXPECT_FALSE(ParseWorkerDocument(bad).ok());
  bad = doc;
  bad.replace(bad.find("tpufleet-worker/1"), 17, "tpufleet-worker/9");
  EXPECT_FALSE(ParseWorkerDocument(bad).ok());
}

}  // namespace
}  // namespace tpufleet::emulator::hosts
