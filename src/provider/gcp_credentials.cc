#include "provider/gcp_credentials.h"

#include <algorithm>
#include <mutex>
#include <utility>

#include <nlohmann/json.hpp>

#include "util/encoding.h"
#include "util/file.h"
#include "util/jwt.h"
#include "util/log.h"
#include "util/strings.h"

namespace tpufleet {
namespace {

using Json = nlohmann::json;

constexpr std::string_view kJwtBearerGrant = "urn:ietf:params:oauth:grant-type:jwt-bearer";
constexpr std::string_view kDefaultMetadataHost = "169.254.169.254";
constexpr std::string_view kAdcFileName = "application_default_credentials.json";
/// A service-account key is about 2.3 KiB and a token a few hundred bytes; a path that
/// names something far larger (a device, a log) is refused, not read whole.
constexpr size_t kMaxCredentialFileBytes = 1 << 20;

std::optional<std::string> Getenv(const CredentialOptions& options, const std::string& name) {
  if (!options.env) {
    return std::nullopt;
  }
  std::optional<std::string> v = options.env(name);
  if (v && v->empty()) {
    return std::nullopt;
  }
  return v;
}

struct FetchedToken {
  std::string token;
  std::chrono::seconds lifetime{0};
};

// The caching every fetching source shares: one fetch at a time, a token reused until
// kTokenRefreshMargin before its end (or half its life, for short-lived ones).
class CachedTokenSource : public TokenSource {
 public:
  explicit CachedTokenSource(Clock& clock) : clock_(clock) {}

  void Refused() final {
    std::lock_guard<std::mutex> l(mu_);
    token_.clear();
  }

  Result<std::string> AccessToken() final {
    std::lock_guard<std::mutex> l(mu_);
    Clock::MonoTime now = clock_.MonotonicNow();
    if (!token_.empty() && now < refresh_at_) {
      return token_;
    }
    Result<FetchedToken> fetched = Fetch();
    if (!fetched.ok()) {
      // The endpoint is down but the old token still works: use it meanwhile.
      StatusCode code = fetched.status().code();
      if (!token_.empty() && now < expires_at_ &&
          (code == StatusCode::kUnavailable || code == StatusCode::kTimeout)) {
        return token_;
      }
      return fetched.status();
    }
    token_ = std::move(fetched->token);
    std::chrono::seconds life = fetched->lifetime;
    expires_at_ = now + life;
    refresh_at_ = now + std::max(life - kTokenRefreshMargin, life / 2);
    return token_;
  }

 protected:
  virtual Result<FetchedToken> Fetch() = 0;
  Clock& clock() { return clock_; }

 private:
  Clock& clock_;
  std::mutex mu_;
  std::string token_;           // guarded by mu_
  Clock::MonoTime expires_at_;  // guarded by mu_
  Clock::MonoTime refresh_at_;  // guarded by mu_
};

// A POST of `fields` as a form to a token endpoint.
HttpRequest FormPost(const std::string& url, const std::map<std::string, std::string>& fields) {
  HttpRequest req;
  req.method = "POST";
  req.url = url;
  req.headers["Content-Type"] = "application/x-www-form-urlencoded";
  req.body = FormEncode(fields);
  req.timeout = kTokenRequestTimeout;
  return req;
}

// Reads an OAuth2 token answer ({"access_token", "expires_in", …}) from `endpoint`.
// `who` describes the credentials and `hint` says what to do when they are refused.
Result<FetchedToken> ReadTokenReply(const Result<HttpResponse>& reply, std::string_view endpoint,
                                    std::string_view who, std::string_view hint) {
  if (!reply.ok()) {
    return Status(reply.status().code(), "cannot get an access token for " + std::string(who) +
                                             " from " + std::string(endpoint) + ": " +
                                             reply.status().message());
  }
  Json body = Json::parse(reply->body, nullptr, false);
  if (reply->status >= 400 && reply->status < 500 && reply->status != 429) {
    std::string why = "HTTP " + std::to_string(reply->status);
    if (body.is_object() && body.contains("error")) {
      // Google answers {"error": "invalid_grant", "error_description": "…"}.
      const Json& e = body["error"];
      why = e.is_string() ? e.get<std::string>() : e.dump();
      if (body.contains("error_description") && body["error_description"].is_string()) {
        why += ": " + body["error_description"].get<std::string>();
      }
    }
    return PermissionDeniedError(std::string(endpoint) + " refused " + std::string(who) + ": " +
                                 Redact(why) + std::string(hint));
  }
  if (reply->status != 200) {
    return UnavailableError("token endpoint " + std::string(endpoint) + " answered HTTP " +
                            std::to_string(reply->status));
  }
  if (!body.is_object() || !body.contains("access_token") || !body["access_token"].is_string() ||
      body["access_token"].get<std::string>().empty()) {
    return UnavailableError("token endpoint " + std::string(endpoint) +
                            " answered without an access_token");
  }
  FetchedToken out;
  out.token = body["access_token"].get<std::string>();
  out.lifetime = kDefaultTokenLifetime;
  if (body.contains("expires_in") && body["expires_in"].is_number()) {
    // As a double, which holds any JSON number without overflow; NaN fails `> 0`.
    double given = body["expires_in"].get<double>();
    double most = static_cast<double>(kMaxTokenLifetime.count());
    out.lifetime =
        std::chrono::seconds(given > 0 ? static_cast<long long>(std::min(given, most)) : 0);
  }
  return out;
}

// What a service_account key file holds that a token needs.
struct ServiceAccountKeyFile {
  std::string path;
  std::string email;
  std::string key_id;       // private_key_id; "" leaves kid out of the JWT
  std::string private_key;  // a secret: never in a message
  std::string token_uri;
};

// A service-account key: an RS256 JWT traded at the key's token_uri (RFC 7523).
class ServiceAccountSource final : public CachedTokenSource {
 public:
  ServiceAccountSource(ServiceAccountKeyFile key, HttpClient& http, Clock& clock)
      : CachedTokenSource(clock), key_(std::move(key)), http_(http) {}

  std::string Describe() const override {
    return "service account " + key_.email + " (key file " + key_.path + ")";
  }
  std::string Renewal() const override {
    return "is the key deleted or disabled? make a new one with `gcloud iam service-accounts "
           "keys create`";
  }

 protected:
  Result<FetchedToken> Fetch() override {
    long long iat =
        std::chrono::duration_cast<std::chrono::seconds>(clock().Now().time_since_epoch()).count();
    Json claims{{"iss", key_.email},
                {"scope", std::string(kCloudPlatformScope)},
                {"aud", key_.token_uri},
                {"iat", iat},
                {"exp", iat + kServiceAccountJwtLifetime.count()}};
    Result<std::string> jwt = SignJwtRs256(claims.dump(), key_.private_key, key_.key_id);
    if (!jwt.ok()) {
      return InvalidArgumentError(
          "credentials file " + key_.path +
          ": cannot sign with field 'private_key': " + jwt.status().message());
    }
    HttpRequest req = FormPost(key_.token_uri,
                               {{"grant_type", std::string(kJwtBearerGrant)}, {"assertion", *jwt}});
    return ReadTokenReply(http_.Send(req), key_.token_uri, Describe(), " (" + Renewal() + ")");
  }

 private:
  const ServiceAccountKeyFile key_;
  HttpClient& http_;
};

// What an authorized_user file (gcloud auth application-default login) holds.
struct AuthorizedUserFile {
  std::string path;
  std::string client_id;
  std::string client_secret;  // a secret
  std::string refresh_token;  // a secret
  std::string token_uri;
};

// authorized_user credentials: a refresh token traded at the token_uri.
class AuthorizedUserSource final : public CachedTokenSource {
 public:
  AuthorizedUserSource(AuthorizedUserFile user, HttpClient& http, Clock& clock)
      : CachedTokenSource(clock), user_(std::move(user)), http_(http) {}

  std::string Describe() const override { return "authorized-user credentials " + user_.path; }
  std::string Renewal() const override {
    return "run `gcloud auth application-default login` again";
  }

 protected:
  Result<FetchedToken> Fetch() override {
    HttpRequest req = FormPost(user_.token_uri, {{"grant_type", "refresh_token"},
                                                 {"client_id", user_.client_id},
                                                 {"client_secret", user_.client_secret},
                                                 {"refresh_token", user_.refresh_token}});
    return ReadTokenReply(http_.Send(req), user_.token_uri, Describe(), " (" + Renewal() + ")");
  }

 private:
  const AuthorizedUserFile user_;
  HttpClient& http_;
};

// The default service account of a GCE or TPU VM, from its metadata server.
class MetadataServerSource final : public CachedTokenSource {
 public:
  MetadataServerSource(std::string host, HttpClient& http, Clock& clock)
      : CachedTokenSource(clock), host_(std::move(host)), http_(http) {}

  std::string Describe() const override {
    return "the VM's default service account (metadata server " + host_ + ")";
  }
  std::string Renewal() const override {
    return "does the VM have a service account with the cloud-platform scope?";
  }

 protected:
  Result<FetchedToken> Fetch() override {
    HttpRequest req;
    req.url = "http://" + host_ + "/computeMetadata/v1/instance/service-accounts/default/token";
    req.headers["Metadata-Flavor"] = "Google";
    req.timeout = kTokenRequestTimeout;
    return ReadTokenReply(http_.Send(req), req.url, Describe(), " (" + Renewal() + ")");
  }

 private:
  const std::string host_;
  HttpClient& http_;
};

// A file holding an access token that someone else keeps fresh: read on every call.
class AccessTokenFileSource final : public TokenSource {
 public:
  explicit AccessTokenFileSource(std::string path) : path_(std::move(path)) {}

  Result<std::string> AccessToken() override {
    Result<std::string> text = ReadFile(path_, kMaxCredentialFileBytes);
    if (!text.ok()) {
      return PermissionDeniedError("cannot read the access token file: " + text.status().message());
    }
    std::string token(Trim(*text));
    if (token.empty()) {
      return PermissionDeniedError("the access token file " + path_ + " is empty");
    }
    return token;
  }

  std::string Describe() const override { return "access token file " + path_; }
  std::string Renewal() const override {
    return "write a fresh token to " + path_ +
           " (`gcloud auth print-access-token > FILE`); it is read again at every call";
  }

 private:
  const std::string path_;
};

// The string field `name` of a key file, or InvalidArgument naming file and field.
Result<std::string> StringField(const Json& j, const char* name, const std::string& path) {
  if (!j.contains(name) || !j[name].is_string() || j[name].get<std::string>().empty()) {
    return InvalidArgumentError("credentials file " + path + ": field '" + name +
                                "' is missing or not a non-empty string");
  }
  return j[name].get<std::string>();
}

std::string OptionalField(const Json& j, const char* name, std::string_view fallback) {
  if (j.contains(name) && j[name].is_string() && !j[name].get<std::string>().empty()) {
    return j[name].get<std::string>();
  }
  return std::string(fallback);
}

// Reads the key file `path` named by `origin` ("GOOGLE_APPLICATION_CREDENTIALS").
Result<std::unique_ptr<TokenSource>> LoadKeyFile(const std::string& path, std::string_view origin,
                                                 HttpClient& http, Clock& clock) {
  Result<std::string> text = ReadFile(path, kMaxCredentialFileBytes);
  if (!text.ok()) {
    return InvalidArgumentError(std::string(origin) + " names a credentials file that cannot be " +
                                "read: " + text.status().message());
  }
  return CredentialsFromJson(*text, path, http, clock);
}

// An access token file named by `origin`; InvalidArgument when it cannot be read now.
Result<std::unique_ptr<TokenSource>> LoadTokenFile(const std::string& path,
                                                   std::string_view origin) {
  if (Result<std::string> text = ReadFile(path, kMaxCredentialFileBytes); !text.ok()) {
    return InvalidArgumentError(
        std::string(origin) +
        " names an access token file that cannot be read: " + text.status().message());
  }
  return std::unique_ptr<TokenSource>(std::make_unique<AccessTokenFileSource>(path));
}

// OK when a metadata server answers at `host` (with its Metadata-Flavor header).
Status ProbeMetadataServer(const std::string& host, HttpClient& http) {
  HttpRequest req;
  req.url = "http://" + host + "/computeMetadata/v1/instance";
  req.headers["Metadata-Flavor"] = "Google";
  req.timeout = kMetadataProbeTimeout;
  Result<HttpResponse> r = http.Send(req);
  if (!r.ok()) {
    return r.status();
  }
  auto flavor = r->headers.find("metadata-flavor");
  if (r->status != 200 || flavor == r->headers.end() || flavor->second != "Google") {
    return UnavailableError("http://" + host + " is not a metadata server (HTTP " +
                            std::to_string(r->status) + ")");
  }
  return Status::Ok();
}

}  // namespace

Result<std::unique_ptr<TokenSource>> CredentialsFromJson(std::string_view json,
                                                         const std::string& path, HttpClient& http,
                                                         Clock& clock) {
  Json j = Json::parse(json, nullptr, false);
  if (!j.is_object()) {
    return InvalidArgumentError("credentials file " + path + " is not a JSON object");
  }
  TPUFLEET_ASSIGN_OR_RETURN(std::string type, StringField(j, "type", path));
  if (type == "service_account") {
    ServiceAccountKeyFile key;
    key.path = path;
    TPUFLEET_ASSIGN_OR_RETURN(key.email, StringField(j, "client_email", path));
    TPUFLEET_ASSIGN_OR_RETURN(key.private_key, StringField(j, "private_key", path));
    if (!PublicKeyOfPrivateKey(key.private_key).ok()) {
      return InvalidArgumentError("credentials file " + path +
                                  ": field 'private_key' is not a PEM private key");
    }
    key.key_id = OptionalField(j, "private_key_id", "");
    key.token_uri = OptionalField(j, "token_uri", kGoogleTokenUri);
    return std::unique_ptr<TokenSource>(
        std::make_unique<ServiceAccountSource>(std::move(key), http, clock));
  }
  if (type == "authorized_user") {
    AuthorizedUserFile user;
    user.path = path;
    TPUFLEET_ASSIGN_OR_RETURN(user.client_id, StringField(j, "client_id", path));
    TPUFLEET_ASSIGN_OR_RETURN(user.client_secret, StringField(j, "client_secret", path));
    TPUFLEET_ASSIGN_OR_RETURN(user.refresh_token, StringField(j, "refresh_token", path));
    user.token_uri = OptionalField(j, "token_uri", kGoogleTokenUri);
    return std::unique_ptr<TokenSource>(
        std::make_unique<AuthorizedUserSource>(std::move(user), http, clock));
  }
  return InvalidArgumentError("credentials file " + path + ": field 'type' is \"" + type +
                              "\"; tpufleet reads \"service_account\" and \"authorized_user\" "
                              "credentials");
}

Result<std::unique_ptr<TokenSource>> FindGcpCredentials(const CredentialOptions& options,
                                                        HttpClient& http, Clock& clock) {
  if (!options.key_file.empty()) {
    return LoadKeyFile(options.key_file, "the key file option", http, clock);
  }
  if (!options.access_token_file.empty()) {
    return LoadTokenFile(options.access_token_file, "the access token file option");
  }
  if (std::optional<std::string> p = Getenv(options, "GOOGLE_APPLICATION_CREDENTIALS")) {
    return LoadKeyFile(*p, "GOOGLE_APPLICATION_CREDENTIALS", http, clock);
  }
  if (std::optional<std::string> p = Getenv(options, "CLOUDSDK_AUTH_ACCESS_TOKEN_FILE")) {
    return LoadTokenFile(*p, "CLOUDSDK_AUTH_ACCESS_TOKEN_FILE");
  }
  std::optional<std::string> config_dir = Getenv(options, "CLOUDSDK_CONFIG");
  if (!config_dir) {
    if (std::optional<std::string> home = Getenv(options, "HOME")) {
      config_dir = *home + "/.config/gcloud";
    }
  }
  if (config_dir) {
    std::string adc = *config_dir + "/" + std::string(kAdcFileName);
    Result<std::string> text = ReadFile(adc, kMaxCredentialFileBytes);
    if (text.ok()) {
      return CredentialsFromJson(*text, adc, http, clock);
    }
    if (text.status().code() != StatusCode::kNotFound) {
      return InvalidArgumentError("cannot read the application-default credentials: " +
                                  text.status().message());
    }
  }
  std::optional<std::string> host = Getenv(options, "GCE_METADATA_HOST");
  if (!host) {
    host = Getenv(options, "GCE_METADATA_IP");
  }
  bool host_given = host.has_value();
  std::string metadata_host = host.value_or(std::string(kDefaultMetadataHost));
  Status probe = ProbeMetadataServer(metadata_host, http);
  if (probe.ok()) {
    return std::unique_ptr<TokenSource>(
        std::make_unique<MetadataServerSource>(metadata_host, http, clock));
  }
  if (host_given) {
    return PermissionDeniedError("GCE_METADATA_HOST (or _IP) names " + metadata_host +
                                 ", but no metadata server answers there: " + probe.message());
  }
  return PermissionDeniedError(
      "no Google credentials found. Give some in one of these ways: run `gcloud auth "
      "application-default login`; set GOOGLE_APPLICATION_CREDENTIALS to a service-account "
      "key file; set CLOUDSDK_AUTH_ACCESS_TOKEN_FILE to a file holding an access token; or "
      "run on a Google Cloud VM with a service account (no metadata server answered at " +
      metadata_host + ")");
}

}  // namespace tpufleet
