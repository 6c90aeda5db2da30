// The dashboard `tpufleet serve` serves at / (docs/dashboard.md): three files of
// src/server/dashboard/ built into the binary (no CDN, no framework: a lab's server often
// has no internet), which read the API with the person's token like any client. They
// hold no data, so they are served without a token; every request for data needs one.
//
// Thread-safety: pure functions over constant text.
#pragma once

#include <optional>
#include <string_view>

#include "server/http_api.h"

namespace tpufleet::server {

// The files' bytes (written by cmake/EmbedText.cmake from src/server/dashboard/).
std::string_view DashboardHtml();
std::string_view DashboardJs();
std::string_view DashboardCss();

/// The dashboard's answer to `request` when it asks for one of its files (GET or HEAD
/// of /, /index.html, /ui/dashboard.js or /ui/dashboard.css), with headers that keep the
/// page to its own files: a Content-Security-Policy allowing nothing from elsewhere and
/// no inline script, no framing, no sniffing; nullopt for any other request.
std::optional<ApiResponse> DashboardFile(const ApiRequest& request);

}  // namespace tpufleet::server
