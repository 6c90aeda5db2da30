#include "emulator/faults.h"

#include <gtest/gtest.h>

namespace tpufleet::emulator {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

TEST(ParseFault, EveryKind) {
  Result<Fault> f = ParseFault(
      R"({"kind":"stockout","zone":"us-central1-c","family":"v5litepod","duration":"5m"})");
  ASSERT_TRUE(f.ok()) << f.status().ToString();
  EXPECT_EQ(f->kind, FaultKind::kStockout);
  EXPECT_EQ(f->zone, "us-central1-c");
  EXPECT_EQ(f->family, "v5litepod");
  EXPECT_EQ(f->duration, milliseconds(300000));

  f = ParseFault(R"({"kind":"quota","region":"us-east5"})");
  ASSERT_TRUE(f.ok());
  EXPECT_EQ(f->region, "us-east5");
  EXPECT_FALSE(f->duration.has_value());

  f = ParseFault(R"({"kind":"storm","rate":0.25,"seed":9})");
  ASSERT_TRUE(f.ok());
  EXPECT_EQ(f->http_codes, (std::vector<int>{429, 500, 503}));
  EXPECT_EQ(f->seed, 9u);

  f = ParseFault(R"({"kind":"preempt","node":"projects/p/locations/z/nodes/n","notice":"1.5s"})");
  ASSERT_TRUE(f.ok());
  EXPECT_EQ(f->notice, milliseconds(1500));

  f = ParseFault(
      R"({"kind":"cutoff","node":"projects/p/locations/z/nodes/n","worker":3,"duration":90})");
  ASSERT_TRUE(f.ok());
  EXPECT_EQ(f->worker, 3);
  EXPECT_EQ(f->duration, seconds(90));

  f = ParseFault(R"({"kind":"device","node":"projects/p/locations/z/nodes/n","worker":1,"device":2})");
  ASSERT_TRUE(f.ok());
  EXPECT_EQ(f->kind, FaultKind::kDevice);
  EXPECT_EQ(f->worker, 1);
  EXPECT_EQ(f->device, 2);

  f = ParseFault(R"({"kind":"slow","factor":10})");
  ASSERT_TRUE(f.ok());
  EXPECT_EQ(f->factor, 10);
  EXPECT_TRUE(ParseFault(R"({"kind":"maintenance","node":"n","notice":"500ms"})").ok());
}

TEST(ParseFault, Errors) {
  auto message = [](const char* body) { return ParseFault(body).status().message(); };
  EXPECT_EQ(message("[]"), "fault: expected a JSON object");
  EXPECT_EQ(message("{"), "fault: the body is not valid JSON");
  EXPECT_NE(message(R"({"kind":"stockuot","zone":"z"})").find("did you mean stockout"),
            std::string::npos);
  EXPECT_EQ(message(R"({"kind":"stockout"})"), "fault: field \"zone\" is required");
  EXPECT_EQ(message(R"({"kind":"stockout","zone":"z","colour":"red"})"),
            "fault: unknown field \"colour\"");
  EXPECT_FALSE(ParseFault(R"({"kind":"storm","rate":0})").ok());
  EXPECT_FALSE(ParseFault(R"({"kind":"storm","rate":0.5,"httpCodes":[200]})").ok());
  EXPECT_FALSE(ParseFault(R"({"kind":"storm","rate":0.5,"httpCodes":[]})").ok());
  EXPECT_FALSE(ParseFault(R"({"kind":"slow","factor":0})").ok());
  EXPECT_FALSE(ParseFault(R"({"kind":"preempt","node":"n","duration":"5s"})").ok());
  EXPECT_FALSE(ParseFault(R"({"kind":"cutoff","node":"n","worker":-1})").ok());
  EXPECT_EQ(message(R"({"kind":"device","node":"n","device":-1})"),
            "fault: \"device\" must be a device index (0, 1, …)");
  EXPECT_EQ(message(R"({"kind":"cutoff","node":"n","device":1})"),
            "fault: \"device\" belongs to device faults");
  EXPECT_FALSE(ParseFault(R"({"kind":"stockout","zone":"z","duration":"soon"})").ok());
}

TEST(ParseFaultDuration, Forms) {
  EXPECT_EQ(ParseFaultDuration("500ms").value(), milliseconds(500));
  EXPECT_EQ(ParseFaultDuration("1.5s").value(), milliseconds(1500));
  EXPECT_EQ(ParseFaultDuration("90s").value(), seconds(90));
  EXPECT_EQ(ParseFaultDuration("1h30m").value(), seconds(5400));
  EXPECT_FALSE(ParseFaultDuration("fast").ok());
  EXPECT_FALSE(ParseFaultDuration("-1.5s").ok());
}

class FaultSetTest : public ::testing::Test {
 protected:
  Fault Make(FaultKind kind) {
    Fault f;
    f.kind = kind;
    return f;
  }
  Clock::WallTime wall_;
  Clock::MonoTime t0_;
  FaultSet set_;
};

TEST_F(FaultSetTest, StockoutMatchesZoneAndFamily) {
  Fault f = Make(FaultKind::kStockout);
  f.zone = "z1";
  f.family = "v4";
  std::string id = set_.Add(f, wall_, t0_);
  EXPECT_EQ(id, "fault-1");
  EXPECT_NE(set_.Stockout("z1", "v4", t0_), nullptr);
  EXPECT_EQ(set_.Stockout("z1", "v5p", t0_), nullptr);
  EXPECT_EQ(set_.Stockout("z2", "v4", t0_), nullptr);
  Fault all = Make(FaultKind::kStockout);
  all.zone = "z2";
  set_.Add(all, wall_, t0_);
  EXPECT_NE(set_.Stockout("z2", "anything", t0_), nullptr);
  EXPECT_TRUE(set_.Remove(id).has_value());
  EXPECT_FALSE(set_.Remove(id).has_value());
  EXPECT_EQ(set_.Stockout("z1", "v4", t0_), nullptr);
}

TEST_F(FaultSetTest, FaultsExpireAfterTheirDuration) {
  Fault f = Make(FaultKind::kQuota);
  f.region = "r";
  f.duration = seconds(10);
  set_.Add(f, wall_, t0_);
  EXPECT_NE(set_.Quota("r", "v4", t0_ + seconds(9)), nullptr);
  EXPECT_EQ(set_.Quota("r", "v4", t0_ + seconds(10)), nullptr);
  EXPECT_TRUE(set_.Expire(t0_ + seconds(9)).empty());
  std::vector<Fault> gone = set_.Expire(t0_ + seconds(10));
  ASSERT_EQ(gone.size(), 1u);
  EXPECT_EQ(gone[0].kind, FaultKind::kQuota);
  EXPECT_TRUE(set_.faults().empty());
}

TEST_F(FaultSetTest, SlowFactorsMultiply) {
  EXPECT_EQ(set_.SlowFactor(t0_), 1);
  Fault a = Make(FaultKind::kSlow);
  a.factor = 2;
  Fault b = Make(FaultKind::kSlow);
  b.factor = 5;
  set_.Add(a, wall_, t0_);
  set_.Add(b, wall_, t0_);
  EXPECT_EQ(set_.SlowFactor(t0_), 10);
  EXPECT_EQ(set_.Clear().size(), 2u);
  EXPECT_EQ(set_.SlowFactor(t0_), 1);
}

TEST_F(FaultSetTest, StormDrawsAreFixedBySeed) {
  auto draws = [&](uint64_t seed) {
    FaultSet s;
    Fault f = Make(FaultKind::kStorm);
    f.rate = 0.3;
    f.http_codes = {429, 503};
    f.seed = seed;
    s.Add(f, wall_, t0_);
    std::vector<int> out;
    for (int i = 0; i < 200; ++i) {
      out.push_back(s.DrawStorm(t0_).value_or(0));
    }
    return out;
  };
  std::vector<int> a = draws(1);
  EXPECT_EQ(a, draws(1));
  EXPECT_NE(a, draws(2));
  int failed = static_cast<int>(std::count_if(a.begin(), a.end(), [](int c) { return c != 0; }));
  EXPECT_GT(failed, 35);
  EXPECT_LT(failed, 85);
  EXPECT_FALSE(set_.DrawStorm(t0_).has_value());
}

}  // namespace
}  // namespace tpufleet::emulator
