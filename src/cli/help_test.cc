// The CLI's help, usage errors and flags, in-process (Main() with string streams), and
// the App that carries the command rows: what `help` lists, what a typo gets, and that
// rows belong to their App.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "cli/app.h"
#include "cli/testing/run_cli.h"
#include "util/strings.h"

namespace tpufleet::cli {
namespace {

using cli_testing::Contains;
using cli_testing::HasTableRow;
using cli_testing::kCent;
using cli_testing::Output;
using cli_testing::Tpufleet;
using cli_testing::TpufleetJson;
using nlohmann::json;

// ---- Help and usage errors.

TEST(Help, NoArgumentsPrintsHelpOnStderrAndExits2) {
  Output o = Tpufleet({});
  EXPECT_EQ(o.code, 2);
  EXPECT_EQ(o.out, "");
  EXPECT_TRUE(Contains(o.err, "Usage: tpufleet COMMAND [ARGS] [--json] [--catalog FILE]"));
  EXPECT_TRUE(Contains(o.err, "  catalog "));
}

TEST(Help, HelpListsEveryCommand) {
  for (const std::vector<std::string>& argv :
       std::vector<std::vector<std::string>>{{"help"}, {"--help"}, {"-h"}}) {
    Output o = Tpufleet(argv);
    EXPECT_EQ(o.code, 0) << argv[0];
    EXPECT_EQ(o.err, "");
    for (const char* name : {"catalog", "estimate", "plan", "validate", "help"}) {
      EXPECT_TRUE(HasTableRow(o.out, std::string("  ") + name)) << name << "\n" << o.out;
    }
    for (const Command& c : CliCommands()) {
      if (c.hidden) {  // run by tpufleet's own files (ssh-proxy), not by people
        EXPECT_FALSE(Contains(o.out, "  " + c.name + " ")) << c.name;
        continue;
      }
      EXPECT_TRUE(
          Contains(o.out, "  " + c.name + std::string(12 - c.name.size(), ' ') + c.summary + "\n"))
          << c.name;
    }
  }
}

// Rows belong to the App that main builds, not to the process: a second App in the
// same process (a test's, or the server's for another user) sees only its own.
TEST(Issue11, EachAppRunsItsOwnCommandRows) {
  App with_extra{CliCommands(), nullptr};
  with_extra.commands.push_back({"hello", "Say hello", "", "", {}, false,
                                 [](Invocation& inv) {
                                   inv.out << "hello\n";
                                   return ExitStatus::kOk;
                                 }});
  Output ran = cli_testing::Tpufleet(with_extra, {"hello"});
  EXPECT_EQ(ran.code, 0) << ran.err;
  EXPECT_EQ(ran.out, "hello\n");
  EXPECT_TRUE(HasTableRow(cli_testing::Tpufleet(with_extra, {"help"}).out, "  hello"));

  Output other = Tpufleet({"hello"});
  EXPECT_EQ(other.code, 2);
  EXPECT_TRUE(Contains(other.err, "unknown command 'hello'")) << other.err;
  EXPECT_FALSE(HasTableRow(Tpufleet({"help"}).out, "  hello"));
}

// An App without a world factory (the emulator's) says so instead of crashing.
TEST(Issue11, AnAppWithNoWorldFactorySaysSo) {
  Output o = Tpufleet({"status"});
  EXPECT_EQ(o.code, 1);
  EXPECT_TRUE(Contains(o.err, "no world factory")) << o.err;
}

TEST(Help, EveryCommandHasHelp) {
  ASSERT_GE(CliCommands().size(), 4u);
  for (const Command& c : CliCommands()) {
    for (const std::vector<std::string>& argv : std::vector<std::vector<std::string>>{
             {c.name, "--help"}, {c.name, "-h"}, {"help", c.name}}) {
      Output o = Tpufleet(argv);
      EXPECT_EQ(o.code, 0) << Join(argv, " ");
      EXPECT_EQ(o.err, "") << Join(argv, " ");
      EXPECT_TRUE(StartsWith(o.out, "Usage: tpufleet " + c.name)) << o.out;
      EXPECT_TRUE(Contains(o.out, c.summary)) << c.name;
      for (const FlagSpec& f : c.flags) {
        // A hidden flag is tpufleet's own (jobs --watch); a lettered one shows its letter.
        std::string spelled =
            (f.letter != 0 ? std::string("  -") + f.letter + ", --" : std::string("  --")) +
            f.name;
        EXPECT_EQ(Contains(o.out, spelled), !f.hidden) << c.name << " --" << f.name;
      }
      EXPECT_TRUE(Contains(o.out, "  --catalog FILE")) << c.name;
      // --json is offered exactly where there is data to print (ssh hands over to ssh).
      EXPECT_EQ(Contains(o.out, "  --json"), c.prints_data) << c.name;
    }
  }
}

TEST(Help, EstimateUsageShowsItsFlags) {
  Output o = Tpufleet({"estimate", "--help"});
  EXPECT_TRUE(StartsWith(o.out,
                         "Usage: tpufleet estimate TYPE --hours H [--count N] [--spot] "
                         "[--zone ZONE]\n"))
      << o.out;
  EXPECT_TRUE(Contains(o.out, "  --hours H ")) << o.out;
  EXPECT_TRUE(Contains(o.out, "  --spot ")) << o.out;
}

TEST(Help, HelpForAnUnknownCommand) {
  Output o = Tpufleet({"help", "estmate"});
  EXPECT_EQ(o.code, 2);
  EXPECT_EQ(o.err, "tpufleet: unknown command 'estmate' (did you mean estimate?)\n");
}

TEST(UsageErrors, MisspelledCommandSuggestsTheRightOne) {
  Output o = Tpufleet({"catlog"});
  EXPECT_EQ(o.code, 2);
  EXPECT_EQ(o.out, "");
  EXPECT_EQ(o.err,
            "tpufleet: unknown command 'catlog' (did you mean catalog?)\n"
            "Run 'tpufleet help' for the list of commands.\n");
  Output far = Tpufleet({"launch"});
  EXPECT_EQ(far.code, 2);
  EXPECT_EQ(far.err,
            "tpufleet: unknown command 'launch'\nRun 'tpufleet help' for the list of commands.\n");
}

// The suggestion was the bare name ("did you mean hours?"), not the flag one types.
TEST(UsageErrorsRegression, MisspelledFlagSuggestsTheFlagWithDashes) {
  Output o = Tpufleet({"estimate", "v4-8", "--hour", "3"});
  EXPECT_EQ(o.code, 2);
  EXPECT_EQ(o.out, "");
  EXPECT_EQ(o.err,
            "tpufleet: unknown flag '--hour' for 'estimate' (did you mean --hours?)\n"
            "Run 'tpufleet estimate --help' for usage.\n");
  Output global = Tpufleet({"catalog", "--jsn"});
  EXPECT_EQ(global.code, 2);
  EXPECT_TRUE(Contains(global.err, "unknown flag '--jsn' for 'catalog' (did you mean --json?)"))
      << global.err;
}

TEST(UsageErrors, FlagOfAnotherCommand) {
  Output o = Tpufleet({"catalog", "v4-8", "--hours", "3"});
  EXPECT_EQ(o.code, 2);
  EXPECT_TRUE(StartsWith(o.err, "tpufleet: unknown flag '--hours' for 'catalog'")) << o.err;
}

TEST(UsageErrors, MalformedFlags) {
  struct Case {
    std::vector<std::string> argv;
    std::string err_start;
  };
  const Case cases[] = {
      {{"catalog", "-x"}, "tpufleet: unknown flag '-x' (flags are spelled --name)"},
      {{"--json=yes", "catalog"}, "tpufleet: --json takes no value"},
      {{"estimate", "v4-8", "--hours"}, "tpufleet: --hours needs a value (H)"},
      {{"estimate", "v4-8", "--hours", "abc"},
       "tpufleet: --hours expects a number of at least 0, got 'abc'"},
      {{"estimate", "v4-8", "--hours", "-1"},
       "tpufleet: --hours expects a number of at least 0, got '-1'"},
      {{"estimate", "v4-8", "--hours", "1", "--count", "0"},
       "tpufleet: --count expects a number of at least 1, got '0'"},
      {{"estimate", "v4-8", "--hours", "1", "--count", "2.5"},
       "tpufleet: --count expects a whole number"},
      {{"estimate", "--hours", "1"}, "tpufleet: estimate needs exactly one TYPE"},
      {{"estimate", "v4-8"}, "tpufleet: estimate needs --hours H"},
      {{"plan"}, "tpufleet: plan needs --hbm-gib X"},
      {{"plan", "--hbm-gib", "0"}, "tpufleet: --hbm-gib must be above zero"},
      {{"plan", "--hbm-gib", "16", "--replicas", "1.5"}, "tpufleet: --replicas expects a whole"},
      {{"plan", "v4-8", "--hbm-gib", "16"}, "tpufleet: plan takes no arguments"},
      {{"catalog", "v4-8", "v4-16"}, "tpufleet: catalog takes at most one TYPE"},
  };
  for (const Case& c : cases) {
    Output o = Tpufleet(c.argv);
    EXPECT_EQ(o.code, 2) << Join(c.argv, " ") << "\n" << o.err;
    EXPECT_EQ(o.out, "") << Join(c.argv, " ");
    EXPECT_TRUE(StartsWith(o.err, c.err_start)) << Join(c.argv, " ") << "\n" << o.err;
  }
}

// `estimate --count 1e10` overflowed int and printed a negative count and cost.
TEST(UsageErrorsRegression, CountTooLargeIsRejected) {
  Output o = Tpufleet({"estimate", "v4-8", "--hours", "1", "--count", "1e10"});
  EXPECT_EQ(o.code, 2);
  EXPECT_EQ(o.out, "");
  EXPECT_EQ(o.err, "tpufleet: --count expects a whole number up to 100000\n");
  // The largest count with the largest slice still adds up: 100000 x 6144 chips.
  json j = TpufleetJson({"estimate", "v5p-12288", "--hours", "1", "--count", "100000"});
  EXPECT_EQ(j["chips"], 614400000);
}

TEST(Flags, EqualsFormAndFlagsBeforeTheType) {
  json j = TpufleetJson({"estimate", "--hours=10", "v4-32"});
  EXPECT_NEAR(j["on_demand_usd"].get<double>(), 515.20, kCent);
  Output o = Tpufleet({"--json", "catalog", "v4-32"});
  EXPECT_EQ(o.code, 0);
  EXPECT_EQ(json::parse(o.out)["chips"], 16);
}

TEST(Flags, DoubleDashEndsFlags) {
  Output o = Tpufleet({"catalog", "--", "--json"});
  EXPECT_EQ(o.code, 2);  // "--json" is now a TYPE, and not a valid one
  EXPECT_TRUE(StartsWith(o.err, "tpufleet: unknown accelerator type \"--json\"")) << o.err;
}

}  // namespace
}  // namespace tpufleet::cli
