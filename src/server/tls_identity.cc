#include "server/tls_identity.h"

#include <arpa/inet.h>
#include <openssl/bio.h>
#include <openssl/bn.h>
#include <openssl/ec.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/rand.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>
#include <sys/stat.h>

#include <algorithm>
#include <memory>

#include "util/fingerprint.h"
#include "util/file.h"
#include "util/private_file.h"
#include "util/strings.h"

namespace tpufleet::server {
namespace {

// A certificate file with a chain of a few certificates is a few KiB; a key one less.
constexpr size_t kMaxPemBytes = 64 << 10;
// Serial numbers: 16 random bytes, positive (RFC 5280 allows up to 20 octets).
constexpr int kSerialBytes = 16;

template <typename T, void (*Free)(T*)>
struct Deleter {
  void operator()(T* p) const { Free(p); }
};
using Bio = std::unique_ptr<BIO, Deleter<BIO, BIO_free_all>>;
using Cert = std::unique_ptr<X509, Deleter<X509, X509_free>>;
using Key = std::unique_ptr<EVP_PKEY, Deleter<EVP_PKEY, EVP_PKEY_free>>;
using Ext = std::unique_ptr<X509_EXTENSION, Deleter<X509_EXTENSION, X509_EXTENSION_free>>;
using Bignum = std::unique_ptr<BIGNUM, Deleter<BIGNUM, BN_free>>;

Bio MemoryBio(const std::string& text) {
  return Bio(BIO_new_mem_buf(text.data(), static_cast<int>(text.size())));
}

std::string BioText(BIO* bio) {
  char* data = nullptr;
  long n = BIO_get_mem_data(bio, &data);
  return n > 0 ? std::string(data, static_cast<size_t>(n)) : "";
}

Result<std::string> Fingerprint(X509* cert) {
  int n = i2d_X509(cert, nullptr);
  if (n <= 0) {
    return InternalError("cannot encode the certificate");
  }
  std::string der(static_cast<size_t>(n), '\0');
  auto* out = reinterpret_cast<unsigned char*>(der.data());
  i2d_X509(cert, &out);
  return Sha256Fingerprint(der);
}

// The identity of `cert_pem` and `key_pem` (read from `cert_path` and `key_path`),
// checked: a certificate, a key, and the key the certificate's.
Result<TlsIdentity> Parse(const std::string& cert_pem, const std::string& key_pem,
                          const std::string& cert_path, const std::string& key_path) {
  Bio cert_bio = MemoryBio(cert_pem);
  Cert cert(PEM_read_bio_X509(cert_bio.get(), nullptr, nullptr, nullptr));
  if (!cert) {
    return InvalidArgumentError(cert_path + " holds no PEM certificate");
  }
  Bio key_bio = MemoryBio(key_pem);
  // No passphrase callback: an encrypted key fails here rather than prompt.
  Key key(PEM_read_bio_PrivateKey(key_bio.get(), nullptr,
                                  [](char*, int, int, void*) { return 0; }, nullptr));
  if (!key) {
    return InvalidArgumentError(key_path + " holds no unencrypted PEM private key");
  }
  if (X509_check_private_key(cert.get(), key.get()) != 1) {
    return InvalidArgumentError(key_path + " is not the key of the certificate in " + cert_path);
  }
  TPUFLEET_ASSIGN_OR_RETURN(std::string fingerprint, Fingerprint(cert.get()));
  return TlsIdentity{cert_pem, key_pem, std::move(fingerprint), cert_path};
}

Status AddExtension(X509* cert, int nid, const std::string& value) {
  X509V3_CTX ctx;
  X509V3_set_ctx_nodb(&ctx);
  X509V3_set_ctx(&ctx, cert, cert, nullptr, nullptr, 0);
  Ext ext(X509V3_EXT_conf_nid(nullptr, &ctx, nid, value.c_str()));
  if (!ext || X509_add_ext(cert, ext.get(), -1) != 1) {
    return InternalError("cannot add " + std::string(OBJ_nid2sn(nid)) + " = " + value +
                         " to serve's certificate");
  }
  return Status::Ok();
}

// A fresh key and self-signed certificate for `names`, as PEM: {certificate, key}.
Result<std::pair<std::string, std::string>> MakeIdentity(const std::vector<std::string>& names) {
  Key key(EVP_EC_gen("P-256"));
  Cert cert(X509_new());
  if (!key || !cert) {
    return InternalError("cannot make an ECDSA P-256 key");
  }
  unsigned char serial[kSerialBytes];
  if (RAND_bytes(serial, sizeof serial) != 1) {
    return InternalError("no random bytes for the certificate's serial number");
  }
  serial[0] &= 0x7f;  // positive
  Bignum bn(BN_bin2bn(serial, sizeof serial, nullptr));
  X509_set_version(cert.get(), 2);  // v3, for the extensions
  if (!bn || BN_to_ASN1_INTEGER(bn.get(), X509_get_serialNumber(cert.get())) == nullptr) {
    return InternalError("cannot set the certificate's serial number");
  }
  X509_gmtime_adj(X509_getm_notBefore(cert.get()), -3600);  // clocks a little behind
  X509_time_adj_ex(X509_getm_notAfter(cert.get()), kServeCertificateDays, 0, nullptr);
  X509_set_pubkey(cert.get(), key.get());
  X509_NAME* subject = X509_get_subject_name(cert.get());
  X509_NAME_add_entry_by_txt(subject, "CN", MBSTRING_ASC,
                             reinterpret_cast<const unsigned char*>("tpufleet serve"), -1, -1, 0);
  X509_set_issuer_name(cert.get(), subject);
  TPUFLEET_TRY(AddExtension(cert.get(), NID_subject_alt_name, Join(names, ",")));
  TPUFLEET_TRY(AddExtension(cert.get(), NID_basic_constraints, "critical,CA:FALSE"));
  TPUFLEET_TRY(AddExtension(cert.get(), NID_key_usage, "critical,digitalSignature"));
  TPUFLEET_TRY(AddExtension(cert.get(), NID_ext_key_usage, "serverAuth"));
  if (X509_sign(cert.get(), key.get(), EVP_sha256()) <= 0) {
    return InternalError("cannot sign serve's certificate");
  }
  Bio cert_out(BIO_new(BIO_s_mem()));
  Bio key_out(BIO_new(BIO_s_mem()));
  if (!cert_out || !key_out || PEM_write_bio_X509(cert_out.get(), cert.get()) != 1 ||
      PEM_write_bio_PrivateKey(key_out.get(), key.get(), nullptr, nullptr, 0, nullptr,
                               nullptr) != 1) {
    return InternalError("cannot write serve's certificate and key as PEM");
  }
  return std::make_pair(BioText(cert_out.get()), BioText(key_out.get()));
}

bool IsIpAddress(const std::string& text) {
  unsigned char buf[sizeof(in6_addr)];
  return ::inet_pton(AF_INET, text.c_str(), buf) == 1 ||
         ::inet_pton(AF_INET6, text.c_str(), buf) == 1;
}

bool Exists(const std::string& path) {
  struct stat st {};
  return ::lstat(path.c_str(), &st) == 0;
}

}  // namespace

std::string ServeCertPath(const std::string& state_dir) {
  return state_dir + "/serve/tls.crt";
}

std::string ServeKeyPath(const std::string& state_dir) {
  return state_dir + "/serve/tls.key";
}

std::vector<std::string> ServeCertificateNames(const std::string& listen_address,
                                               const std::string& host_name) {
  std::vector<std::string> names = {"DNS:localhost", "IP:127.0.0.1", "IP:::1"};
  auto add = [&names](const std::string& name) {
    if (std::find(names.begin(), names.end(), name) == names.end()) {
      names.push_back(name);
    }
  };
  if (listen_address == "0.0.0.0" || listen_address == "::" || listen_address.empty()) {
    if (!host_name.empty()) {
      add("DNS:" + host_name);
    }
  } else {
    add((IsIpAddress(listen_address) ? "IP:" : "DNS:") + listen_address);
  }
  return names;
}

Result<TlsIdentity> LoadOrMakeServeIdentity(const std::string& state_dir,
                                            const std::vector<std::string>& names) {
  TPUFLEET_TRY(MakePrivateDirs(state_dir + "/serve"));
  std::string cert_path = ServeCertPath(state_dir);
  std::string key_path = ServeKeyPath(state_dir);
  if (Exists(cert_path) && Exists(key_path)) {
    return LoadTlsIdentity(cert_path, key_path);
  }
  TPUFLEET_ASSIGN_OR_RETURN(auto made, MakeIdentity(names));
  // The key first: a certificate is never on disk without the key it names.
  TPUFLEET_TRY(WriteFileAtomic(key_path, made.second, 0600));
  TPUFLEET_TRY(WriteFileAtomic(cert_path, made.first, 0644));
  return Parse(made.first, made.second, cert_path, key_path);
}

Result<TlsIdentity> LoadTlsIdentity(const std::string& cert_path, const std::string& key_path) {
  TPUFLEET_ASSIGN_OR_RETURN(std::string key_pem, ReadPrivateFile(key_path, kMaxPemBytes));
  TPUFLEET_ASSIGN_OR_RETURN(std::string cert_pem, ReadFile(cert_path, kMaxPemBytes));
  return Parse(cert_pem, key_pem, cert_path, key_path);
}

}  // namespace tpufleet::server
