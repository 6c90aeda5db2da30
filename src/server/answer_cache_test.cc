// AnswerCache: a report's answer is given again to the same person allowed the same,
// within the age they asked for; failures and oversized answers are not kept; the cache
// stays within its bounds; askers at the same moment share one run.
#include "server/answer_cache.h"

#include <gtest/gtest.h>

#include <future>
#include <thread>

#include "util/testing/fake_clock.h"

namespace tpufleet::server {
namespace {

using std::chrono::seconds;

UserRecord Row(std::string name, std::string role, std::vector<std::string> nodes = {}) {
  UserRecord u;
  u.fleet = "lab";
  u.name = std::move(name);
  u.role = std::move(role);
  u.nodes = std::move(nodes);
  return u;
}

class AnswerCacheTest : public ::testing::Test {
 protected:
  // Asks for `argv` as `access`, `age` seconds being enough; each run answers its number.
  std::string Ask(const Access& access, std::vector<std::string> argv, int age = 30,
                  int exit_code = 0) {
    std::optional<AnswerCache::Answer> a =
        cache_.Get(access, argv, seconds(age), clock_, [&]() -> std::optional<api::CommandResult> {
          ++runs_;
          clock_.Advance(run_takes_);
          return api::CommandResult{exit_code, "run " + std::to_string(runs_) + "\n", ""};
        });
    return a ? a->result.out : "none";
  }

  AnswerCache cache_;
  FakeClock clock_;
  seconds run_takes_{0};  // how long each run of Ask's takes
  int runs_ = 0;
};

TEST_F(AnswerCacheTest, TheSamePersonAllowedTheSameGetsTheAnswerWithinTheAge) {
  Access milo = Access::Of("milo", {Row("milo", "member", {"pod"})});
  EXPECT_EQ(Ask(milo, {"cost", "--json"}), "run 1\n");
  clock_.Advance(seconds(30));
  EXPECT_EQ(Ask(milo, {"cost", "--json"}), "run 1\n") << "30 s old is as old as asked";
  EXPECT_EQ(Ask(milo, {"cost", "--json"}, 10), "run 2\n") << "10 s asked: made anew";
  EXPECT_EQ(Ask(milo, {"jobs", "--json"}), "run 3\n") << "other words";
  EXPECT_EQ(Ask(Access::Of("ada", {Row("ada", "member", {"pod"})}), {"cost", "--json"}),
            "run 4\n")
      << "another person";
  Access widened = Access::Of("milo", {Row("milo", "member", {"pod", "eval"})});
  EXPECT_EQ(Ask(widened, {"cost", "--json"}), "run 5\n") << "the same person allowed more";
  EXPECT_EQ(Ask(milo, {"cost", "--json"}), "run 6\n") << "and less again";
  EXPECT_EQ(cache_.size(), 3u) << "one answer per person and words";
}

TEST_F(AnswerCacheTest, AnAnswerIsAsOldAsTheTimeSinceItWasMade) {
  Access a = Access::Everything("operator");
  run_takes_ = seconds(8);  // a report of many nodes
  EXPECT_EQ(Ask(a, {"jobs", "--json"}, 5), "run 1\n");
  clock_.Advance(seconds(5));
  EXPECT_EQ(Ask(a, {"jobs", "--json"}, 5), "run 1\n") << "made 5 s ago, asked 13 s ago";
  clock_.Advance(seconds(1));
  EXPECT_EQ(Ask(a, {"jobs", "--json"}, 5), "run 2\n");
}

TEST_F(AnswerCacheTest, FailuresAndAnswersNotMadeAreNotKept) {
  Access a = Access::Everything("operator");
  EXPECT_EQ(Ask(a, {"cost", "--json"}, 30, 1), "run 1\n") << "the failure is the answer";
  EXPECT_EQ(Ask(a, {"cost", "--json"}), "run 2\n") << "but it is not kept";
  std::optional<AnswerCache::Answer> busy =
      cache_.Get(a, {"jobs", "--json"}, seconds(30), clock_, [] { return std::nullopt; });
  EXPECT_FALSE(busy.has_value());
  EXPECT_EQ(cache_.size(), 1u);
  std::optional<AnswerCache::Answer> big =
      cache_.Get(a, {"top", "--json"}, seconds(30), clock_, [] {
        return std::optional<api::CommandResult>(
            api::CommandResult{0, std::string(kMaxCachedAnswerBytes + 1, 'x'), ""});
      });
  ASSERT_TRUE(big.has_value());
  EXPECT_EQ(big->result.out.size(), kMaxCachedAnswerBytes + 1);
  EXPECT_EQ(cache_.size(), 1u) << "an answer over the bound is given but not kept";
}

TEST_F(AnswerCacheTest, KeepsAtMostItsBoundDroppingTheOldestFirst) {
  Access a = Access::Everything("operator");
  for (size_t i = 0; i <= kMaxCachedAnswers; ++i) {
    Ask(a, {"cost", "--since", std::to_string(i) + "d", "--json"});
    clock_.Advance(seconds(1));
  }
  EXPECT_EQ(cache_.size(), kMaxCachedAnswers);
  int before = runs_;
  Ask(a, {"cost", "--since", std::to_string(kMaxCachedAnswers) + "d", "--json"}, 300);
  EXPECT_EQ(runs_, before) << "the newest is kept";
  Ask(a, {"cost", "--since", "0d", "--json"}, 300);
  EXPECT_EQ(runs_, before + 1) << "the oldest was dropped";
  // Bytes: as many of the largest answers kept as fill the bound, then one more.
  constexpr size_t kFit = kMaxCachedBytes / kMaxCachedAnswerBytes;
  AnswerCache bytes_cache;
  for (size_t i = 0; i <= kFit; ++i) {
    clock_.Advance(seconds(1));
    bytes_cache.Get(a, {"top", std::to_string(i), "--json"}, seconds(30), clock_, [] {
      return std::optional<api::CommandResult>(
          api::CommandResult{0, std::string(kMaxCachedAnswerBytes, 'x'), ""});
    });
  }
  EXPECT_EQ(bytes_cache.size(), kFit);
  EXPECT_EQ(bytes_cache.bytes(), kMaxCachedBytes);
}

TEST_F(AnswerCacheTest, AskersAtTheSameMomentShareOneRun) {
  Access a = Access::Everything("operator");
  std::promise<void> first_started, release;
  std::shared_future<void> released = release.get_future().share();
  std::atomic<int> runs{0};
  auto make = [&]() -> std::optional<api::CommandResult> {
    if (runs.fetch_add(1) == 0) {
      first_started.set_value();
      released.wait();
    }
    return api::CommandResult{0, "report\n", ""};
  };
  std::optional<AnswerCache::Answer> first, second;
  std::thread t1([&] { first = cache_.Get(a, {"jobs", "--json"}, seconds(10), clock_, make); });
  first_started.get_future().wait();
  std::thread t2([&] { second = cache_.Get(a, {"jobs", "--json"}, seconds(10), clock_, make); });
  // The second asker comes in while the first still runs: it must wait for that run,
  // not start its own (which the count of runs below then shows).
  while (cache_.waiting() == 0 && runs.load() == 1) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  release.set_value();
  t1.join();
  t2.join();
  ASSERT_TRUE(first && second);
  EXPECT_EQ(second->result.out, "report\n");
  EXPECT_EQ(runs.load(), 1);
}

TEST_F(AnswerCacheTest, WhileAnAnswerIsMadeAnewTheOneKeptIsGivenWithoutWaiting) {
  Access a = Access::Everything("operator");
  EXPECT_EQ(Ask(a, {"jobs", "--json"}, 5), "run 1\n");
  clock_.Advance(seconds(60));
  std::promise<void> started, release;
  std::shared_future<void> released = release.get_future().share();
  std::thread maker([&] {
    cache_.Get(a, {"jobs", "--json"}, seconds(5), clock_, [&] {
      started.set_value();
      released.wait();
      return std::optional<api::CommandResult>(api::CommandResult{0, "run 2\n", ""});
    });
  });
  started.get_future().wait();
  // Asked while run 2 is under way: run 1, 60 s old, at once (were it to wait, the
  // test would hang until its timeout: run 2 is released only after).
  std::optional<AnswerCache::Answer> meanwhile =
      cache_.Get(a, {"jobs", "--json"}, seconds(5), clock_, [] {
        return std::optional<api::CommandResult>(api::CommandResult{0, "not run\n", ""});
      });
  release.set_value();
  maker.join();
  ASSERT_TRUE(meanwhile.has_value());
  EXPECT_EQ(meanwhile->result.out, "run 1\n");
  EXPECT_EQ(clock_.Now() - meanwhile->made, seconds(60));
  EXPECT_EQ(Ask(a, {"jobs", "--json"}, 5), "run 2\n") << "then the new one";
  EXPECT_EQ(runs_, 1);
  Ask(Access::Of("milo", {Row("milo", "admin")}), {"jobs", "--json"}, 5);
  EXPECT_EQ(runs_, 2) << "another person's answer is never given";
}

TEST(Cacheable, OnlyReportsThatEnd) {
  EXPECT_TRUE(Cacheable({"cost", "--by", "node", "--json"}));
  EXPECT_TRUE(Cacheable({"jobs", "--json"}));
  EXPECT_TRUE(Cacheable({"top", "pod", "--json", "--since", "300s"}));
  EXPECT_FALSE(Cacheable({"top", "pod"})) << "the live view runs until stopped";
  EXPECT_FALSE(Cacheable({"cost"}));
  EXPECT_FALSE(Cacheable({"logs", "-f", "x", "--json"}));
  EXPECT_FALSE(Cacheable({"up", "lab.yaml", "--json"}));
  EXPECT_FALSE(Cacheable({}));
}

}  // namespace
}  // namespace tpufleet::server
