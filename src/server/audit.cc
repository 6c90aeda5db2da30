#include "server/audit.h"

#include <algorithm>
#include <array>

#include "util/log.h"
#include "util/strings.h"

namespace tpufleet::server {
namespace {

constexpr std::string_view kHidden = "…";
// Words in a flag's name that say its value is a secret.
constexpr std::array<std::string_view, 4> kSecretWords = {"token", "secret", "password", "key"};

// Whether the value of flag `name` (without dashes) is kept out of the log.
bool SecretFlag(std::string_view name) {
  std::string lower = AsciiLower(name);
  return lower == "env" || std::any_of(kSecretWords.begin(), kSecretWords.end(),
                                       [&](std::string_view w) {
                                         return lower.find(w) != std::string::npos;
                                       });
}

// --env's value NAME=VALUE as NAME=…; any other secret flag's value as ….
std::string Hidden(std::string_view flag, const std::string& value) {
  size_t eq = value.find('=');
  if (AsciiLower(flag) == "env" && eq != std::string::npos) {
    return value.substr(0, eq + 1) + std::string(kHidden);
  }
  return std::string(kHidden);
}

}  // namespace

std::string AuditAction(const std::vector<std::string>& argv) {
  std::vector<std::string> words;
  for (size_t i = 0; i < argv.size(); ++i) {
    const std::string& a = argv[i];
    if (a == "--") {
      words.push_back(i + 1 < argv.size() ? "-- " + std::string(kHidden) : "--");
      break;
    }
    if (!StartsWith(a, "--")) {
      words.push_back(a);
      continue;
    }
    size_t eq = a.find('=');
    std::string flag = a.substr(2, eq == std::string::npos ? std::string::npos : eq - 2);
    if (!SecretFlag(flag)) {
      words.push_back(a);
    } else if (eq != std::string::npos) {
      words.push_back(a.substr(0, eq + 1) + Hidden(flag, a.substr(eq + 1)));
    } else {
      words.push_back(a);
      if (i + 1 < argv.size()) {
        words.push_back(Hidden(flag, argv[++i]));
      }
    }
  }
  std::string action = Join(words, " ");
  if (action.size() > kMaxAuditActionBytes) {
    size_t cut = kMaxAuditActionBytes - kHidden.size();
    while (cut > 0 && (static_cast<unsigned char>(action[cut]) & 0xC0) == 0x80) {
      --cut;  // not inside a UTF-8 sequence
    }
    action = action.substr(0, cut) + std::string(kHidden);
  }
  return action;
}

void WriteAudit(Store& store, Clock::WallTime now, const std::string& person,
                const std::string& action, const std::string& outcome) {
  AuditRecord record;
  record.time = now;
  record.person = person;
  record.action = action;
  record.outcome = outcome;
  if (Status s = store.AddAudit(record); !s.ok()) {
    Log(LogLevel::kWarn, "the audit log did not take \"" + person + " " + action +
                             "\": " + s.message());
  }
}

}  // namespace tpufleet::server
