// Google credentials for the gcp-tpu provider: where an OAuth2 access token comes from,
// found the way Google's own tools find it (shared/reference/tpu-api.md §7, §8).
//
// FindGcpCredentials looks, in this order, and takes the first that is there:
//   1. the options: CredentialOptions::key_file, else ::access_token_file;
//   2. the environment: $GOOGLE_APPLICATION_CREDENTIALS (a key file), else
//      $CLOUDSDK_AUTH_ACCESS_TOKEN_FILE;
//   3. the well-known key file `gcloud auth application-default login` writes:
//      $CLOUDSDK_CONFIG/application_default_credentials.json, else
//      $HOME/.config/gcloud/application_default_credentials.json;
//   4. the metadata server of a GCE or TPU VM ($GCE_METADATA_HOST, else
//      $GCE_METADATA_IP, else 169.254.169.254), when a short probe finds one.
// A key file is JSON of type "service_account" (an RS256 JWT traded at its token_uri)
// or "authorized_user" (a refresh token traded at its token_uri, default Google's). An
// access token file holds just a token and is read again on every call (whoever writes
// it keeps it fresh), like gcloud's auth/access_token_file. The environment is passed
// in (CredentialOptions::env), never read here, so tests are hermetic and only src/app
// touches the process's environment.
//
// Errors: a file that is named but unreadable or malformed is InvalidArgument naming the
// file and the field; a token endpoint that refuses the credentials is PermissionDenied
// naming the file, the endpoint and Google's error_description ("Invalid JWT
// Signature."); no credentials anywhere is PermissionDenied listing the ways to give
// some. A token endpoint that is down is Unavailable (callers retry). No message or log
// line ever holds a private key, refresh token, client secret or access token.
//
// Thread-safety: a TokenSource may be shared by any number of threads; a fetch happens
// under its lock, so concurrent callers wait for one fetch instead of making several.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "util/clock.h"
#include "util/http_client.h"
#include "util/status.h"

namespace tpufleet {

/// The one scope the TPU API needs (tpu-api.md §1).
inline constexpr std::string_view kCloudPlatformScope =
    "https://www.googleapis.com/auth/cloud-platform";
/// Where authorized_user credentials without a token_uri trade their refresh token.
inline constexpr std::string_view kGoogleTokenUri = "https://oauth2.googleapis.com/token";
/// Lifetime asked for a service-account JWT: the longest Google accepts.
inline constexpr std::chrono::seconds kServiceAccountJwtLifetime{3600};
/// A cached token is replaced this long before it expires, so a request that starts
/// with it does not meet its end in flight (google-auth-library uses the same 5 min).
inline constexpr std::chrono::seconds kTokenRefreshMargin{300};
/// The lifetime of a token whose answer gives none: Google's tokens last an hour.
inline constexpr std::chrono::seconds kDefaultTokenLifetime{3599};
/// The longest an answer's expires_in is believed: Google's longest tokens (a service
/// account's, extended by an organization policy) last 12 hours. A larger, negative or
/// fractional value is brought into [0, this], so a broken or hostile endpoint can
/// neither overflow the clock arithmetic nor make a token live for ever.
inline constexpr std::chrono::seconds kMaxTokenLifetime{12 * 3600};
/// How long the metadata-server probe may take: off GCE nothing answers at
/// 169.254.169.254, and the CLI must not hang on that.
inline constexpr std::chrono::milliseconds kMetadataProbeTimeout{500};
/// A token request (token endpoint or metadata server) as a whole.
inline constexpr std::chrono::milliseconds kTokenRequestTimeout{20000};

/// Looks up one environment variable; nullopt when unset. Empty values count as unset.
using EnvLookup = std::function<std::optional<std::string>(const std::string& name)>;

struct CredentialOptions {
  /// A key file to use instead of $GOOGLE_APPLICATION_CREDENTIALS; "" = none given.
  std::string key_file;
  /// A file holding an access token; "" = none given ($CLOUDSDK_AUTH_ACCESS_TOKEN_FILE).
  std::string access_token_file;
  /// The process environment (GOOGLE_APPLICATION_CREDENTIALS, CLOUDSDK_CONFIG, HOME, …).
  /// Unset: an empty environment.
  EnvLookup env;
};

/// Where an access token comes from. AccessToken is cached and refreshed
/// kTokenRefreshMargin before expiry, or after Refused (except for a token file, read
/// on every call).
class TokenSource {
 public:
  TokenSource() = default;
  TokenSource(const TokenSource&) = delete;
  TokenSource& operator=(const TokenSource&) = delete;
  virtual ~TokenSource() = default;

  /// A token valid for at least a little longer. PermissionDenied when the credentials
  /// are refused; Unavailable or Timeout when the token endpoint cannot be reached.
  virtual Result<std::string> AccessToken() = 0;

  /// Which credentials these are, for messages; never a secret: "service account
  /// a@p.iam.gserviceaccount.com (key file /k.json)".
  virtual std::string Describe() const = 0;

  /// What the user does when these credentials are refused (a token endpoint's
  /// invalid_grant, the API's 401): "run `gcloud auth application-default login`
  /// again". One clause, no secret.
  virtual std::string Renewal() const {
    return "give credentials the API accepts (see docs/security.md)";
  }

  /// The API refused the token this source handed out (401: revoked, expired early): a
  /// cached token is dropped, so that the next AccessToken fetches a fresh one, as
  /// Google's auth libraries refresh on a 401. Sources that read a file at each call
  /// need not do anything.
  virtual void Refused() {}
};

/// The credentials found as the header says, or the error that stops the search.
/// `http` and `clock` must outlive the returned source.
Result<std::unique_ptr<TokenSource>> FindGcpCredentials(const CredentialOptions& options,
                                                        HttpClient& http, Clock& clock);

/// A source from the JSON text of a key file ("service_account" or "authorized_user");
/// `path` names it in messages. For FindGcpCredentials and for tests.
Result<std::unique_ptr<TokenSource>> CredentialsFromJson(std::string_view json,
                                                         const std::string& path, HttpClient& http,
                                                         Clock& clock);

}  // namespace tpufleet
