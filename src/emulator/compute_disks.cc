// The disk model: types, insert checks, source-disk paths, backing files.
#include "emulator/compute_disks.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>

#include "util/file.h"
#include "util/strings.h"

namespace tpufleet::emulator {
namespace {

// Sizes from Compute Engine's diskTypes (validDiskSize "10GB-65536GB"; Hyperdisk
// Balanced 4 GB up); the defaults are those gcloud fills in (constants.py
// DEFAULT_DISK_SIZE_GB_MAP), 100 GB where it leaves the size to the service.
constexpr DiskTypeInfo kDiskTypes[] = {
    {"hyperdisk-balanced", "Hyperdisk Balanced", 4, 65536, 100, true},
    {"pd-balanced", "Balanced Persistent Disk", 10, 65536, 100, false},
    {"pd-ssd", "SSD Persistent Disk", 10, 65536, 100, false},
    {"pd-standard", "Standard Persistent Disk", 10, 65536, 500, false},
};

// Compute Engine's pattern for resource names, as its errors quote it.
constexpr std::string_view kNamePattern =
    "(?:[a-z](?:[-a-z0-9]{0,61}[a-z0-9])?|[1-9][0-9]{0,19})";

bool ValidDiskName(std::string_view n) {
  if (n.empty() || n.size() > 63 || n[0] < 'a' || n[0] > 'z' || n.back() == '-') {
    return false;
  }
  return std::all_of(n.begin(), n.end(), [](char ch) {
    return (ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9') || ch == '-';
  });
}

Status BadField(std::string_view field, std::string_view value, std::string_view why) {
  return InvalidArgumentError("Invalid value for field 'resource." + std::string(field) + "': '" +
                              std::string(value) + "'. " + std::string(why));
}

std::string Text(const Json& v) {
  return v.is_string() ? v.get<std::string>() : v.dump();
}

// A label key or value: lower-case letters, digits, '_' and '-', at most 63
// characters; keys start with a letter.
bool ValidLabelPart(std::string_view s, bool key) {
  if (s.size() > 63 || (key && (s.empty() || s[0] < 'a' || s[0] > 'z'))) {
    return false;
  }
  return std::all_of(s.begin(), s.end(), [](char ch) {
    return (ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9') || ch == '_' || ch == '-' ||
           static_cast<unsigned char>(ch) >= 0x80;
  });
}

}  // namespace

std::span<const DiskTypeInfo> DiskTypes() {
  return kDiskTypes;
}

const DiskTypeInfo* FindDiskType(std::string_view name) {
  for (const DiskTypeInfo& t : kDiskTypes) {
    if (t.name == name) {
      return &t;
    }
  }
  return nullptr;
}

std::string DiskRecord::DiskPath(std::string_view project, std::string_view zone,
                                 std::string_view name) {
  return "projects/" + std::string(project) + "/zones/" + std::string(zone) + "/disks/" +
         std::string(name);
}

std::string_view DiskStatusName(DiskRecord::Phase phase) {
  switch (phase) {
    case DiskRecord::Phase::kCreating:
      return "CREATING";
    case DiskRecord::Phase::kReady:
      return "READY";
    case DiskRecord::Phase::kDeleting:
      return "DELETING";
  }
  return "READY";
}

Result<DiskInsert> ParseDiskInsert(const Json& body, std::string_view project,
                                   std::string_view zone) {
  if (!body.is_object()) {
    return InvalidArgumentError("Invalid JSON payload received. Expected an object.");
  }
  DiskInsert in;
  if (!body.contains("name") || !body["name"].is_string() ||
      body["name"].get<std::string>().empty()) {
    return InvalidArgumentError("Required field 'resource.name' not specified");
  }
  in.name = body["name"].get<std::string>();
  if (!ValidDiskName(in.name)) {
    return BadField("name", in.name, "Must be a match of regex '" + std::string(kNamePattern) + "'");
  }
  for (std::string_view source : {"sourceImage", "sourceSnapshot", "sourceDisk",
                                  "sourceInstantSnapshot", "sourceStorageObject"}) {
    if (body.contains(std::string(source)) && !body[std::string(source)].is_null()) {
      return BadField(source, Text(body[std::string(source)]),
                      "The emulator makes blank disks only; create the disk without a "
                      "source and copy the data onto it from a TPU VM.");
    }
  }

  in.type = std::string(kDefaultDiskType);
  if (body.contains("type") && !body["type"].is_null()) {
    std::string given = Text(body["type"]);
    // A name, or a URL or path ending in zones/ZONE/diskTypes/NAME.
    std::string name = given;
    if (size_t at = given.rfind("/diskTypes/"); at != std::string::npos) {
      name = given.substr(at + 11);
      // Before it: "zones/ZONE", or "…projects/PROJECT/zones/ZONE" of this disk's zone.
      std::string before = "/" + given.substr(0, at);
      std::string own = "/projects/" + std::string(project) + "/zones/" + std::string(zone);
      bool same_zone = before == "/zones/" + std::string(zone) ||
                       (before.size() >= own.size() &&
                        before.compare(before.size() - own.size(), own.size(), own) == 0);
      if (!same_zone) {
        name.clear();
      }
    }
    if (FindDiskType(name) == nullptr) {
      return BadField("type", given, "The referenced diskType resource cannot be found.");
    }
    in.type = name;
  }
  const DiskTypeInfo& type = *FindDiskType(in.type);

  in.size_gb = type.default_gb;
  if (body.contains("sizeGb") && !body["sizeGb"].is_null()) {
    std::string given = Text(body["sizeGb"]);
    long long gb = 0;
    if (!ParseInt(given, &gb)) {
      return InvalidArgumentError("Invalid value for field 'resource.sizeGb': '" + given +
                                  "'. Invalid int64 value.");
    }
    if (gb < type.min_gb) {
      return BadField("sizeGb", given,
                      "Disk size cannot be smaller than " + std::to_string(type.min_gb) + " GB.");
    }
    if (gb > type.max_gb) {
      return BadField("sizeGb", given,
                      "Disk size cannot be larger than " + std::to_string(type.max_gb) + " GB.");
    }
    in.size_gb = gb;
  }

  if (body.contains("description") && body["description"].is_string()) {
    in.description = body["description"].get<std::string>();
  }
  if (body.contains("labels") && !body["labels"].is_null()) {
    if (!body["labels"].is_object()) {
      return BadField("labels", Text(body["labels"]), "Labels must be a map of strings.");
    }
    for (const auto& [k, v] : body["labels"].items()) {
      if (!v.is_string() || !ValidLabelPart(k, true) || !ValidLabelPart(v.get<std::string>(), false)) {
        return BadField("labels", k,
                        "Label keys and values may hold lower-case letters, digits, '_' and "
                        "'-', at most 63 characters; keys start with a letter.");
      }
      in.labels[k] = v;
    }
  }

  if (body.contains("accessMode") && !body["accessMode"].is_null()) {
    std::string mode = Text(body["accessMode"]);
    if (!type.hyperdisk) {
      return BadField("accessMode", mode,
                      "Access mode can only be set on Hyperdisk volumes; '" + in.type +
                          "' has none.");
    }
    if (mode != kAccessReadWriteSingle && mode != kAccessReadOnlyMany &&
        mode != kAccessReadWriteMany) {
      return BadField("accessMode", mode,
                      "Must be one of READ_WRITE_SINGLE, READ_ONLY_MANY, READ_WRITE_MANY.");
    }
    in.access_mode = mode;
  } else if (type.hyperdisk) {
    in.access_mode = std::string(kAccessReadWriteSingle);
  }
  return in;
}

std::optional<std::string> DiskPathOfSource(std::string_view source_disk) {
  std::string_view s = source_disk;
  if (size_t at = s.find("/compute/"); at != std::string_view::npos && s.find("://") != std::string_view::npos) {
    // https://HOST/compute/VERSION/projects/…: keep what follows the version.
    size_t projects = s.find("/projects/", at);
    if (projects == std::string_view::npos) {
      return std::nullopt;
    }
    s = s.substr(projects + 1);
  }
  std::vector<std::string> parts = Split(s, '/');
  if (parts.size() != 6 || parts[0] != "projects" || parts[2] != "zones" || parts[4] != "disks" ||
      parts[1].empty() || parts[3].empty() || !ValidDiskName(parts[5])) {
    return std::nullopt;
  }
  return DiskRecord::DiskPath(parts[1], parts[3], parts[5]);
}

Result<std::string> DiskImages::Create(std::string_view project, std::string_view zone,
                                       std::string_view name, long long size_gb) const {
  if (dir_.empty()) {
    return std::string();
  }
  std::string dir = dir_ + "/" + std::string(project) + "/" + std::string(zone);
  TPUFLEET_TRY(MakePrivateDirs(dir));
  std::string path = dir + "/" + std::string(name) + ".img";
  // O_NOFOLLOW and a fresh file: nothing planted at that name is written through.
  ::unlink(path.c_str());
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (fd < 0) {
    return ErrnoStatus(path, errno);
  }
  uint64_t bytes = static_cast<uint64_t>(size_gb) * kBytesPerDiskGb;
  if (::ftruncate(fd, static_cast<off_t>(bytes)) != 0) {
    int err = errno;
    ::close(fd);
    ::unlink(path.c_str());
    if (err == EFBIG || err == EINVAL) {
      return InvalidArgumentError("the emulator's state dir " + dir_ + " cannot hold a disk of " +
                                  std::to_string(size_gb) + " GB (its file system refuses a file "
                                  "that large); choose a smaller size");
    }
    return ErrnoStatus(path, err);
  }
  ::close(fd);
  return path;
}

Status DiskImages::Remove(const std::string& path) const {
  if (path.empty()) {
    return Status::Ok();
  }
  if (::unlink(path.c_str()) != 0 && errno != ENOENT) {
    return ErrnoStatus(path, errno);
  }
  return Status::Ok();
}

}  // namespace tpufleet::emulator
