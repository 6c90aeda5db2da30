// Google's system parameters (https://cloud.google.com/apis/docs/system-parameters) as the
// emulator's front end takes them, for every route: the ones that shape a response are
// applied to it, the rest are accepted and ignored, as Google's front end does for an
// API that has no use for them.
//   alt, $alt                    json (the default; "json;enum-encoding=int", as gax
//                                sends it, answers enum names all the same); anything
//                                else is refused
//   fields, $fields,             a partial response: "nextPageToken,nodes(name,state)",
//     X-Goog-FieldMask header    "nodes/name", "*"; applied to a 200's JSON body
//   prettyPrint, $prettyPrint    true (the default) or false: compact JSON
//   callback, $callback          refused: the emulator serves no JSONP (no web pages)
//   key, quotaUser, $.xgafv, oauth_token, access_token, uploadType, upload_protocol,
//   $unique, $outputDefaults, $ct: accepted and ignored (access_token is a credential:
//   api_server.cc reads it)
// A system parameter sent twice counts with its last value, as a singular query
// parameter does.
//
// Thread-safety: pure functions.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <string_view>

#include "emulator/http_types.h"
#include "util/status.h"

namespace tpufleet::emulator {

/// A parsed `fields` selection: the fields picked at one level of a JSON message.
struct FieldSelection {
  bool whole = false;                         // the field itself, with everything in it
  std::map<std::string, FieldSelection> sub;  // picked sub-fields ("*": every one)
};

struct SystemParams {
  bool pretty = true;
  std::shared_ptr<const FieldSelection> fields;  // null: the whole response
};

/// The request's system parameters; InvalidArgument (Google's words) for a bad alt,
/// prettyPrint or fields, or a JSONP callback.
Result<SystemParams> ParseSystemParams(const HttpRequest& request);

/// `response` as the parameters shape it: `fields` picks from a 200's JSON body,
/// prettyPrint=false compacts any JSON body (errors too).
HttpResponse ApplySystemParams(const SystemParams& params, HttpResponse response);

/// Parses a `fields` value; InvalidArgument "Invalid field selection …" when it is not
/// one. At most kMaxFieldSelectionBytes.
Result<FieldSelection> ParseFieldSelection(std::string_view text);
inline constexpr size_t kMaxFieldSelectionBytes = 4096;

/// A boolean query parameter as Google's front end reads one: true/false in any case
/// (gcloud sends force=True), or 1/0. InvalidArgument naming `field` (its snake_case
/// name) otherwise.
Result<bool> ParseQueryBool(std::string_view value, std::string_view field);

}  // namespace tpufleet::emulator
