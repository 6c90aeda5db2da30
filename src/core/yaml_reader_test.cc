#include "core/yaml_reader.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "util/strings.h"
#include "util/testing/status_printer.h"

namespace tpufleet::yaml {
namespace {

using namespace std::chrono_literals;

constexpr std::string_view kOrigin = "fleet.yaml";

bool Contains(std::string_view haystack, std::string_view needle) {
  return haystack.find(needle) != std::string_view::npos;
}

// The root of `text`, which must parse.
Field Root(std::string_view text) {
  Result<Field> root = ParseDocument(text, kOrigin);
  EXPECT_TRUE(root.ok()) << root.status().ToString();
  return root.ok() ? *root : Field(YAML::Node(), "", kOrigin);
}

// The field under `key` of `text`'s root, which must be there.
Field At(std::string_view text, std::string_view key) {
  std::optional<Field> f = Root(text).Get(key);
  EXPECT_TRUE(f.has_value()) << key;
  return f ? *f : Field(YAML::Node(), std::string(key), kOrigin);
}

TEST(ParseDocument, EmptyDocumentIsAnError) {
  for (const char* text : {"", "\n\n", "# only a comment\n", "~\n"}) {
    Result<Field> r = ParseDocument(text, kOrigin);
    ASSERT_FALSE(r.ok()) << "'" << text << "'";
    EXPECT_EQ(r.status(), InvalidArgumentError("fleet.yaml: the file is empty"));
  }
}

TEST(ParseDocument, SyntaxErrorGivesLineAndColumn) {
  // Line 3 has an unclosed flow list; yaml-cpp notices at the end of the text.
  Result<Field> r = ParseDocument("name: a\ntype: v4-8\nzones: [a, b\n", kOrigin);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_TRUE(StartsWith(r.status().message(), "fleet.yaml:4:1: not valid YAML: "))
      << r.status().message();
  EXPECT_NE(r.status().message().find("check the indentation and quoting"), std::string::npos);
}

TEST(ParseDocument, BadIndentationPointsAtTheLine) {
  Result<Field> r = ParseDocument("nodes:\n  - name: a\n   type: v4-8\n", kOrigin);
  ASSERT_FALSE(r.ok());
  EXPECT_TRUE(StartsWith(r.status().message(), "fleet.yaml:3:")) << r.status().message();
}

TEST(ParseDocument, TabIndentation) {
  Result<Field> r = ParseDocument("name: a\nnode:\n\ttype: v4-8\n", kOrigin);
  ASSERT_FALSE(r.ok());
  EXPECT_TRUE(StartsWith(r.status().message(), "fleet.yaml:3:")) << r.status().message();
}

TEST(CheckKeys, AcceptsKnownKeys) {
  EXPECT_EQ(Root("name: a\ntype: v4-8\n").CheckKeys({"name", "type", "zones"}), Status::Ok());
}

TEST(CheckKeys, UnknownFieldGetsSuggestionAndList) {
  Status s = Root("name: a\ntype: v4-8\nzonez: [a]\n").CheckKeys({"name", "type", "zones"});
  EXPECT_EQ(s, InvalidArgumentError("fleet.yaml:3:1: zonez: unknown field (did you mean zones?); "
                                    "expected one of: name, type, zones"));
}

TEST(CheckKeys, UnknownFieldFarFromAnyNameHasNoSuggestion) {
  Status s = Root("node:\n  colour: red\n").Get("node")->CheckKeys({"name", "type"});
  EXPECT_EQ(s, InvalidArgumentError(
                   "fleet.yaml:2:3: node.colour: unknown field; expected one of: name, type"));
}

TEST(CheckKeys, DuplicateKey) {
  Status s = Root("name: a\ntype: v4-8\nname: b\n").CheckKeys({"name", "type"});
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("name: appears twice; give each field once"), std::string::npos)
      << s.message();
  EXPECT_TRUE(StartsWith(s.message(), "fleet.yaml:")) << s.message();
}

TEST(CheckKeys, NotAMapping) {
  EXPECT_EQ(Root("- a\n- b\n").CheckKeys({"name"}),
            InvalidArgumentError("fleet.yaml:1:1: expected a mapping of fields, found a list"));
  EXPECT_EQ(
      At("node: v4-8\n", "node").CheckKeys({"name"}),
      InvalidArgumentError("fleet.yaml:1:7: node: expected a mapping of fields, found \"v4-8\""));
}

TEST(Require, MissingFieldNamesTheMapAndTheField) {
  Result<Field> r = Root("name: a\n").Require("type");
  EXPECT_EQ(r.status(), InvalidArgumentError("fleet.yaml:1:1: type: this field is required"));
  Result<Field> nested = Root("x: 1\nnode:\n  name: a\n").Get("node")->Require("type");
  EXPECT_EQ(nested.status(),
            InvalidArgumentError("fleet.yaml:3:3: node.type: this field is required"));
}

TEST(Require, NullValueCountsAsMissingAndPointsAtTheKey) {
  Result<Field> r = Root("name: a\ntype:\n").Require("type");
  EXPECT_EQ(r.status(), InvalidArgumentError("fleet.yaml:2:1: type: this field is required"));
}

TEST(Require, PresentFieldIsReturned) {
  Result<Field> r = Root("name: a\ntype: v4-8\n").Require("type");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->path(), "type");
  EXPECT_EQ(r->String().value(), "v4-8");
  EXPECT_EQ(r->line(), 2);
}

TEST(Get, AbsentKeyOrNotAMapping) {
  EXPECT_FALSE(Root("name: a\n").Get("type").has_value());
  EXPECT_FALSE(Root("- a\n").Get("name").has_value());
  EXPECT_TRUE(Root("name: a\n").Get("name").has_value());
}

TEST(Items, PathsAndErrorsNameTheIndex) {
  Result<std::vector<Field>> items = At("zones: [us-central2-b, {x: 1}]\n", "zones").Items();
  ASSERT_TRUE(items.ok());
  ASSERT_EQ(items->size(), 2u);
  EXPECT_EQ((*items)[0].path(), "zones[0]");
  EXPECT_EQ((*items)[1].path(), "zones[1]");
  EXPECT_EQ((*items)[0].String().value(), "us-central2-b");
  EXPECT_EQ((*items)[1].String().status(),
            InvalidArgumentError("fleet.yaml:1:24: zones[1]: expected text, found a mapping"));
}

TEST(Items, NestedPaths) {
  Field nodes = At("nodes:\n  - name: a\n    zones: [x, y]\n", "nodes");
  Result<std::vector<Field>> items = nodes.Items();
  ASSERT_TRUE(items.ok());
  std::optional<Field> zones = (*items)[0].Get("zones");
  ASSERT_TRUE(zones.has_value());
  EXPECT_EQ(zones->path(), "nodes[0].zones");
  Result<std::vector<Field>> z = zones->Items();
  ASSERT_TRUE(z.ok());
  EXPECT_EQ((*z)[1].path(), "nodes[0].zones[1]");
  EXPECT_EQ((*z)[1].Error("unknown zone").message(),
            "fleet.yaml:3:16: nodes[0].zones[1]: unknown zone");
  EXPECT_EQ((*z)[1].line(), 3);
}

TEST(Items, NotAList) {
  EXPECT_EQ(At("zones: {a: 1}\n", "zones").Items().status(),
            InvalidArgumentError("fleet.yaml:1:8: zones: expected a list, found a mapping"));
  EXPECT_EQ(
      At("zones: us-central2-b\n", "zones").Items().status(),
      InvalidArgumentError("fleet.yaml:1:8: zones: expected a list, found \"us-central2-b\""));
}

TEST(Entries, DocumentOrderAndPaths) {
  Result<std::vector<std::pair<std::string, Field>>> e =
      At("families:\n  v5p: 1\n  v4: 2\n  v2: 3\n", "families").Entries();
  ASSERT_TRUE(e.ok());
  ASSERT_EQ(e->size(), 3u);
  EXPECT_EQ((*e)[0].first, "v5p");
  EXPECT_EQ((*e)[1].first, "v4");
  EXPECT_EQ((*e)[2].first, "v2");
  EXPECT_EQ((*e)[1].second.path(), "families.v4");
  EXPECT_EQ((*e)[1].second.Int().value(), 2);
}

TEST(Entries, DuplicateKey) {
  Status s = At("families:\n  v4: 1\n  v4: 2\n", "families").Entries().status();
  EXPECT_NE(s.message().find("families.v4: appears twice; give each key once"), std::string::npos)
      << s.message();
}

TEST(Entries, NotAMapping) {
  EXPECT_EQ(At("families: [v4]\n", "families").Entries().status(),
            InvalidArgumentError("fleet.yaml:1:11: families: expected a mapping, found a list"));
}

TEST(KeyError, PointsAtTheKey) {
  Field t = At("topologies:\n  8: 2x2x1\n  big: 2x2x2\n", "topologies");
  EXPECT_EQ(t.KeyError("big", "expected a slice size"),
            InvalidArgumentError("fleet.yaml:3:3: topologies.big: expected a slice size"));
}

TEST(Scalars, String) {
  EXPECT_EQ(At("a: hello world\n", "a").String().value(), "hello world");
  EXPECT_EQ(At("a: \"\"\n", "a").String().status(),
            InvalidArgumentError("fleet.yaml:1:4: a: expected text, found \"\""));
  EXPECT_EQ(At("a: [x]\n", "a").String().status(),
            InvalidArgumentError("fleet.yaml:1:4: a: expected text, found a list"));
}

TEST(Scalars, Int) {
  EXPECT_EQ(At("a: 42\n", "a").Int().value(), 42);
  for (const char* text : {"a: 1.5\n", "a: four\n", "a: -3\n", "a: 1e3\n"}) {
    Result<long long> r = At(text, "a").Int();
    ASSERT_FALSE(r.ok()) << text;
    EXPECT_TRUE(
        StartsWith(r.status().message(), "fleet.yaml:1:4: a: expected a whole number, found \""))
        << r.status().message();
  }
}

TEST(Scalars, Number) {
  EXPECT_EQ(At("a: 3.22\n", "a").Number().value(), 3.22);
  EXPECT_EQ(At("a: 4\n", "a").Number().value(), 4.0);
  EXPECT_EQ(At("a: .nan\n", "a").Number().status(),
            InvalidArgumentError("fleet.yaml:1:4: a: expected a number, found \".nan\""));
  EXPECT_EQ(At("a: {b: 1}\n", "a").Number().status(),
            InvalidArgumentError("fleet.yaml:1:4: a: expected a number, found a mapping"));
}

TEST(Scalars, Bool) {
  for (const char* t : {"true", "yes", "True", "TRUE"}) {
    EXPECT_TRUE(At(std::string("a: ") + t + "\n", "a").Bool().value()) << t;
  }
  for (const char* f : {"false", "no", "False", "FALSE"}) {
    EXPECT_FALSE(At(std::string("a: ") + f + "\n", "a").Bool().value()) << f;
  }
  EXPECT_EQ(At("a: maybe\n", "a").Bool().status(),
            InvalidArgumentError("fleet.yaml:1:4: a: expected true or false, found \"maybe\""));
}

TEST(Scalars, Duration) {
  EXPECT_EQ(At("a: 6h\n", "a").Duration().value(), 6h);
  EXPECT_EQ(At("a: 1h30m\n", "a").Duration().value(), 90min);
  Result<std::chrono::seconds> bad = At("a: 6 hours\n", "a").Duration();
  EXPECT_EQ(bad.status(),
            InvalidArgumentError("fleet.yaml:1:4: a: '6 hours' is not a duration; expected a "
                                 "number with a unit, like 90s, 30m, 6h, 2d or 1h30m"));
  EXPECT_EQ(At("a: [6h]\n", "a").Duration().status(),
            InvalidArgumentError(
                "fleet.yaml:1:4: a: expected a duration like 30m, 6h or 2d, found a list"));
}

TEST(Scalars, StringList) {
  EXPECT_EQ(At("a: us-central2-b\n", "a").StringList().value(),
            std::vector<std::string>{"us-central2-b"});
  EXPECT_EQ(At("a: [x, y]\n", "a").StringList().value(), (std::vector<std::string>{"x", "y"}));
  EXPECT_EQ(At("a: [x, [y]]\n", "a").StringList().status(),
            InvalidArgumentError("fleet.yaml:1:8: a[1]: expected text, found a list"));
}

TEST(Field, LineOfNestedNodes) {
  Field root = Root("a: 1\nb:\n  c:\n    d: 4\n");
  EXPECT_EQ(root.line(), 1);
  std::optional<Field> d = root.Get("b")->Get("c")->Get("d");
  ASSERT_TRUE(d.has_value());
  EXPECT_EQ(d->path(), "b.c.d");
  EXPECT_EQ(d->line(), 4);
}

// Issue 11: 500 levels said only "not valid YAML: bad file" (yaml-cpp's DeepRecursion).
TEST(Issue11, NestingPastTheLimitNamesTheLineAndTheLimit) {
  // Flow style on line 2: the root mapping is level 1, so the 64th "[" (column 3 + 64)
  // opens level 65.
  std::string flow = "x: 1\ny: " + std::string(500, '[') + std::string(500, ']') + "\n";
  EXPECT_EQ(ParseDocument(flow, kOrigin).status(),
            InvalidArgumentError("fleet.yaml:2:67: nesting is too deep: more than 64 levels of "
                                 "mappings and lists (tpufleet's files need about 5)"));
  // Exactly at the limit it parses.
  std::string at_limit =
      std::string(kMaxNestingDepth, '[') + std::string(kMaxNestingDepth, ']') + "\n";
  EXPECT_TRUE(ParseDocument(at_limit, kOrigin).ok());
  std::string over = "[" + at_limit;
  over.insert(over.size() - 1, "]");
  EXPECT_FALSE(ParseDocument(over, kOrigin).ok());
  // A syntax error in a shallow document keeps its own message.
  Result<Field> bad = ParseDocument("a: [1, 2\n", kOrigin);
  EXPECT_TRUE(Contains(bad.status().message(), "not valid YAML")) << bad.status().ToString();
}

}  // namespace
}  // namespace tpufleet::yaml
