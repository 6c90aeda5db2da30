#include "core/yaml_reader.h"

#include <set>
#include <sstream>

#include <yaml-cpp/eventhandler.h>
#include <yaml-cpp/parser.h>

#include "util/strings.h"

namespace tpufleet::yaml {
namespace {

std::string Location(std::string_view origin, const YAML::Mark& mark) {
  std::string out(origin);
  if (!mark.is_null()) {
    out += ":" + std::to_string(mark.line + 1) + ":" + std::to_string(mark.column + 1);
  }
  return out;
}

// What a user would call the kind of node they wrote, for "expected X, found Y".
std::string KindName(const YAML::Node& node) {
  if (!node.IsDefined() || node.IsNull()) {
    return "nothing";
  }
  if (node.IsMap()) {
    return "a mapping";
  }
  if (node.IsSequence()) {
    return "a list";
  }
  return "\"" + node.Scalar() + "\"";
}

// Follows the depth of mappings and lists as the parser streams events, and stops the
// parse (by throwing TooDeep, caught in FindTooDeep) at the first node past the limit.
class DepthWatch : public YAML::EventHandler {
 public:
  struct TooDeep {
    YAML::Mark mark;
  };

  void OnDocumentStart(const YAML::Mark&) override {}
  void OnDocumentEnd() override {}
  void OnNull(const YAML::Mark&, YAML::anchor_t) override {}
  void OnAlias(const YAML::Mark&, YAML::anchor_t) override {}
  void OnScalar(const YAML::Mark&, const std::string&, YAML::anchor_t,
                const std::string&) override {}
  void OnSequenceStart(const YAML::Mark& mark, const std::string&, YAML::anchor_t,
                       YAML::EmitterStyle::value) override {
    Open(mark);
  }
  void OnSequenceEnd() override { --depth_; }
  void OnMapStart(const YAML::Mark& mark, const std::string&, YAML::anchor_t,
                  YAML::EmitterStyle::value) override {
    Open(mark);
  }
  void OnMapEnd() override { --depth_; }

 private:
  void Open(const YAML::Mark& mark) {
    if (++depth_ > kMaxNestingDepth) {
      throw TooDeep{mark};
    }
  }
  int depth_ = 0;
};

// Where the first document of `text` nests past kMaxNestingDepth; nullopt when it does
// not (or does not parse: YAML::Load reports that, with its own words).
std::optional<YAML::Mark> FindTooDeep(std::string_view text) {
  std::istringstream in{std::string(text)};
  DepthWatch watch;
  try {
    YAML::Parser parser(in);
    parser.HandleNextDocument(watch);
  } catch (const DepthWatch::TooDeep& deep) {
    return deep.mark;
  } catch (const YAML::Exception&) {
    // yaml-cpp's own guard (DeepRecursion, 500 levels) cannot fire first: ours is lower.
  }
  return std::nullopt;
}

}  // namespace

std::string Field::Where() const {
  YAML::Mark mark = node_.IsDefined() ? node_.Mark() : YAML::Mark::null_mark();
  return Location(origin_, mark.is_null() ? parent_mark_ : mark);
}

int Field::line() const {
  YAML::Mark mark = node_.IsDefined() ? node_.Mark() : parent_mark_;
  return mark.is_null() ? 0 : mark.line + 1;
}

Status Field::Error(std::string_view what) const {
  std::string prefix = Where() + ": ";
  if (!path_.empty()) {
    prefix += path_ + ": ";
  }
  return InvalidArgumentError(prefix + std::string(what));
}

Status Field::KeyError(std::string_view key, std::string_view what) const {
  YAML::Mark mark = node_.Mark();
  if (node_.IsMap()) {
    for (const auto& kv : node_) {
      if (kv.first.Scalar() == key) {
        mark = kv.first.Mark();
      }
    }
  }
  std::string field = path_.empty() ? std::string(key) : path_ + "." + std::string(key);
  return InvalidArgumentError(Location(origin_, mark) + ": " + field + ": " + std::string(what));
}

Status Field::CheckKeys(std::initializer_list<std::string_view> allowed) const {
  if (!node_.IsMap()) {
    return Error("expected a mapping of fields, found " + KindName(node_));
  }
  std::vector<std::string> names(allowed.begin(), allowed.end());
  std::set<std::string> seen;
  for (const auto& kv : node_) {
    if (!kv.first.IsScalar()) {
      return InvalidArgumentError(Location(origin_, kv.first.Mark()) + ": " +
                                  (path_.empty() ? "" : path_ + ": ") +
                                  "a field name must be plain text");
    }
    const std::string& key = kv.first.Scalar();
    if (!seen.insert(key).second) {
      return KeyError(key, "appears twice; give each field once");
    }
    bool known = false;
    for (std::string_view a : allowed) {
      known = known || a == key;
    }
    if (!known) {
      std::string msg = "unknown field" + DidYouMean(key, names) + "; expected one of: " +
                        Join(names, ", ");
      return KeyError(key, msg);
    }
  }
  return Status::Ok();
}

std::optional<Field> Field::Get(std::string_view key) const {
  if (!node_.IsMap()) {
    return std::nullopt;
  }
  for (const auto& kv : node_) {
    if (kv.first.IsScalar() && kv.first.Scalar() == key) {
      std::string child = path_.empty() ? std::string(key) : path_ + "." + std::string(key);
      return Field(kv.second, std::move(child), origin_, kv.first.Mark());
    }
  }
  return std::nullopt;
}

Result<Field> Field::Require(std::string_view key) const {
  std::optional<Field> f = Get(key);
  if (!f || f->IsNull()) {
    std::string field = path_.empty() ? std::string(key) : path_ + "." + std::string(key);
    YAML::Mark mark = f ? f->parent_mark_ : (node_.IsDefined() ? node_.Mark() : parent_mark_);
    return InvalidArgumentError(Location(origin_, mark) + ": " + field +
                                ": this field is required");
  }
  return *f;
}

Result<std::vector<Field>> Field::Items() const {
  if (!node_.IsSequence()) {
    return Error("expected a list, found " + KindName(node_));
  }
  std::vector<Field> out;
  size_t i = 0;
  for (const auto& item : node_) {
    out.emplace_back(item, path_ + "[" + std::to_string(i++) + "]", origin_, node_.Mark());
  }
  return out;
}

Result<std::vector<std::pair<std::string, Field>>> Field::Entries() const {
  if (!node_.IsMap()) {
    return Error("expected a mapping, found " + KindName(node_));
  }
  std::vector<std::pair<std::string, Field>> out;
  std::set<std::string> seen;
  for (const auto& kv : node_) {
    if (!kv.first.IsScalar()) {
      return InvalidArgumentError(Location(origin_, kv.first.Mark()) + ": " + path_ +
                                  ": a key must be plain text");
    }
    const std::string& key = kv.first.Scalar();
    if (!seen.insert(key).second) {
      return KeyError(key, "appears twice; give each key once");
    }
    std::string child = path_.empty() ? key : path_ + "." + key;
    out.emplace_back(key, Field(kv.second, std::move(child), origin_, kv.first.Mark()));
  }
  return out;
}

Result<std::string> Field::String() const {
  if (!node_.IsScalar() || node_.Scalar().empty()) {
    return Error("expected text, found " + KindName(node_));
  }
  return node_.Scalar();
}

Result<long long> Field::Int() const {
  long long v = 0;
  if (!node_.IsScalar() || !ParseInt(node_.Scalar(), &v)) {
    return Error("expected a whole number, found " + KindName(node_));
  }
  return v;
}

Result<double> Field::Number() const {
  double v = 0;
  if (!node_.IsScalar() || !ParseDouble(node_.Scalar(), &v)) {
    return Error("expected a number, found " + KindName(node_));
  }
  return v;
}

Result<bool> Field::Bool() const {
  if (node_.IsScalar()) {
    const std::string& s = node_.Scalar();
    if (s == "true" || s == "yes" || s == "True" || s == "TRUE") {
      return true;
    }
    if (s == "false" || s == "no" || s == "False" || s == "FALSE") {
      return false;
    }
  }
  return Error("expected true or false, found " + KindName(node_));
}

Result<std::chrono::seconds> Field::Duration() const {
  if (!node_.IsScalar()) {
    return Error("expected a duration like 30m, 6h or 2d, found " + KindName(node_));
  }
  Result<std::chrono::seconds> d = ParseDuration(node_.Scalar());
  if (!d.ok()) {
    return Error(d.status().message());
  }
  return d;
}

Result<std::vector<std::string>> Field::StringList() const {
  if (node_.IsScalar()) {
    TPUFLEET_ASSIGN_OR_RETURN(std::string one, String());
    return std::vector<std::string>{one};
  }
  TPUFLEET_ASSIGN_OR_RETURN(std::vector<Field> items, Items());
  std::vector<std::string> out;
  for (const Field& item : items) {
    TPUFLEET_ASSIGN_OR_RETURN(std::string s, item.String());
    out.push_back(std::move(s));
  }
  return out;
}

Result<Field> ParseDocument(std::string_view text, std::string_view origin) {
  if (std::optional<YAML::Mark> deep = FindTooDeep(text)) {
    return InvalidArgumentError(Location(origin, *deep) + ": nesting is too deep: more than " +
                                std::to_string(kMaxNestingDepth) +
                                " levels of mappings and lists (tpufleet's files need about 5)");
  }
  YAML::Node root;
  try {
    root = YAML::Load(std::string(text));
  } catch (const YAML::Exception& e) {
    return InvalidArgumentError(Location(origin, e.mark) + ": not valid YAML: " + e.msg +
                                " (check the indentation and quoting on this line or the one "
                                "before)");
  }
  if (!root.IsDefined() || root.IsNull()) {
    return InvalidArgumentError(std::string(origin) + ": the file is empty");
  }
  return Field(root, "", origin);
}

}  // namespace tpufleet::yaml
