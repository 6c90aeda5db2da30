#include "provider/gcp_errors.h"

#include <gtest/gtest.h>

#include <string>

#include "provider/testing/scripted_http_client.h"
#include "util/testing/status_printer.h"

namespace tpufleet {
namespace {

using Json = nlohmann::json;

// What an HTTP `http` answer carrying Google's error envelope is taken for.
Status Classify(int http, const std::string& status, const std::string& message,
                Json details = Json::array()) {
  return ClassifyHttpError(
      http, ScriptedHttpClient::Error(http, status, message, std::move(details)).body);
}

Json ErrorInfo(const std::string& reason) {
  return ScriptedHttpClient::ErrorInfo(reason, "googleapis.com");
}

TEST(GcpErrors, EnvelopeStatusNameDecidesNotTheHttpCode) {
  const std::string missing = "Resource 'projects/p/locations/z/nodes/x' was not found";
  EXPECT_EQ(Classify(404, "NOT_FOUND", missing), NotFoundError(missing));
  const std::string taken = "Resource 'projects/p/locations/z/nodes/x' already exists";
  EXPECT_EQ(Classify(409, "ALREADY_EXISTS", taken), AlreadyExistsError(taken));
  // A 409 is not always a duplicate.
  EXPECT_EQ(Classify(409, "ABORTED", "concurrent change"), UnavailableError("concurrent change"));
  EXPECT_EQ(Classify(400, "INVALID_ARGUMENT", "bad type"), InvalidArgumentError("bad type"));
  EXPECT_EQ(Classify(400, "FAILED_PRECONDITION", "in state PREEMPTED"),
            FailedPreconditionError("in state PREEMPTED"));
}

TEST(GcpErrors, PermissionAndAuthenticationAndBadLocation) {
  EXPECT_EQ(Classify(403, "PERMISSION_DENIED", "no tpu.nodes.create").code(),
            StatusCode::kPermissionDenied);
  EXPECT_EQ(Classify(401, "UNAUTHENTICATED", "invalid credentials").code(),
            StatusCode::kPermissionDenied);
  const std::string location = "Location us-east1-d is not found or access is unauthorized.";
  EXPECT_EQ(Classify(403, "PERMISSION_DENIED", location), PermissionDeniedError(location));
}

TEST(GcpErrors, QuotaStopsButRateLimitsAreRetried) {
  const std::string quota =
      "Quota limit 'TPUV6EPreemptiblePerProjectPerRegionForTPUAPI' has been exceeded. Limit: 0 "
      "in region us-east5.";
  EXPECT_EQ(Classify(429, "RESOURCE_EXHAUSTED", quota, ErrorInfo("RESOURCE_QUOTA_EXCEEDED")),
            FailedPreconditionError(quota));
  EXPECT_EQ(Classify(429, "RESOURCE_EXHAUSTED", quota),
            FailedPreconditionError(quota));  // no details: the words say quota
  // The emulator's and Google's request-rate 429 says "Quota exceeded" too.
  const std::string rate =
      "Quota exceeded for quota metric 'Write requests' and limit 'Write requests per minute' "
      "of service 'tpu.googleapis.com' for consumer 'project_number:1'.";
  EXPECT_EQ(Classify(429, "RESOURCE_EXHAUSTED", rate, ErrorInfo("RATE_LIMIT_EXCEEDED")),
            UnavailableError(rate));
  EXPECT_EQ(Classify(429, "RESOURCE_EXHAUSTED", rate), UnavailableError(rate));
  EXPECT_EQ(Classify(429, "RESOURCE_EXHAUSTED", "Maximum number of CreateNode requests per minute"),
            UnavailableError("Maximum number of CreateNode requests per minute"));
  EXPECT_EQ(Classify(429, "RESOURCE_EXHAUSTED", "slow down"), UnavailableError("slow down"));
}

TEST(GcpErrors, ServerErrorsAreRetryable) {
  EXPECT_EQ(Classify(500, "INTERNAL", "Internal error encountered."),
            UnavailableError("Internal error encountered."));
  EXPECT_EQ(Classify(503, "UNAVAILABLE", "The service is unavailable."),
            UnavailableError("The service is unavailable."));
  EXPECT_EQ(Classify(504, "DEADLINE_EXCEEDED", "timed out"), TimeoutError("timed out"));
  EXPECT_EQ(ClassifyHttpError(502, "<html>Bad Gateway</html>"),
            UnavailableError("HTTP 502: <html>Bad Gateway</html>"));
}

TEST(GcpErrors, AnswersWithoutAnEnvelopeFallBackOnTheHttpCode) {
  EXPECT_EQ(ClassifyHttpError(404, "").code(), StatusCode::kNotFound);
  EXPECT_EQ(ClassifyHttpError(403, "Forbidden").code(), StatusCode::kPermissionDenied);
  EXPECT_EQ(ClassifyHttpError(400, "nope").code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(ClassifyHttpError(501, "").code(), StatusCode::kInternal);
  // An unknown status name falls back too.
  EXPECT_EQ(Classify(404, "WHATEVER", "gone"), NotFoundError("gone"));
  // The body of a proxy page is shown shortened and redacted.
  Status s = ClassifyHttpError(400, "access_token=ya29.secret " + std::string(500, 'x'));
  EXPECT_EQ(s.message().find("ya29.secret"), std::string::npos) << s.message();
  EXPECT_LT(s.message().size(), 260u);
}

TEST(GcpErrors, OperationErrors) {
  const std::string stockout =
      "There is no more capacity in the zone \"us-central1-c\"; you can try in another zone "
      "where Cloud TPU Nodes are offered (see https://cloud.google.com/tpu/docs/regions) "
      "[EID: 0x9f48947a7d57c8d]";
  EXPECT_EQ(ClassifyOperationError({{"code", 8}, {"message", stockout}}),
            ResourceExhaustedError(stockout));
  const std::string reserved =
      "Insufficient reserved capacity. Contact customer support to increase your reservation. "
      "[EID: 0x1]";
  EXPECT_EQ(ClassifyOperationError({{"code", 9}, {"message", reserved}}),
            ResourceExhaustedError(reserved));
  EXPECT_EQ(ClassifyOperationError({{"code", 9}, {"message", "bad state"}}),
            FailedPreconditionError("bad state"));
  const std::string qr_quota =
      "Quota 'TPUV4sPreemptiblePodPerProjectPerRegionForTPUAPI' exhausted. Limit 20800 in region "
      "us-central2";
  EXPECT_EQ(ClassifyOperationError({{"code", 8}, {"message", qr_quota}}),
            FailedPreconditionError(qr_quota));
  EXPECT_EQ(ClassifyOperationError({{"code", 3}, {"message", "m"}}), InvalidArgumentError("m"));
  EXPECT_EQ(ClassifyOperationError({{"code", 5}, {"message", "m"}}), NotFoundError("m"));
  EXPECT_EQ(ClassifyOperationError({{"code", 6}, {"message", "m"}}), AlreadyExistsError("m"));
  EXPECT_EQ(ClassifyOperationError({{"code", 7}, {"message", "m"}}), PermissionDeniedError("m"));
  EXPECT_EQ(ClassifyOperationError({{"code", 13}, {"message", "an internal error has occurred"}}),
            UnavailableError("an internal error has occurred"));
  EXPECT_EQ(ClassifyOperationError({{"code", 4}, {"message", "m"}}), TimeoutError("m"));
  EXPECT_EQ(ClassifyOperationError({{"code", 12}, {"message", "m"}}), InternalError("m"));
  EXPECT_EQ(ClassifyOperationError(Json("oops")).code(), StatusCode::kInternal);
  EXPECT_NE(ClassifyOperationError({{"code", 8}}).message(), "");
}

// api_fuzzer: an envelope whose fields had the wrong JSON types threw out of
// json::value() and ended the process (std::terminate) instead of being classified.
TEST(Issue10, EnvelopeFieldsOfTheWrongTypeAreClassifiedNotThrown) {
  const std::string envelope = R"({"error": {"code": "404", "status": 5, "message": ["gone"],)"
                               R"( "details": [{"@type": 7, "reason": "RATE_LIMIT_EXCEEDED"}]}})";
  Status s = ClassifyHttpError(404, envelope);
  EXPECT_EQ(s.code(), StatusCode::kNotFound);  // from the HTTP code: the status name is unusable
  EXPECT_FALSE(s.message().empty());
  Status quota = ClassifyHttpError(
      429,
      R"({"error": {"status": "RESOURCE_EXHAUSTED", "message": "Quota exceeded",)"
      R"( "details": [{"@type": "type.googleapis.com/google.rpc.ErrorInfo", "reason": {}}]}})");
  EXPECT_EQ(quota, FailedPreconditionError("Quota exceeded"));
  Status op = ClassifyOperationError({{"code", 8}, {"message", {{"text", "no capacity"}}}});
  EXPECT_EQ(op.code(), StatusCode::kResourceExhausted);
  EXPECT_FALSE(op.message().empty());
}

}  // namespace
}  // namespace tpufleet
