// Compute's list pages (compute_api.cc routes the lists here): maxResults, pageToken and
// the filter language gcloud writes, for every Compute collection the emulator lists
// (disks, diskTypes, operations).
#include <regex>

#include "emulator/api_internal.h"
#include "util/strings.h"

namespace tpufleet::emulator {
namespace {

// Compute's list pages: maxResults defaults to 500 and may not exceed it.
constexpr long long kComputeMaxResults = 500;
// The longest filter taken: gcloud's rewrites are a few terms.
constexpr size_t kMaxFilterBytes = 4096;

// One term of a Compute filter: FIELD eq|ne VALUE (a quoted regular expression that must
// match the whole value, or a bare word).
struct FilterTerm {
  std::string field;  // "name", "status", "labels.team"
  bool negate = false;
  std::regex pattern;
};

// Parses Compute's filter language as gcloud writes it (filter_rewrite.py): terms
// `FIELD eq "RE"` or `FIELD ne VALUE`, ANDed by enclosing each in parentheses.
Result<std::vector<FilterTerm>> ParseFilter(std::string_view text) {
  std::vector<FilterTerm> terms;
  auto bad = [&] {
    return InvalidArgumentError("Invalid value for field 'filter': '" + std::string(text) +
                                "'. Invalid list filter expression.");
  };
  if (text.size() > kMaxFilterBytes) {
    return bad();
  }
  size_t i = 0;
  auto skip = [&] {
    while (i < text.size() && (text[i] == ' ' || text[i] == '(' || text[i] == ')')) {
      ++i;
    }
  };
  auto word = [&] {
    size_t start = i;
    while (i < text.size() && text[i] != ' ' && text[i] != '(' && text[i] != ')') {
      ++i;
    }
    return std::string(text.substr(start, i - start));
  };
  for (skip(); i < text.size(); skip()) {
    FilterTerm t;
    t.field = word();
    skip();
    std::string op = word();
    if (t.field.empty() || (op != "eq" && op != "ne")) {
      return bad();
    }
    t.negate = op == "ne";
    skip();
    std::string value;
    if (i < text.size() && text[i] == '"') {
      for (++i; i < text.size() && text[i] != '"'; ++i) {
        if (text[i] == '\\' && i + 1 < text.size() && text[i + 1] == '"') {
          ++i;
        }
        value += text[i];
      }
      if (i >= text.size()) {
        return bad();
      }
      ++i;
    } else {
      value = word();
    }
    try {
      t.pattern = std::regex(value, std::regex::ECMAScript);
    } catch (const std::regex_error&) {
      return bad();
    }
    terms.push_back(std::move(t));
  }
  return terms;
}

// Whether the rendered resource `item` passes every term.
bool Matches(const Json& item, const std::vector<FilterTerm>& terms) {
  for (const FilterTerm& t : terms) {
    const Json* v = &item;
    for (const std::string& part : Split(t.field, '.')) {
      v = v->is_object() && v->contains(part) ? &(*v)[part] : nullptr;
      if (v == nullptr) {
        break;
      }
    }
    std::string text = v == nullptr ? "" : v->is_string() ? v->get<std::string>() : v->dump();
    if (std::regex_match(text, t.pattern) == t.negate) {
      return false;
    }
  }
  return true;
}

}  // namespace

ComputeOr<Json> ApiServerImpl::ComputePage(
    const Call& c, const std::vector<std::pair<std::string, Json>>& items) const {
  long long max = kComputeMaxResults;
  if (std::string m = c.req->Query("maxResults"); !m.empty()) {
    if (!ParseInt(m, &max) || max < 0 || max > kComputeMaxResults) {
      return ComputeInvalid("Invalid value for field 'maxResults': '" + m +
                            "'. Must be in the range [0, 500].");
    }
    if (max == 0) {
      max = kComputeMaxResults;
    }
  }
  std::vector<FilterTerm> terms;
  if (std::string f = c.req->Query("filter"); !f.empty()) {
    Result<std::vector<FilterTerm>> parsed = ParseFilter(f);
    if (!parsed.ok()) {
      return ComputeInvalid(parsed.status().message());
    }
    terms = std::move(*parsed);
  }
  std::string after;
  if (std::string token = c.req->Query("pageToken"); !token.empty()) {
    Result<std::string> key = DecodePageToken(token);
    if (!key.ok()) {
      return ComputeInvalid("Invalid value for field 'pageToken': '" + token + "'.");
    }
    after = *key;
  }
  Json out{{"items", Json::array()}};
  for (const auto& [key, item] : items) {
    if ((!after.empty() && key <= after) || !Matches(item, terms)) {
      continue;
    }
    if (static_cast<long long>(out["items"].size()) == max) {
      out["nextPageToken"] = EncodePageToken(after);
      break;
    }
    out["items"].push_back(item);
    after = key;
  }
  return out;
}

}  // namespace tpufleet::emulator
