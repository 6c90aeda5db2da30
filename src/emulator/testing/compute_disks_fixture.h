// DiskFixture: ApiFixture with Compute Engine disks kept in a temporary directory, for
// the unit tests of the disks API and of attaching disks to TPU nodes. Disks are made
// through the Compute API (POST …/disks) like a client would.
//
// Thread-safety: one test thread.
#pragma once

#include <string>

#include "emulator/testing/api_fixture.h"
#include "util/testing/temp_dir.h"

namespace tpufleet::emulator {

class DiskFixture : public ApiFixture {
 protected:
  static constexpr const char* kDisks = "/compute/v1/projects/p/zones/us-central2-b/disks";

  DiskFixture() {
    EmulatorConfig config;
    config.disk_dir = tmp_.Path("disks");
    Reset(std::move(config));
  }

  /// Inserts disk `name` and lets time pass until its operation is done; returns the
  /// disk as disks.get shows it then.
  Json CreateDisk(const std::string& name, const std::string& type = "pd-balanced",
                  const std::string& size_gb = "10") {
    Reply r = Post(kDisks, Json{{"name", name}, {"type", type}, {"sizeGb", size_gb}});
    EXPECT_EQ(r.status, 200) << r.text;
    WaitComputeOperation(r.json);
    return Get(std::string(kDisks) + "/" + name).json;
  }

  /// Polls the Compute operation `op` (as an insert or delete returned it) while time
  /// passes, until it is DONE; returns its last state.
  Json WaitComputeOperation(const Json& op) {
    std::string path = "/compute/v1/projects/p/zones/us-central2-b/operations/" +
                       op.value("name", std::string());
    Json now = op;
    for (int i = 0; i < 600 && now.value("status", "") != "DONE"; ++i) {
      Pass(milliseconds(100));
      now = Get(path).json;
    }
    return now;
  }

  /// Patches node `id`'s dataDisks to `disks` (updateMask=data_disks) and waits for the
  /// operation; returns the patch's reply (its operation, or its error).
  Reply SetDisks(const std::string& id, const Json& disks) {
    Reply r = Patch(NodePath(id) + "?updateMask=data_disks", Json{{"dataDisks", disks}});
    if (r.status == 200) {
      Json done = WaitOperation(r.json["name"].get<std::string>());
      EXPECT_FALSE(done.contains("error")) << done;
    }
    return r;
  }

  static Json Attached(const std::string& disk, const std::string& mode) {
    return Json{{"sourceDisk", "projects/p/zones/us-central2-b/disks/" + disk}, {"mode", mode}};
  }

  /// The users of disk `name` (empty when it has none).
  Json UsersOf(const std::string& name) {
    return Get(std::string(kDisks) + "/" + name).json.value("users", Json::array());
  }

  TempDir tmp_;
};

}  // namespace tpufleet::emulator
