#include "util/log.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <string>

namespace tpufleet {
namespace {

TEST(ParseLogLevel, KnowsTheFourNames) {
  LogLevel level = LogLevel::kError;
  EXPECT_TRUE(ParseLogLevel("debug", &level));
  EXPECT_EQ(level, LogLevel::kDebug);
  EXPECT_TRUE(ParseLogLevel("info", &level));
  EXPECT_EQ(level, LogLevel::kInfo);
  EXPECT_TRUE(ParseLogLevel("warn", &level));
  EXPECT_EQ(level, LogLevel::kWarn);
  EXPECT_TRUE(ParseLogLevel("error", &level));
  EXPECT_EQ(level, LogLevel::kError);
  for (const char* bad : {"", "DEBUG", "warning", "verbose", " info"}) {
    level = LogLevel::kInfo;
    EXPECT_FALSE(ParseLogLevel(bad, &level)) << bad;
    EXPECT_EQ(level, LogLevel::kInfo) << "a failed parse must leave the level alone";
  }
}

// Points fd 2 at a temporary file for the test's lifetime, and restores the log level.
class LogToStderr : public ::testing::Test {
 protected:
  void SetUp() override {
    saved_level_ = GetLogLevel();
    char path[] = "/tmp/tpufleet-log-test-XXXXXX";
    capture_fd_ = ::mkstemp(path);
    ASSERT_GE(capture_fd_, 0);
    ::unlink(path);
    saved_stderr_ = ::dup(STDERR_FILENO);
    ASSERT_GE(saved_stderr_, 0);
    ASSERT_EQ(::dup2(capture_fd_, STDERR_FILENO), STDERR_FILENO);
  }

  void TearDown() override {
    ::dup2(saved_stderr_, STDERR_FILENO);
    ::close(saved_stderr_);
    ::close(capture_fd_);
    SetLogLevel(saved_level_);
  }

  // Everything written to stderr since SetUp.
  std::string Captured() {
    std::string out;
    char buf[4096];
    ssize_t n = 0;
    off_t at = 0;
    while ((n = ::pread(capture_fd_, buf, sizeof buf, at)) > 0) {
      out.append(buf, static_cast<size_t>(n));
      at += n;
    }
    return out;
  }

 private:
  LogLevel saved_level_ = LogLevel::kWarn;
  int capture_fd_ = -1;
  int saved_stderr_ = -1;
};

TEST_F(LogToStderr, WritesEnabledLevelsAsWholeLines) {
  SetLogLevel(LogLevel::kInfo);
  EXPECT_EQ(GetLogLevel(), LogLevel::kInfo);
  Log(LogLevel::kError, "quota exceeded");
  Log(LogLevel::kWarn, "retrying in 2s");
  Log(LogLevel::kInfo, "node ready");
  Log(LogLevel::kDebug, "not shown");
  EXPECT_EQ(Captured(),
            "tpufleet: error: quota exceeded\n"
            "tpufleet: warning: retrying in 2s\n"
            "tpufleet: info: node ready\n");
}

TEST_F(LogToStderr, ErrorLevelShowsOnlyErrors) {
  SetLogLevel(LogLevel::kError);
  Log(LogLevel::kWarn, "hidden");
  Log(LogLevel::kError, "shown");
  EXPECT_EQ(Captured(), "tpufleet: error: shown\n");
}

TEST_F(LogToStderr, RedactsEveryLine) {
  SetLogLevel(LogLevel::kDebug);
  Log(LogLevel::kDebug, "GET /v2/nodes Authorization: Bearer ya29.a0AfH6SMBx");
  EXPECT_EQ(Captured(), "tpufleet: debug: GET /v2/nodes Authorization: Bearer [REDACTED]\n");
}

// Issue 10: log lines carry what the API or a worker said (a retry's error, an
// emulator request's path); an escape sequence there reached the terminal raw.
TEST_F(LogToStderr, Issue10ShowsTerminalControlsAsText) {
  SetLogLevel(LogLevel::kDebug);
  Log(LogLevel::kWarn, "GET nodes: 503 \x1b]52;c;cm0gLXJmIH4K\x07\x1b[2J; retry\nnext\xc2\x9b");
  EXPECT_EQ(Captured(),
            "tpufleet: warning: GET nodes: 503 \\x1b]52;c;cm0gLXJmIH4K\\x07\\x1b[2J; retry\n"
            "next\\xc2\\x9b\n");
}

TEST(Redact, BearerAndBasicCredentials) {
  EXPECT_EQ(Redact("Authorization: Bearer ya29.a0AfH6SMB_x-y~z+/="),
            "Authorization: Bearer [REDACTED]");
  EXPECT_EQ(Redact("authorization: bearer abc123XYZ.def next"),
            "authorization: bearer [REDACTED] next");
  EXPECT_EQ(Redact("BEARER 0123456789abcdef"), "BEARER [REDACTED]");
  EXPECT_EQ(Redact("Bearer ghp_16C7e42F292c6912E7710c838347Ae178B4a"), "Bearer [REDACTED]");
  EXPECT_EQ(Redact("Authorization: Basic dXNlcjpwYXNz"), "Authorization: Basic [REDACTED]");
}

TEST(Redact, GoogleAccessTokensAnywhere) {
  EXPECT_EQ(Redact("token ya29.c.b0AXv0zTP-abc_DEF in text"), "token [REDACTED] in text");
}

TEST(Redact, Jwts) {
  // header.payload.signature, each base64url; the header always starts "ey" ('{"').
  EXPECT_EQ(Redact("assertion is eyJhbGciOiJSUzI1NiJ9.eyJpc3MiOiJzYUBwLmlhbSJ9.c2lnbmF0dXJlX3g"
                   " (expires in 1h)"),
            "assertion is [REDACTED] (expires in 1h)");
}

TEST(Redact, PemPrivateKeys) {
  std::string text =
      "key:\n-----BEGIN RSA PRIVATE KEY-----\nMIIEpAIBAAKCAQEA3Tz2\nmr7SVBm+Z\n"
      "-----END RSA PRIVATE KEY-----\nthen -----BEGIN PRIVATE KEY-----\nMIIEvQ\n"
      "-----END PRIVATE KEY----- done";
  EXPECT_EQ(Redact(text), "key:\n[REDACTED]\nthen [REDACTED] done");
  // A public key or certificate is not a secret.
  std::string cert = "-----BEGIN CERTIFICATE-----\nMIIC\n-----END CERTIFICATE-----";
  EXPECT_EQ(Redact(cert), cert);
}

// A key cut off before its END line (a truncated log message) leaked whole.
TEST(RedactRegression, UnterminatedPemBlockIsMaskedToTheEnd) {
  EXPECT_EQ(Redact("read -----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAA"),
            "read [REDACTED]");
}

TEST(Redact, QueryAndFormFields) {
  EXPECT_EQ(Redact("POST https://oauth2.googleapis.com/token?grant_type=refresh_token"
                   "&refresh_token=1//0gAbC-dEf&client_secret=GOCSPX-xyz&client_id=123"),
            "POST https://oauth2.googleapis.com/token?grant_type=refresh_token"
            "&refresh_token=[REDACTED]&client_secret=[REDACTED]&client_id=123");
  EXPECT_EQ(Redact("access_token=abc.def password=hunter2 PASSWORD=x token=t1"),
            "access_token=[REDACTED] password=[REDACTED] PASSWORD=[REDACTED] token=[REDACTED]");
  EXPECT_EQ(Redact("assertion=eyJ0&id_token=q"), "assertion=[REDACTED]&id_token=[REDACTED]");
}

TEST(Redact, JsonFields) {
  EXPECT_EQ(
      Redact(R"({"refresh_token": "1//0gXYZ", "client_id": "123.apps.googleusercontent.com"})"),
      R"({"refresh_token": "[REDACTED]", "client_id": "123.apps.googleusercontent.com"})");
  EXPECT_EQ(Redact(R"({"access_token":"ya29.xyz","expires_in":3599})"),
            R"({"access_token":"[REDACTED]","expires_in":3599})");
  EXPECT_EQ(Redact(R"({"client_secret" : "GOCSPX-abc"})"), R"({"client_secret" : "[REDACTED]"})");
}

TEST(Redact, ServiceAccountPrivateKeyInJson) {
  // As in a service-account key file: the PEM's newlines are JSON escapes.
  std::string json =
      R"({"type": "service_account", "private_key_id": "4f0e", "private_key": )"
      R"("-----BEGIN PRIVATE KEY-----\nMIIEvQIBADANBgkqhkiG9w0BAQEFAASC\n-----END PRIVATE KEY-----\n", )"
      R"("client_email": "sa@p.iam.gserviceaccount.com"})";
  EXPECT_EQ(Redact(json),
            R"({"type": "service_account", "private_key_id": "4f0e", "private_key": "[REDACTED]", )"
            R"("client_email": "sa@p.iam.gserviceaccount.com"})");
}

// JSON values were masked only up to the first space or quote: a password with spaces,
// an escaped quote, or a key cut off before its END line leaked the rest.
TEST(RedactRegression, JsonValuesAreMaskedToTheirClosingQuote) {
  EXPECT_EQ(Redact(R"({"password": "correct horse battery staple", "user": "ana"})"),
            R"({"password": "[REDACTED]", "user": "ana"})");
  EXPECT_EQ(Redact(R"({"password": "a\"b c", "user": "ana"})"),
            R"({"password": "[REDACTED]", "user": "ana"})");
  EXPECT_EQ(Redact(R"("private_key": "-----BEGIN PRIVATE KEY-----\nMIIEvQIBADAN)"),
            R"("private_key": "[REDACTED])");
}

TEST(Redact, LongSecretsAreMaskedWhole) {
  // std::regex recurses per repeated character; secrets of this size must not exhaust the
  // stack (a 4096-bit RSA key in PEM is about 3.3 KiB).
  std::string value(16 * 1024, 'A');
  EXPECT_EQ(Redact(R"({"token": ")" + value + R"("})"), R"({"token": "[REDACTED]"})");
  EXPECT_EQ(Redact("-----BEGIN RSA PRIVATE KEY-----\n" + value + "\n-----END RSA PRIVATE KEY-----"),
            "[REDACTED]");
  EXPECT_EQ(Redact("Bearer " + value), "Bearer [REDACTED]");
}

// std::regex recursed once per matched character: one long secret (a PEM block with no
// END line followed by 100 KiB, as a truncated log of a key file could be) overflowed
// the stack and killed the process. The scanner is linear and recursion-free.
TEST(RedactRegression, HugeSecretsDoNotCrash) {
  std::string body(1 << 20, 'A');
  EXPECT_EQ(Redact("-----BEGIN PRIVATE KEY-----\n" + body), "[REDACTED]");
  EXPECT_EQ(Redact(R"({"password": ")" + body + R"("})"), R"({"password": "[REDACTED]"})");
  EXPECT_EQ(Redact("token=" + body + " next"), "token=[REDACTED] next");
  EXPECT_EQ(Redact("Bearer " + body + " next"), "Bearer [REDACTED] next");
}

TEST(Redact, LeavesOrdinaryTextAlone) {
  for (const char* text : {
           "creating v4-32 in us-central2-b (4 workers, 16 chips)",
           "GET https://tpu.googleapis.com/v2/projects/p/locations/us-central2-b/nodes?pageSize=50",
           "the access token expired; refreshing",
           "tokens=3 passwords: none",
           "key: value, eyes open",
           R"({"name": "node-1", "state": "READY", "tokens_used": 12})",
           "-----BEGIN PUBLIC KEY-----",
           "",
       }) {
    EXPECT_EQ(Redact(text), text);
  }
}

// Any word after "bearer" or "basic" was masked, so error messages lost their meaning.
TEST(RedactRegression, ProseAfterBearerOrBasicIsKept) {
  for (const char* text : {
           "server replied 401: missing bearer token",
           "expected a Bearer token in the Authorization header",
           "Basic setup finished on all workers",
       }) {
    EXPECT_EQ(Redact(text), text);
  }
}

}  // namespace
}  // namespace tpufleet
