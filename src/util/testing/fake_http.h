// For fake HttpClients in tests: a response given back as CurlHttpClient gives it, its
// body to the request's on_body when set and the status is 2xx (a stream), else whole.
// Include in tests only.
#pragma once

#include "util/http_client.h"

namespace tpufleet::testing {

inline Result<HttpResponse> AnswerAsCurlDoes(const HttpRequest& req, HttpResponse resp) {
  if (req.on_body && resp.status >= 200 && resp.status < 300) {
    if (!req.on_body(resp.body)) {
      return FailedPreconditionError(req.method + " " + req.url + ": stopped");
    }
    resp.body.clear();
  }
  return resp;
}

}  // namespace tpufleet::testing
