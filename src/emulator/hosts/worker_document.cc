#include "emulator/hosts/worker_document.h"

#include <arpa/inet.h>

#include <nlohmann/json.hpp>

#include "emulator/hosts/address_pool.h"
#include "emulator/hosts/guest_agent.h"
#include "util/strings.h"

namespace tpufleet::emulator::hosts {
namespace {

using nlohmann::json;

struct NodeName {
  std::string project = "emulator-project";
  std::string zone = "us-central2-b";
  std::string node = "node";
};

NodeName ParseNodeName(std::string_view name) {
  NodeName out;
  std::vector<std::string> p = Split(name, '/');
  if (p.size() == 6 && p[0] == "projects" && p[2] == "locations" && p[4] == "nodes") {
    out.project = p[1];
    out.zone = p[3];
    out.node = p[5];
  }
  return out;
}

// A stable 12-digit number standing in for the project number.
std::string ProjectNumber(std::string_view project) {
  return std::to_string(100000000000ull + Fnv1a64(project) % 900000000000ull);
}

// A stable 19-digit number standing in for a worker VM's instance id.
std::string InstanceId(std::string_view node_id, int worker) {
  return std::to_string(1000000000000000000ull +
                        Fnv1a64(std::string(node_id) + "/" + std::to_string(worker)) %
                            8000000000000000000ull);
}

// The GCE machine type a TPU VM of this accelerator type runs on, or "" if unknown.
std::string MachineType(std::string_view accelerator_type) {
  std::string_view family = accelerator_type.substr(0, accelerator_type.find('-'));
  if (family == "v4") {
    return "ct4p-hightpu-4t";
  }
  if (family == "v5p") {
    return "ct5p-hightpu-4t";
  }
  if (family == "v5litepod") {
    return "ct5lp-hightpu-4t";
  }
  if (family == "v6e") {
    return "ct6e-standard-4t";
  }
  return "";
}

bool IsIpv4(const std::string& s) {
  in_addr a;
  return ::inet_pton(AF_INET, s.c_str(), &a) == 1;
}

// Hostnames go into /etc/hosts and sshd logs: letters, digits, '-' and '.' only.
bool IsHostname(const std::string& s) {
  if (s.empty() || s.size() > 253) {
    return false;
  }
  for (char c : s) {
    bool ok = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '.';
    if (!ok) {
      return false;
    }
  }
  return true;
}

std::string Domain(const NodeName& n) {
  return n.zone + ".c." + n.project + ".internal";
}

}  // namespace

std::string WorkerHostname(std::string_view node_id, int worker) {
  char hex[9];
  std::snprintf(hex, sizeof hex, "%08x", static_cast<unsigned>(Fnv1a64(node_id) & 0xffffffffu));
  return std::string("t1v-n-") + hex + "-w-" + std::to_string(worker);
}

std::string WorkerNetworkEndpoints(std::string_view node_id,
                                   const std::vector<WorkerAddress>& workers) {
  std::vector<std::string> parts;
  for (size_t i = 0; i < workers.size(); ++i) {
    parts.push_back(workers[i].hostname + ":" + InstanceId(node_id, static_cast<int>(i)) + ":" +
                    workers[i].address);
  }
  return Join(parts, ",");
}

std::string BuildWorkerDocument(const WorkerDocumentInput& in) {
  NodeName n = ParseNodeName(in.node_name);
  std::string project_number = ProjectNumber(n.project);
  const WorkerAddress& self = in.workers.at(static_cast<size_t>(in.index));

  json attributes = json::object();
  for (const auto& [k, v] : in.metadata) {
    attributes[k] = v;
  }
  // The attributes a TPU VM's agent sets win over user metadata of the same name.
  attributes["accelerator-type"] = in.accelerator_type;
  attributes["agent-worker-number"] = std::to_string(in.index);
  attributes["worker-network-endpoints"] = WorkerNetworkEndpoints(in.node_id, in.workers);
  attributes["instance-id"] = n.node;
  attributes["tpu-env"] = "ACCELERATOR_TYPE: '" + in.accelerator_type + "'\nNODE_ID: '" + n.node +
                          "'\nWORKER_ID: '" + std::to_string(in.index) + "'\nZONE: '" + n.zone +
                          "'\n";

  std::string email = project_number + "-compute@developer.gserviceaccount.com";
  json account = {{"aliases", "default"},
                  {"email", email},
                  {"scopes", "https://www.googleapis.com/auth/cloud-platform\n"}};
  uint32_t mask = in.prefix_length == 0 ? 0 : ~0u << (32 - in.prefix_length);
  // instance/disks/N/…, as GCE serves them: the boot disk, then the data disks.
  json instance_disks = json::object();
  auto add_disk = [&](const std::string& device_name, bool read_only) {
    std::string index = std::to_string(instance_disks.size());
    instance_disks[index] = {{"device-name", device_name},
                             {"index", index},
                             {"interface", "SCSI"},
                             {"mode", read_only ? "READ_ONLY" : "READ_WRITE"},
                             {"type", "PERSISTENT"}};
  };
  add_disk("persistent-disk-0", false);
  for (const DataDiskDevice& d : in.disks) {
    add_disk(d.name, d.read_only);
  }
  json instance = {
      {"disks", instance_disks},
      {"attributes", attributes},
      {"hostname", self.hostname + "." + Domain(n)},
      {"id", InstanceId(in.node_id, in.index)},
      {"name", self.hostname},
      {"zone", "projects/" + project_number + "/zones/" + n.zone},
      {"preempted", in.preempted ? "TRUE" : "FALSE"},
      {"maintenance-event", in.maintenance ? "TERMINATE_ON_HOST_MAINTENANCE" : "NONE"},
      {"network-interfaces",
       {{"0",
         {{"ip", self.address},
          {"gateway", in.gateway},
          {"subnetmask", FormatIpv4(mask)},
          {"network", "projects/" + project_number + "/networks/default"},
          {"access-configs", json::object()}}}}},
      {"service-accounts", {{"default", account}, {email, account}}},
  };
  if (std::string mt = MachineType(in.accelerator_type); !mt.empty()) {
    instance["machine-type"] = "projects/" + project_number + "/machineTypes/" + mt;
  }
  json hosts = json::array();
  for (const WorkerAddress& w : in.workers) {
    hosts.push_back({{"address", w.address}, {"hostname", w.hostname}});
  }
  json removed = json::array();
  for (int d : in.removed_devices) {
    removed.push_back(d);
  }
  json disks = json::array();
  for (const DataDiskDevice& d : in.disks) {
    disks.push_back({{"device", d.device},
                     {"name", d.name},
                     {"major", d.major},
                     {"minor", d.minor},
                     {"read_only", d.read_only}});
  }
  json doc = {
      {"format", kWorkerDocumentFormat},
      {"disks", disks},
      {"accelerators",
       {{"family", in.accelerator_family}, {"chips", in.chips_per_worker}, {"removed", removed}}},
      {"version", in.version},
      {"worker",
       {{"index", in.index},
        {"hostname", self.hostname},
        {"address", self.address},
        {"prefix_length", in.prefix_length},
        {"gateway", in.gateway},
        {"domain", Domain(n)},
        {"hosts", hosts}}},
      {"computeMetadata",
       {{"v1",
         {{"instance", instance},
          {"project",
           {{"project-id", n.project},
            {"numeric-project-id", project_number},
            {"attributes", in.project_metadata}}}}}}},
  };
  return doc.dump(2) + "\n";
}

bool IsDiskName(std::string_view name) {
  if (name.empty() || name.size() > 63 || name[0] < 'a' || name[0] > 'z' || name.back() == '-') {
    return false;
  }
  for (char c : name) {
    if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-')) {
      return false;
    }
  }
  return true;
}

Result<WorkerDocument> ParseWorkerDocument(std::string_view text) {
  json doc = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded() || !doc.is_object()) {
    return InvalidArgumentError("worker document: not JSON");
  }
  if (doc.value("format", "") != kWorkerDocumentFormat) {
    return InvalidArgumentError("worker document: format is not " +
                                std::string(kWorkerDocumentFormat));
  }
  const json& w = doc.value("worker", json::object());
  WorkerDocument out;
  out.version = doc.value("version", int64_t{0});
  out.index = w.value("index", -1);
  out.hostname = w.value("hostname", "");
  out.address = w.value("address", "");
  out.prefix_length = w.value("prefix_length", 0);
  out.gateway = w.value("gateway", "");
  out.domain = w.value("domain", "");
  if (out.index < 0 || !IsHostname(out.hostname) || !IsIpv4(out.address) || !IsIpv4(out.gateway) ||
      out.prefix_length < 8 || out.prefix_length > 30 ||
      (!out.domain.empty() && !IsHostname(out.domain))) {
    return InvalidArgumentError("worker document: bad \"worker\" section");
  }
  const json& accel = doc.value("accelerators", json::object());
  out.accelerators.family = accel.value("family", "");
  out.accelerators.chips = accel.value("chips", 0);
  for (const json& d : accel.value("removed", json::array())) {
    if (!d.is_number_integer()) {
      return InvalidArgumentError("worker document: bad entry in \"accelerators.removed\"");
    }
    out.accelerators.removed.insert(d.get<int>());
  }
  if (out.accelerators.chips < 0 || out.accelerators.chips > kMaxChipsPerWorker) {
    return InvalidArgumentError("worker document: bad \"accelerators.chips\"");
  }
  for (const json& d : doc.value("disks", json::array())) {
    DataDiskDevice disk;
    if (!d.is_object() || !d.value("major", json()).is_number_unsigned() ||
        !d.value("minor", json()).is_number_unsigned()) {
      return InvalidArgumentError("worker document: bad entry in \"disks\"");
    }
    disk.device = d.value("device", "");
    disk.name = d.value("name", "");
    disk.major = d["major"].get<uint32_t>();
    disk.minor = d["minor"].get<uint32_t>();
    disk.read_only = d.value("read_only", false);
    if (disk.device.size() != 3 || !StartsWith(disk.device, "sd") || disk.device[2] < 'b' ||
        disk.device[2] > 'z' || !IsDiskName(disk.name)) {
      return InvalidArgumentError("worker document: bad entry in \"disks\"");
    }
    out.disks.push_back(std::move(disk));
  }
  for (const json& h : w.value("hosts", json::array())) {
    WorkerAddress a{h.value("hostname", ""), h.value("address", "")};
    if (!IsHostname(a.hostname) || !IsIpv4(a.address)) {
      return InvalidArgumentError("worker document: bad entry in \"hosts\"");
    }
    out.hosts.push_back(std::move(a));
  }
  const json* attrs = &doc;
  for (const char* key : {"computeMetadata", "v1", "instance", "attributes"}) {
    if (!attrs->is_object() || !attrs->contains(key)) {
      return InvalidArgumentError("worker document: no computeMetadata/v1/instance/attributes");
    }
    attrs = &(*attrs)[key];
  }
  // The string attributes of the instance and of the project (which may have none).
  auto strings = [](const json& j) {
    std::map<std::string, std::string> m;
    if (!j.is_object()) {
      return m;
    }
    for (const auto& [k, v] : j.items()) {
      if (v.is_string()) {
        m[k] = v.template get<std::string>();
      }
    }
    return m;
  };
  const json& project = doc["computeMetadata"]["v1"].value("project", json::object());
  out.ssh_keys = MetadataSshKeys(
      strings(*attrs),
      strings(project.is_object() ? project.value("attributes", json::object()) : json()));
  return out;
}

}  // namespace tpufleet::emulator::hosts
