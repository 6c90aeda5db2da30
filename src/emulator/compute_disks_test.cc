// The disk model without the server: what a disks.insert body may say, how a
// sourceDisk names a disk, and the sparse files behind disks.
#include "emulator/compute_disks.h"

#include <sys/stat.h>

#include <gtest/gtest.h>

#include "util/testing/temp_dir.h"

namespace tpufleet::emulator {
namespace {

constexpr const char* kZone = "us-central2-b";

Result<DiskInsert> Parse(const Json& body) {
  return ParseDiskInsert(body, "p", kZone);
}

TEST(ComputeDisks, InsertDefaultsToAStandardDiskOfGcloudsDefaultSize) {
  Result<DiskInsert> in = Parse({{"name", "data"}});
  ASSERT_TRUE(in.ok()) << in.status().ToString();
  EXPECT_EQ(in->type, "pd-standard");
  EXPECT_EQ(in->size_gb, 500);
  EXPECT_EQ(in->access_mode, "");
}

TEST(ComputeDisks, InsertTakesTheTypeAsANameOrAUrlOfItsZone) {
  for (std::string type :
       {std::string("pd-ssd"),
        "https://compute.googleapis.com/compute/v1/projects/p/zones/" + std::string(kZone) +
            "/diskTypes/pd-ssd",
        "http://127.0.0.1:8080/compute/v1/projects/p/zones/" + std::string(kZone) +
            "/diskTypes/pd-ssd",
        "projects/p/zones/" + std::string(kZone) + "/diskTypes/pd-ssd",
        "zones/" + std::string(kZone) + "/diskTypes/pd-ssd"}) {
    Result<DiskInsert> in = Parse({{"name", "d"}, {"type", type}, {"sizeGb", "10"}});
    ASSERT_TRUE(in.ok()) << type << ": " << in.status().ToString();
    EXPECT_EQ(in->type, "pd-ssd") << type;
    EXPECT_EQ(in->size_gb, 10);
  }
}

TEST(ComputeDisks, InsertRefusesATypeOfAnotherZoneOrProjectOrUnknown) {
  for (std::string type : std::vector<std::string>{"pd-ultra", "projects/p/zones/europe-west4-a/diskTypes/pd-ssd",
                                                   "projects/q/zones/us-central2-b/diskTypes/pd-ssd"}) {
    Result<DiskInsert> in = Parse({{"name", "d"}, {"type", type}});
    ASSERT_FALSE(in.ok()) << type;
    EXPECT_EQ(in.status().message(), "Invalid value for field 'resource.type': '" + type +
                                         "'. The referenced diskType resource cannot be found.");
  }
}

TEST(ComputeDisks, InsertChecksTheSizeAgainstTheTypesLimits) {
  Result<DiskInsert> small = Parse({{"name", "d"}, {"sizeGb", "5"}});
  ASSERT_FALSE(small.ok());
  EXPECT_EQ(small.status().message(),
            "Invalid value for field 'resource.sizeGb': '5'. Disk size cannot be smaller than "
            "10 GB.");
  Result<DiskInsert> big = Parse({{"name", "d"}, {"sizeGb", 65537}});
  ASSERT_FALSE(big.ok());
  EXPECT_EQ(big.status().message(),
            "Invalid value for field 'resource.sizeGb': '65537'. Disk size cannot be larger "
            "than 65536 GB.");
  Result<DiskInsert> junk = Parse({{"name", "d"}, {"sizeGb", "ten"}});
  ASSERT_FALSE(junk.ok());
  EXPECT_EQ(junk.status().message(),
            "Invalid value for field 'resource.sizeGb': 'ten'. Invalid int64 value.");
  // Hyperdisk Balanced starts lower.
  Result<DiskInsert> hd = Parse({{"name", "d"}, {"type", "hyperdisk-balanced"}, {"sizeGb", 4}});
  ASSERT_TRUE(hd.ok()) << hd.status().ToString();
  EXPECT_EQ(hd->access_mode, "READ_WRITE_SINGLE");
}

TEST(ComputeDisks, InsertChecksTheName) {
  for (std::string name : std::vector<std::string>{"Data", "1data", "data-", "data_set", std::string(64, 'a')}) {
    Result<DiskInsert> in = Parse({{"name", name}});
    ASSERT_FALSE(in.ok()) << name;
    EXPECT_NE(in.status().message().find("Invalid value for field 'resource.name': '" + name +
                                         "'. Must be a match of regex"),
              std::string::npos)
        << in.status().message();
  }
  EXPECT_EQ(Parse(Json::object()).status().message(),
            "Required field 'resource.name' not specified");
}

TEST(ComputeDisks, InsertRefusesSourcesAndAccessModesOfNonHyperdisks) {
  Result<DiskInsert> image =
      Parse({{"name", "d"}, {"sourceImage", "projects/debian-cloud/global/images/debian-12"}});
  ASSERT_FALSE(image.ok());
  EXPECT_NE(image.status().message().find("'resource.sourceImage'"), std::string::npos);
  Result<DiskInsert> mode =
      Parse({{"name", "d"}, {"type", "pd-balanced"}, {"accessMode", "READ_ONLY_MANY"}});
  ASSERT_FALSE(mode.ok());
  EXPECT_NE(mode.status().message().find("only be set on Hyperdisk"), std::string::npos);
  Result<DiskInsert> ro = Parse(
      {{"name", "d"}, {"type", "hyperdisk-balanced"}, {"accessMode", "READ_ONLY_MANY"}});
  ASSERT_TRUE(ro.ok());
  EXPECT_EQ(ro->access_mode, "READ_ONLY_MANY");
}

TEST(ComputeDisks, InsertKeepsLabelsAndDescriptionAndChecksLabels) {
  Result<DiskInsert> in =
      Parse({{"name", "d"}, {"description", "imagenet"}, {"labels", {{"team", "vision"}}}});
  ASSERT_TRUE(in.ok());
  EXPECT_EQ(in->description, "imagenet");
  EXPECT_EQ(in->labels, (Json{{"team", "vision"}}));
  EXPECT_FALSE(Parse({{"name", "d"}, {"labels", {{"Team", "x"}}}}).ok());
}

TEST(ComputeDisks, SourceDiskIsAPathOrAComputeUrlOfAZonalDisk) {
  EXPECT_EQ(DiskPathOfSource("projects/p/zones/z1/disks/d"), "projects/p/zones/z1/disks/d");
  EXPECT_EQ(DiskPathOfSource("https://www.googleapis.com/compute/v1/projects/p/zones/z1/disks/d"),
            "projects/p/zones/z1/disks/d");
  EXPECT_EQ(DiskPathOfSource("projects/p/regions/r/disks/d"), std::nullopt);
  EXPECT_EQ(DiskPathOfSource("d"), std::nullopt);
  EXPECT_EQ(DiskPathOfSource("projects/p/zones/z1/disks/D"), std::nullopt);
  EXPECT_EQ(DiskPathOfSource("projects/p/zones/z1/disks/d/x"), std::nullopt);
}

TEST(ComputeDisks, ImagesAreSparseFilesOfTheDisksSizeRemovedWithIt) {
  TempDir tmp;
  DiskImages images(tmp.Path("disks"));
  Result<std::string> path = images.Create("p", kZone, "data", 10);
  ASSERT_TRUE(path.ok()) << path.status().ToString();
  EXPECT_EQ(*path, tmp.Path("disks") + "/p/" + kZone + "/data.img");
  struct stat st {};
  ASSERT_EQ(::stat(path->c_str(), &st), 0);
  EXPECT_EQ(static_cast<uint64_t>(st.st_size), 10 * kBytesPerDiskGb);
  EXPECT_LT(static_cast<uint64_t>(st.st_blocks) * 512, uint64_t{1} << 20) << "not sparse";
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  // The directories are the emulator's alone.
  ASSERT_EQ(::stat(tmp.Path("disks").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0077, 0u);

  ASSERT_TRUE(images.Remove(*path).ok());
  EXPECT_NE(::stat(path->c_str(), &st), 0);
  EXPECT_TRUE(images.Remove(*path).ok()) << "a file already gone is no error";
}

TEST(ComputeDisks, ImagesWithoutADirAreNone) {
  DiskImages none("");
  Result<std::string> path = none.Create("p", kZone, "data", 10);
  ASSERT_TRUE(path.ok());
  EXPECT_EQ(*path, "");
  EXPECT_TRUE(none.Remove("").ok());
}

}  // namespace
}  // namespace tpufleet::emulator
