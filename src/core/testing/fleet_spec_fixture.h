// The fleet spec tests' fixture, keys and helpers, shared by fleet_spec_test.cc and
// fleet_spec_node_test.cc (split by what they test).
#pragma once

#include <gtest/gtest.h>

#include <initializer_list>
#include <string>
#include <utility>
#include <vector>

#include "core/fleet_spec.h"

namespace tpufleet::testing {

// Whether `text` contains `part`; on failure, shows both.
inline ::testing::AssertionResult Contains(const std::string& text, const std::string& part) {
  if (text.find(part) != std::string::npos) {
    return ::testing::AssertionSuccess();
  }
  return ::testing::AssertionFailure() << "\n  message: " << text << "\n  lacks:   " << part;
}

// Real keys made with ssh-keygen for these tests (public halves only).
inline constexpr char kEd25519[] =
    "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIF8CMJzNhdkO7jeYCceTkgcAMVdmkDM5OkhGSfnuAsrl "
    "alice@laptop";
inline constexpr char kEd25519Bob[] =
    "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIEJRPDF2Ls8M/iUvYINLgiHOimRyl2Qw5/Ne86WVqpLx bob@laptop";
inline constexpr char kRsa[] =
    "ssh-rsa "
    "AAAAB3NzaC1yc2EAAAADAQABAAABgQCxaxJTzH81N+u2pATmC40s6O/kigWbcgz+w4FQQmOoU3a8a50tUyBhSno7EVzA"
    "MczhFkyjKmfiWxbUzbNJ31vlv2bJutCdVvWGeyc0iGEJbHW3/oAl/FXhjtpEXNB4nA7cggJkD8D4S5T79MKAa14ldajB"
    "lADntDgtP11So/zKL7iQVUe/AsG7m8JxpvWxz2S8R/UDqMaHsoQALSXwkVSRS2kGqFkRFV3vCHzGCzjprJWgix8554jb"
    "WZzQ0gYFjXMikrOZCbZ+wtQNNaOrYY+Yiq8DbstUQYDn0moQtkhHsaWiwaKyCDRpEuPtRHeH1EO5QyYVGk0zAwnC2Nki"
    "yKz+ZUXlTMYC9rVrRt5rH4yt6+EpMncAXA+6IHXcA3ZeKscYok+u0D24qFa2nrNDz4YHZIdegiOzfWibMHA/WTgg2Tw3"
    "LjNaSLgMGRwlYiviyMFRlo6Ef4Va92ZlGsA2YTlMxIuVV/gvS84j2P3DduvYrFG9lG5Hqm9vhR5+i6vteDE= "
    "bob@workstation";
inline constexpr char kEcdsa256[] =
    "ecdsa-sha2-nistp256 "
    "AAAAE2VjZHNhLXNoYTItbmlzdHAyNTYAAAAIbmlzdHAyNTYAAABBBJdwV/Ggn6TuzdoCHl95zsHCrDHFUc1IF0hsBLUr"
    "WTJiD7UknF8DikjKR3SZvin4IOugMBwG8FP67D4p9xPPQNw= ec@x";
// A security-key (FIDO) ed25519 key, built by hand: type, 32-byte key, application.
inline constexpr char kSkEd25519[] =
    "sk-ssh-ed25519@openssh.com "
    "AAAAGnNrLXNzaC1lZDI1NTE5QG9wZW5zc2guY29tAAAAIAABAgMEBQYHCAkKCwwNDg8QERITFBUWFxgZGhscHR4fAAAA"
    "BHNzaDo=";

// kEd25519 without its last 3 bytes: still base64, but the key is cut short.
inline constexpr char kTruncated[] =
    "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIF8CMJzNhdkO7jeYCceTkgcAMVdmkDM5OkhGSfnu";
// A blob whose lengths add up but whose ed25519 key is 31 bytes.
inline constexpr char kShortEd25519[] =
    "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAHwAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=";

class FleetSpecTest : public ::testing::Test {
 protected:
  void SetUp() override {
    Result<Catalog> c = ParseCatalog(BuiltinCatalogYaml(), "built-in catalog");
    ASSERT_TRUE(c.ok()) << c.status().ToString();
    catalog_ = std::move(*c);
  }

  Result<FleetSpec> Parse(const std::string& text) {
    return ParseFleetSpec(text, "fleet.yaml", catalog_);
  }

  // A spec that must fail; returns its message.
  std::string Error(const std::string& text) {
    Result<FleetSpec> r = Parse(text);
    EXPECT_FALSE(r.ok()) << "parsed, but should not have:\n" << text;
    if (r.ok()) {
      return "";
    }
    EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
    return r.status().message();
  }

  // Whether `text` fails to parse with a message that contains each of `parts`.
  ::testing::AssertionResult FailsWith(const std::string& text,
                                       std::initializer_list<std::string> parts) {
    std::string message = Error(text);
    for (const std::string& part : parts) {
      if (::testing::AssertionResult r = Contains(message, part); !r) {
        return r;
      }
    }
    return ::testing::AssertionSuccess();
  }

  // A whole spec and a part of the message it must fail with.
  struct BadSpec {
    std::string text;
    std::string message;
  };
  // Each case's text fails with a message that contains its `message`.
  void ExpectErrors(const std::vector<BadSpec>& cases) {
    for (const BadSpec& c : cases) {
      SCOPED_TRACE(c.text);
      EXPECT_TRUE(Contains(Error(c.text), c.message));
    }
  }

  // A node field (what V4Node() appends) and a part of the message it must fail with.
  struct BadNodeField {
    std::string more;
    std::string message;
  };
  // Each case's V4Node(more) fails with a message that contains its `message`.
  void ExpectNodeErrors(const std::vector<BadNodeField>& cases) {
    std::vector<BadSpec> specs;
    for (const BadNodeField& c : cases) {
      specs.push_back({V4Node(c.more), c.message});
    }
    ExpectErrors(specs);
  }

  // Lines 1-3 of most specs below; node entries start on line 4.
  static std::string Head() { return "fleet: demo\nproject: demo-project\nnodes:\n"; }
  // Head() and a v4-8 node "n" (lines 4-5); more node fields follow from line 6.
  static std::string V4Node(const std::string& more = "") {
    return Head() + "  - name: n\n    type: v4-8\n" + more;
  }

  Catalog catalog_;
};

}  // namespace tpufleet::testing
