// serve's TLS identity as an operator meets it: made at first start with the key private,
// the same pair at every later start, a key others may read (or another user's) refused,
// and a pair given with --tls-cert and --tls-key taken as it is.
#include "server/tls_identity.h"

#include <sys/stat.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <chrono>

#include "util/fingerprint.h"
#include "util/file.h"
#include "util/subprocess.h"
#include "util/testing/as_nobody.h"
#include "util/testing/file_mode.h"
#include "util/testing/temp_dir.h"

namespace tpufleet::server {
namespace {

// What `openssl ARGS…` prints (stdout and stderr).
std::string OpenSsl(std::vector<std::string> args) {
  args.insert(args.begin(), "/usr/bin/openssl");
  Result<ProgramResult> r = RunSubprocess(args, "", std::chrono::seconds(30), SpawnOptions{});
  EXPECT_TRUE(r.ok() && r->exit_code == 0) << (r.ok() ? r->output : r.status().ToString());
  return r.ok() ? r->output : "";
}

const std::vector<std::string> kNames = ServeCertificateNames("127.0.0.1", "lab");

TEST(ServeCertificateNames, CoverLoopbackAndTheAddressServed) {
  EXPECT_EQ(ServeCertificateNames("127.0.0.1", "lab"),
            (std::vector<std::string>{"DNS:localhost", "IP:127.0.0.1", "IP:::1"}));
  EXPECT_EQ(ServeCertificateNames("10.1.2.3", "lab"),
            (std::vector<std::string>{"DNS:localhost", "IP:127.0.0.1", "IP:::1", "IP:10.1.2.3"}));
  EXPECT_EQ(ServeCertificateNames("0.0.0.0", "lab"),
            (std::vector<std::string>{"DNS:localhost", "IP:127.0.0.1", "IP:::1", "DNS:lab"}));
  EXPECT_EQ(ServeCertificateNames("serve.lab.example", "lab").back(), "DNS:serve.lab.example");
}

TEST(ServeIdentity, MadeAtFirstStartWithAPrivateKeyAndKept) {
  TempDir dir;
  Result<TlsIdentity> first = LoadOrMakeServeIdentity(dir.path(), kNames);
  ASSERT_TRUE(first.ok()) << first.status().ToString();
  EXPECT_TRUE(IsSha256Fingerprint(first->fingerprint)) << first->fingerprint;
  EXPECT_EQ(first->cert_path, ServeCertPath(dir.path()));
  EXPECT_EQ(PermissionsOf(ServeKeyPath(dir.path())), 0600u);
  EXPECT_EQ(PermissionsOf(dir.Path("serve")), 0700u);
  EXPECT_NE(first->key_pem.find("BEGIN PRIVATE KEY"), std::string::npos);
  Result<TlsIdentity> again = LoadOrMakeServeIdentity(dir.path(), kNames);
  ASSERT_TRUE(again.ok()) << again.status().ToString();
  EXPECT_EQ(again->fingerprint, first->fingerprint);
  EXPECT_EQ(again->cert_pem, first->cert_pem);

  // What OpenSSL's own tool reads in it: P-256, the names, the fingerprint it prints.
  std::string text = OpenSsl({"x509", "-in", ServeCertPath(dir.path()), "-noout", "-text"});
  EXPECT_NE(text.find("ASN1 OID: prime256v1"), std::string::npos) << text;
  EXPECT_NE(text.find("DNS:localhost, IP Address:127.0.0.1, IP Address:0:0:0:0:0:0:0:1"),
            std::string::npos)
      << text;
  std::string der = OpenSsl({"x509", "-in", ServeCertPath(dir.path()), "-outform", "DER"});
  EXPECT_EQ(Sha256Fingerprint(der), first->fingerprint);
}

TEST(ServeIdentity, AKeyOthersMayReadIsRefused) {
  TempDir dir;
  ASSERT_TRUE(LoadOrMakeServeIdentity(dir.path(), kNames).ok());
  std::string key = ServeKeyPath(dir.path());
  ASSERT_EQ(::chmod(key.c_str(), 0644), 0);
  Result<TlsIdentity> r = LoadOrMakeServeIdentity(dir.path(), kNames);
  EXPECT_EQ(r.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(r.status().message(), key + " has mode 0644: others may read or write it");
}

TEST(ServeIdentity, AKeyOfAnotherUserIsRefused) {
  if (auto why = NobodySkipReason()) {
    GTEST_SKIP() << *why;
  }
  TempDir dir;
  ASSERT_TRUE(LoadOrMakeServeIdentity(dir.path(), kNames).ok());
  std::string key = ServeKeyPath(dir.path());
  ASSERT_EQ(::chown(key.c_str(), 65534, 65534), 0);
  Result<TlsIdentity> r = LoadOrMakeServeIdentity(dir.path(), kNames);
  EXPECT_EQ(r.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(r.status().message().find(key + " belongs to nobody"), std::string::npos)
      << r.status().message();
}

TEST(ServeIdentity, AGivenPairIsTakenAndAMismatchRefused) {
  TempDir a;
  TempDir b;
  Result<TlsIdentity> one = LoadOrMakeServeIdentity(a.path(), kNames);
  Result<TlsIdentity> two = LoadOrMakeServeIdentity(b.path(), kNames);
  ASSERT_TRUE(one.ok() && two.ok());
  EXPECT_NE(one->fingerprint, two->fingerprint);
  Result<TlsIdentity> given = LoadTlsIdentity(ServeCertPath(b.path()), ServeKeyPath(b.path()));
  ASSERT_TRUE(given.ok()) << given.status().ToString();
  EXPECT_EQ(given->fingerprint, two->fingerprint);
  Result<TlsIdentity> crossed = LoadTlsIdentity(ServeCertPath(a.path()), ServeKeyPath(b.path()));
  EXPECT_EQ(crossed.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(crossed.status().message(), ServeKeyPath(b.path()) +
                                            " is not the key of the certificate in " +
                                            ServeCertPath(a.path()));
  Result<TlsIdentity> no_cert = LoadTlsIdentity(ServeKeyPath(a.path()), ServeKeyPath(a.path()));
  EXPECT_EQ(no_cert.status().message(), ServeKeyPath(a.path()) + " holds no PEM certificate");
}

TEST(ServeIdentity, AHalfMadePairIsMadeAgain) {
  TempDir dir;
  ASSERT_TRUE(LoadOrMakeServeIdentity(dir.path(), kNames).ok());
  ASSERT_EQ(::unlink(ServeCertPath(dir.path()).c_str()), 0);
  Result<TlsIdentity> r = LoadOrMakeServeIdentity(dir.path(), kNames);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(*ReadFile(ServeCertPath(dir.path())), r->cert_pem);
}

}  // namespace
}  // namespace tpufleet::server
