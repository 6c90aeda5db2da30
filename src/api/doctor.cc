#include "api/doctor.h"

#include <nlohmann/json.hpp>

#include "api/json_internal.h"

namespace tpufleet::api {

using internal::ArrayOf;
using internal::Dump;
using internal::kDocumentIndent;
using nlohmann::json;

std::string ToJson(const DoctorSummary& summary) {
  json workers = ArrayOf(summary.workers, [](const DoctorWorker& w) {
    json checks = ArrayOf(w.checks, [](const DoctorCheck& c) {
      return json{{"name", c.name}, {"ok", c.ok}, {"detail", c.detail}, {"fix", c.fix}};
    });
    return json{{"worker", w.worker},
                {"node", w.node},
                {"index", w.index},
                {"ok", w.ok},
                {"checks", std::move(checks)}};
  });
  return Dump({{"workers", std::move(workers)}, {"ok", summary.ok}, {"failed", summary.failed}},
              kDocumentIndent);
}

}  // namespace tpufleet::api
