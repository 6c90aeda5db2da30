#include "emulator/wire.h"

#include <gtest/gtest.h>

namespace tpufleet::emulator {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

Clock::WallTime At(int y, unsigned mo, unsigned d) {
  return Clock::WallTime(std::chrono::sys_days(std::chrono::year{y} / mo / d));
}

TEST(Wire, HttpMappingFollowsGoogleRpcCode) {
  EXPECT_EQ(HttpStatusOf(RpcCode::kNotFound), 404);
  EXPECT_EQ(HttpStatusOf(RpcCode::kAlreadyExists), 409);
  EXPECT_EQ(HttpStatusOf(RpcCode::kAborted), 409);
  EXPECT_EQ(HttpStatusOf(RpcCode::kResourceExhausted), 429);
  EXPECT_EQ(HttpStatusOf(RpcCode::kFailedPrecondition), 400);
  EXPECT_EQ(HttpStatusOf(RpcCode::kUnauthenticated), 401);
  EXPECT_EQ(HttpStatusOf(RpcCode::kUnavailable), 503);
  EXPECT_EQ(RpcCodeName(RpcCode::kResourceExhausted), "RESOURCE_EXHAUSTED");
  EXPECT_EQ(RpcCodeOfHttp(429), RpcCode::kResourceExhausted);
  EXPECT_EQ(RpcCodeOfHttp(503), RpcCode::kUnavailable);
  EXPECT_EQ(RpcCodeOfHttp(502), RpcCode::kInternal);
}

TEST(Wire, ErrorEnvelopeAndOperationError) {
  RpcError e = NotFound("projects/p/locations/z/nodes/x");
  HttpResponse r = ErrorResponse(e);
  EXPECT_EQ(r.status, 404);
  Json j = Json::parse(r.body);
  const char* want = R"({"error": {
      "code": 404,
      "message": "Resource 'projects/p/locations/z/nodes/x' was not found",
      "status": "NOT_FOUND",
      "details": [{"@type": "type.googleapis.com/google.rpc.ResourceInfo",
                   "resourceName": "projects/p/locations/z/nodes/x"}]}})";
  EXPECT_EQ(j, Json::parse(want));
  EXPECT_EQ(OperationErrorJson({RpcCode::kResourceExhausted, "no capacity", Json::array()}),
            Json::parse(R"({"code":8,"message":"no capacity"})"));
  Json info = ErrorInfoDetail("R", "googleapis.com", {{"k", "v"}});
  EXPECT_EQ(info["@type"], "type.googleapis.com/google.rpc.ErrorInfo");
  EXPECT_EQ(info["metadata"]["k"], "v");
}

TEST(Wire, ProtoDurations) {
  EXPECT_EQ(ParseProtoDuration("3600s").value(), seconds(3600));
  EXPECT_EQ(ParseProtoDuration("1.5s").value(), milliseconds(1500));
  EXPECT_EQ(ParseProtoDuration("0.000000001s").value(), std::chrono::nanoseconds(1));
  EXPECT_EQ(ParseProtoDuration("-2s").value(), seconds(-2));
  for (const char* bad : {"", "s", "10", "10m", "1.s", "abc s", "1.0000000001s"}) {
    EXPECT_FALSE(ParseProtoDuration(bad).ok()) << bad;
  }
}

// "99999999999999s" used to overflow nanoseconds (undefined behaviour) and be accepted.
TEST(ProtoDurationRegression, SecondsAreBoundedLikeTheProto) {
  EXPECT_EQ(ParseProtoDuration("315576000000s").value(), std::chrono::nanoseconds::max());
  EXPECT_EQ(ParseProtoDuration("-315576000000s").value(), std::chrono::nanoseconds::min());
  EXPECT_EQ(ParseProtoDuration("9000000000.5s").value(),
            seconds(9'000'000'000) + milliseconds(500));
  for (const char* bad : {"315576000001s", "-315576000001s", "99999999999999s",
                          "99999999999999999999999s", "--5s", "+5s", "-s", "5.s", " 5s"}) {
    EXPECT_FALSE(ParseProtoDuration(bad).ok()) << bad;
  }
}

TEST(TimestampRegression, AddSaturatingDoesNotOverflow) {
  Clock::WallTime t = At(2026, 1, 1);
  EXPECT_EQ(AddSaturating(t, seconds(5)), t + seconds(5));
  EXPECT_EQ(AddSaturating(t, std::chrono::nanoseconds::max()), Clock::WallTime::max());
  EXPECT_EQ(AddSaturating(At(1700, 1, 1), std::chrono::nanoseconds::min()),
            Clock::WallTime::min());
}

TEST(Wire, EnumsAcceptNamesAndNumbers) {
  constexpr std::pair<int, std::string_view> kModes[] = {
      {0, "DISK_MODE_UNSPECIFIED"}, {1, "READ_WRITE"}, {2, "READ_ONLY"}};
  EXPECT_EQ(EnumName(Json(2), kModes, "mode").value(), "READ_ONLY");
  EXPECT_EQ(EnumName(Json("2"), kModes, "mode").value(), "READ_ONLY");
  EXPECT_EQ(EnumName(Json("READ_WRITE"), kModes, "mode").value(), "READ_WRITE");
  Result<std::string> bad = EnumName(Json("READ_MANY"), kModes, "node.data_disks[0].mode");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().message(), "Invalid value at 'node.data_disks[0].mode' (\"READ_MANY\")");
  EXPECT_FALSE(EnumName(Json(7), kModes, "mode").ok());
  EXPECT_FALSE(EnumName(Json(true), kModes, "mode").ok());
}

TEST(Wire, PageTokensRoundTrip) {
  for (const char* key : {"", "a", "projects/p/locations/z/nodes/n-1", "\xff\x01"}) {
    std::string token = EncodePageToken(key);
    EXPECT_EQ(token.find_first_of("+/="), std::string::npos);
    EXPECT_EQ(DecodePageToken(token).value(), key);
  }
  EXPECT_FALSE(DecodePageToken("not a token").ok());
}

TEST(Wire, Hex) {
  EXPECT_EQ(Hex(0xabc, 5), "00abc");
  EXPECT_EQ(Hex(0x123456789abcdefULL, 4), "cdef");
}

}  // namespace
}  // namespace tpufleet::emulator
