#include "util/status.h"

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "util/testing/status_printer.h"

namespace tpufleet {
namespace {

TEST(Status, DefaultIsOkWithNoMessage) {
  Status s;
  EXPECT_TRUE(s.ok());
  EXPECT_EQ(s.code(), StatusCode::kOk);
  EXPECT_EQ(s.message(), "");
  EXPECT_EQ(s.ToString(), "ok");
  EXPECT_EQ(Status::Ok(), s);
}

TEST(Status, EachHelperSetsItsCode) {
  struct Case {
    Status status;
    StatusCode code;
    const char* name;
  };
  std::vector<Case> cases = {
      {NotFoundError("m"), StatusCode::kNotFound, "not_found"},
      {InvalidArgumentError("m"), StatusCode::kInvalidArgument, "invalid_argument"},
      {UnavailableError("m"), StatusCode::kUnavailable, "unavailable"},
      {TimeoutError("m"), StatusCode::kTimeout, "timeout"},
      {PermissionDeniedError("m"), StatusCode::kPermissionDenied, "permission_denied"},
      {FailedPreconditionError("m"), StatusCode::kFailedPrecondition, "failed_precondition"},
      {ResourceExhaustedError("m"), StatusCode::kResourceExhausted, "resource_exhausted"},
      {AlreadyExistsError("m"), StatusCode::kAlreadyExists, "already_exists"},
      {InternalError("m"), StatusCode::kInternal, "internal"},
  };
  for (const Case& c : cases) {
    EXPECT_FALSE(c.status.ok()) << c.name;
    EXPECT_EQ(c.status.code(), c.code) << c.name;
    EXPECT_EQ(c.status.message(), "m");
    EXPECT_EQ(StatusCodeName(c.code), c.name);
    EXPECT_EQ(c.status.ToString(), std::string(c.name) + ": m");
  }
  EXPECT_EQ(StatusCodeName(StatusCode::kOk), "ok");
}

TEST(Status, WithContextPrefixesTheMessageAndKeepsTheCode) {
  Status s = NotFoundError("/x/fleet.yaml: No such file or directory").WithContext("loading");
  EXPECT_EQ(s.code(), StatusCode::kNotFound);
  EXPECT_EQ(s.message(), "loading: /x/fleet.yaml: No such file or directory");
  EXPECT_EQ(Status::Ok().WithContext("loading"), Status::Ok());
  EXPECT_EQ(Status::Ok().WithContext("loading").message(), "");
}

TEST(Status, EqualityComparesCodeAndMessage) {
  EXPECT_EQ(NotFoundError("a"), NotFoundError("a"));
  EXPECT_NE(NotFoundError("a"), NotFoundError("b"));
  EXPECT_NE(NotFoundError("a"), InternalError("a"));
  EXPECT_NE(NotFoundError(""), Status::Ok());
}

TEST(Result, HoldsAValue) {
  Result<int> r = 7;
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r.value(), 7);
  EXPECT_EQ(*r, 7);
  EXPECT_EQ(r.status(), Status::Ok());
  *r = 8;
  EXPECT_EQ(r.value(), 8);
}

TEST(Result, HoldsAnError) {
  Result<std::string> r = TimeoutError("deadline passed");
  EXPECT_FALSE(r.ok());
  EXPECT_EQ(r.status(), TimeoutError("deadline passed"));
}

TEST(Result, ArrowReachesMembers) {
  Result<std::string> r = std::string("v4-32");
  EXPECT_EQ(r->size(), 5u);
  const Result<std::string>& cr = r;
  EXPECT_EQ(cr->substr(0, 2), "v4");
}

TEST(Result, MovesOutMoveOnlyValues) {
  Result<std::unique_ptr<int>> r = std::make_unique<int>(3);
  ASSERT_TRUE(r.ok());
  std::unique_ptr<int> p = std::move(r).value();
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(*p, 3);
}

// Functions that exercise the macros; `calls` counts how often the inner step ran.
Status Step(bool fail, int* calls) {
  ++*calls;
  return fail ? UnavailableError("step failed") : Status::Ok();
}

Result<int> Number(bool fail, int* calls) {
  ++*calls;
  if (fail) {
    return InvalidArgumentError("not a number");
  }
  return 41;
}

Status TryTwice(bool fail_first, int* calls) {
  TPUFLEET_TRY(Step(fail_first, calls));
  TPUFLEET_TRY(Step(false, calls));
  return Status::Ok();
}

Status TryResult(bool fail, int* calls, bool* reached_end) {
  TPUFLEET_TRY(Number(fail, calls));
  *reached_end = true;
  return Status::Ok();
}

Result<int> AddOne(bool fail, int* calls) {
  TPUFLEET_ASSIGN_OR_RETURN(int n, Number(fail, calls));
  return n + 1;
}

Result<std::string> AssignToExisting(bool fail, int* calls) {
  std::string out = "unchanged";
  int n = 0;
  TPUFLEET_ASSIGN_OR_RETURN(n, Number(fail, calls));
  TPUFLEET_ASSIGN_OR_RETURN(auto again, Number(false, calls));  // two on one function
  out = std::to_string(n + again);
  return out;
}

TEST(Try, PassesErrorsUpAndStops) {
  int calls = 0;
  EXPECT_EQ(TryTwice(true, &calls), UnavailableError("step failed"));
  EXPECT_EQ(calls, 1);
}

TEST(Try, ContinuesOnOk) {
  int calls = 0;
  EXPECT_EQ(TryTwice(false, &calls), Status::Ok());
  EXPECT_EQ(calls, 2);
}

TEST(Try, AcceptsAResult) {
  int calls = 0;
  bool reached_end = false;
  EXPECT_EQ(TryResult(true, &calls, &reached_end), InvalidArgumentError("not a number"));
  EXPECT_FALSE(reached_end);
  EXPECT_EQ(TryResult(false, &calls, &reached_end), Status::Ok());
  EXPECT_TRUE(reached_end);
  EXPECT_EQ(calls, 2);
}

TEST(AssignOrReturn, DeclaresTheValue) {
  int calls = 0;
  Result<int> r = AddOne(false, &calls);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(*r, 42);
  EXPECT_EQ(calls, 1);  // the expression is evaluated once
}

TEST(AssignOrReturn, ReturnsTheError) {
  int calls = 0;
  Result<int> r = AddOne(true, &calls);
  EXPECT_EQ(r.status(), InvalidArgumentError("not a number"));
  EXPECT_EQ(calls, 1);
}

TEST(AssignOrReturn, AssignsToAnExistingVariable) {
  int calls = 0;
  Result<std::string> r = AssignToExisting(false, &calls);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(*r, "82");
  EXPECT_EQ(calls, 2);
  calls = 0;
  EXPECT_EQ(AssignToExisting(true, &calls).status(), InvalidArgumentError("not a number"));
  EXPECT_EQ(calls, 1);
}

}  // namespace
}  // namespace tpufleet
