#include "server/dashboard.h"

namespace tpufleet::server {

std::optional<ApiResponse> DashboardFile(const ApiRequest& request) {
  if (request.method != "GET" && request.method != "HEAD") {
    return std::nullopt;
  }
  ApiResponse r;
  if (request.path == "/" || request.path == "/index.html") {
    r.body = std::string(DashboardHtml());
    r.content_type = "text/html; charset=utf-8";
  } else if (request.path == "/ui/dashboard.js") {
    r.body = std::string(DashboardJs());
    r.content_type = "text/javascript; charset=utf-8";
  } else if (request.path == "/ui/dashboard.css") {
    r.body = std::string(DashboardCss());
    r.content_type = "text/css; charset=utf-8";
  } else {
    return std::nullopt;
  }
  // Its own scripts, styles and API only: a value that slipped into the page as markup
  // could run nothing, and send nothing elsewhere.
  r.headers["Content-Security-Policy"] =
      "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; "
      "img-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'";
  r.headers["X-Content-Type-Options"] = "nosniff";
  r.headers["X-Frame-Options"] = "DENY";
  r.headers["Referrer-Policy"] = "no-referrer";
  // A new tpufleet brings new files: the browser asks again rather than mixing versions.
  r.headers["Cache-Control"] = "no-cache";
  return r;
}

}  // namespace tpufleet::server
