#include "emulator/system_params.h"

#include <initializer_list>
#include <optional>

#include <nlohmann/json.hpp>

#include "util/strings.h"

namespace tpufleet::emulator {
namespace {

using Json = nlohmann::json;

// The last value of the first of `names` that the request has, or nullopt.
std::optional<std::string> LastOf(const HttpRequest& r, std::initializer_list<const char*> names) {
  for (const char* name : names) {
    if (r.HasQuery(name)) {
      return r.Query(name);
    }
  }
  return std::nullopt;
}

Status BadSelection(std::string_view text) {
  return InvalidArgumentError("Invalid field selection " + std::string(text));
}

bool NameChar(char ch) {
  return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
         ch == '_' || ch == '$' || ch == '@' || ch == '-' || ch == '*';
}

// A recursive-descent reader of the partial-response grammar:
//   selection := item (',' item)*
//   item      := path ['(' selection ')']
//   path      := name ('/' name)*        ('.' is read as '/', as a FieldMask writes it)
class SelectionParser {
 public:
  explicit SelectionParser(std::string_view text) : text_(text) {}

  Result<FieldSelection> Parse() {
    FieldSelection root;
    TPUFLEET_TRY(Selection(root, 0));
    if (pos_ != text_.size()) {
      return BadSelection(text_);
    }
    return root;
  }

 private:
  // Nesting deeper than any TPU message: a hostile selection, not a request.
  static constexpr int kMaxDepth = 16;

  Status Selection(FieldSelection& into, int depth) {
    if (depth > kMaxDepth) {
      return BadSelection(text_);
    }
    do {
      SkipSpaces();
      TPUFLEET_TRY(Item(into, depth));
      SkipSpaces();
    } while (Consume(','));
    return Status::Ok();
  }

  Status Item(FieldSelection& into, int depth) {
    FieldSelection* at = &into;
    do {
      size_t start = pos_;
      while (pos_ < text_.size() && NameChar(text_[pos_])) {
        ++pos_;
      }
      if (pos_ == start) {
        return BadSelection(text_);
      }
      at = &at->sub[std::string(text_.substr(start, pos_ - start))];
    } while (Consume('/') || Consume('.'));
    if (Consume('(')) {
      if (at->whole) {
        return Status::Ok();  // already whole: the sub-selection adds nothing
      }
      TPUFLEET_TRY(Selection(*at, depth + 1));
      if (!Consume(')')) {
        return BadSelection(text_);
      }
      return Status::Ok();
    }
    at->whole = true;
    at->sub.clear();
    return Status::Ok();
  }

  bool Consume(char ch) {
    if (pos_ < text_.size() && text_[pos_] == ch) {
      ++pos_;
      return true;
    }
    return false;
  }
  void SkipSpaces() {
    while (pos_ < text_.size() && text_[pos_] == ' ') {
      ++pos_;
    }
  }

  std::string_view text_;
  size_t pos_ = 0;
};

// `v` with only the fields `sel` picks; a list is picked from element by element.
Json Pick(const Json& v, const FieldSelection& sel) {
  if (sel.whole) {
    return v;
  }
  if (v.is_array()) {
    Json out = Json::array();
    for (const Json& e : v) {
      out.push_back(Pick(e, sel));
    }
    return out;
  }
  if (!v.is_object()) {
    return v;  // a scalar with a sub-selection: the scalar
  }
  Json out = Json::object();
  auto star = sel.sub.find("*");
  for (const auto& [key, value] : v.items()) {
    auto it = sel.sub.find(key);
    if (it != sel.sub.end()) {
      out[key] = Pick(value, it->second);
    } else if (star != sel.sub.end()) {
      out[key] = Pick(value, star->second);
    }
  }
  return out;
}

bool IsJson(const HttpResponse& r) {
  return StartsWith(r.content_type, "application/json");
}

}  // namespace

Result<FieldSelection> ParseFieldSelection(std::string_view text) {
  if (text.size() > kMaxFieldSelectionBytes) {
    return BadSelection(text.substr(0, 64));
  }
  return SelectionParser(text).Parse();
}

Result<bool> ParseQueryBool(std::string_view value, std::string_view field) {
  std::string v = AsciiLower(value);
  if (v == "true" || v == "1") {
    return true;
  }
  if (v == "false" || v == "0") {
    return false;
  }
  return InvalidArgumentError("Invalid value at '" + std::string(field) + "' (TYPE_BOOL), \"" +
                              std::string(value.substr(0, 64)) + "\"");
}

Result<SystemParams> ParseSystemParams(const HttpRequest& request) {
  SystemParams p;
  // Google's REST clients (gax) send "json;enum-encoding=int": JSON, enums as numbers.
  // The emulator writes enum names whatever the encoding asked (proto3 JSON parsers
  // take both).
  if (std::optional<std::string> alt = LastOf(request, {"$alt", "alt"});
      alt && !alt->empty() && Split(*alt, ';')[0] != "json") {
    return InvalidArgumentError("Invalid value at 'alt', \"" + alt->substr(0, 64) +
                                "\": the emulator answers only alt=json.");
  }
  if (LastOf(request, {"$callback", "callback"})) {
    return InvalidArgumentError(
        "Invalid value at 'callback': the emulator serves no JSONP callbacks.");
  }
  if (std::optional<std::string> pretty = LastOf(request, {"$prettyPrint", "prettyPrint"})) {
    TPUFLEET_ASSIGN_OR_RETURN(p.pretty, ParseQueryBool(*pretty, "prettyPrint"));
  }
  std::optional<std::string> fields = LastOf(request, {"$fields", "fields"});
  if (!fields && !request.Header("x-goog-fieldmask").empty()) {
    fields = request.Header("x-goog-fieldmask");
  }
  if (fields && !Trim(*fields).empty()) {
    TPUFLEET_ASSIGN_OR_RETURN(FieldSelection sel, ParseFieldSelection(*fields));
    p.fields = std::make_shared<const FieldSelection>(std::move(sel));
  }
  return p;
}

HttpResponse ApplySystemParams(const SystemParams& params, HttpResponse response) {
  bool pick = params.fields != nullptr && response.status == 200;
  if ((!pick && params.pretty) || !IsJson(response)) {
    return response;
  }
  Json body = Json::parse(response.body, nullptr, /*allow_exceptions=*/false);
  if (body.is_discarded()) {
    return response;
  }
  if (pick) {
    body = Pick(body, *params.fields);
  }
  response.body =
      body.dump(params.pretty ? 2 : -1, ' ', false, Json::error_handler_t::replace) + "\n";
  return response;
}

}  // namespace tpufleet::emulator
