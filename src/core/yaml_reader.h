// A thin reader over yaml-cpp for tpufleet's own documents (fleet specs, the catalog)
// that turns every problem into one Status naming the place and the field:
//
//   fleet.yaml:12:5: nodes[0].zones[1]: unknown zone "us-central-2b" (did you mean us-central2-b?)
//
// Field wraps a node with its dotted path; its accessors check the node's kind and
// convert, so parsers read like a list of fields. For tpufleet's own YAML only: core's
// parsers and the emulator's config use it; the catalog and spec headers keep yaml-cpp
// types out of their APIs.
//
// Thread-safety: values over immutable nodes; use from one thread.
#pragma once

#include <yaml-cpp/yaml.h>

#include <chrono>
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "util/status.h"

namespace tpufleet::yaml {

/// The deepest nesting of mappings and lists ParseDocument accepts. tpufleet's own
/// documents nest about 5 levels (nodes[0].idle.after); a deeper one is a mistake or an
/// attack, and yaml-cpp builds its tree by recursion, so the limit also keeps the stack
/// small whatever the input.
inline constexpr int kMaxNestingDepth = 64;

class Field {
 public:
  /// `origin` must outlive the Field (it is the file name of the document).
  Field(YAML::Node node, std::string path, std::string_view origin, YAML::Mark parent_mark = YAML::Mark::null_mark())
      : node_(std::move(node)), path_(std::move(path)), origin_(origin), parent_mark_(parent_mark) {}

  const std::string& path() const { return path_; }
  bool IsMap() const { return node_.IsMap(); }
  bool IsSequence() const { return node_.IsSequence(); }
  bool IsNull() const { return !node_.IsDefined() || node_.IsNull(); }

  /// "origin:line:col: path: what" (the location of this node, or of its parent map
  /// when the node itself is absent).
  Status Error(std::string_view what) const;
  /// Like Error, but for a problem with the key `key` of this map.
  Status KeyError(std::string_view key, std::string_view what) const;

  /// InvalidArgument unless this is a map whose keys are all in `allowed`; an unknown
  /// key gets the nearest allowed names and the full list.
  Status CheckKeys(std::initializer_list<std::string_view> allowed) const;

  /// The value under `key` of this map, or nullopt when the key is absent.
  std::optional<Field> Get(std::string_view key) const;
  /// The value under `key`, or an error saying the field is required.
  Result<Field> Require(std::string_view key) const;

  /// Elements of a sequence ("path[i]"), or an error when this is not a sequence.
  Result<std::vector<Field>> Items() const;
  /// Entries of a map in document order ("path.key"), or an error when not a map.
  Result<std::vector<std::pair<std::string, Field>>> Entries() const;

  Result<std::string> String() const;  // a non-empty scalar
  Result<long long> Int() const;
  Result<double> Number() const;
  Result<bool> Bool() const;           // true/false/yes/no
  Result<std::chrono::seconds> Duration() const;  // "6h", "30m", "90s" (util/strings.h)
  /// A sequence of non-empty strings; a single scalar is taken as a list of one.
  Result<std::vector<std::string>> StringList() const;

  /// 1-based line of this node (0 when unknown).
  int line() const;

 private:
  std::string Where() const;

  YAML::Node node_;
  std::string path_;
  std::string_view origin_;
  YAML::Mark parent_mark_;
};

/// Parses `text` into the root Field. A syntax error (bad indentation, a tab, an
/// unclosed quote) comes back as InvalidArgument with its line and column.
/// An empty document is an error: "origin: the file is empty". Nesting deeper than
/// kMaxNestingDepth is refused before any tree is built, naming the line where it
/// goes too deep; the check streams events and stops there, so depth costs no stack.
Result<Field> ParseDocument(std::string_view text, std::string_view origin);

}  // namespace tpufleet::yaml
