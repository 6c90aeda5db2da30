// The dashboard's files as DashboardFile serves them: which paths, which methods, and
// what keeps the page safe to show a collaborator's strings in.
#include "server/dashboard.h"

#include <gtest/gtest.h>

#include <regex>
#include <string>

namespace tpufleet::server {
namespace {

ApiRequest Get(const std::string& path, const std::string& method = "GET") {
  ApiRequest r;
  r.method = method;
  r.path = path;
  return r;
}

TEST(DashboardTest, ItsThreeFilesAndNothingElse) {
  for (const char* path : {"/", "/index.html"}) {
    std::optional<ApiResponse> r = DashboardFile(Get(path));
    ASSERT_TRUE(r.has_value()) << path;
    EXPECT_EQ(r->status, 200);
    EXPECT_EQ(r->body, DashboardHtml());
  }
  EXPECT_EQ(DashboardFile(Get("/ui/dashboard.js"))->body, DashboardJs());
  EXPECT_EQ(DashboardFile(Get("/ui/dashboard.css"))->body, DashboardCss());
  EXPECT_TRUE(DashboardFile(Get("/ui/dashboard.css", "HEAD")).has_value());
  EXPECT_FALSE(DashboardFile(Get("/", "POST")).has_value());
  EXPECT_FALSE(DashboardFile(Get("/ui/")).has_value());
  EXPECT_FALSE(DashboardFile(Get("/ui/../v1/status")).has_value());
  EXPECT_FALSE(DashboardFile(Get("/v1/status")).has_value());
}

TEST(DashboardTest, ThePageLoadsNothingFromElsewhereAndSetsNoMarkupFromData) {
  std::string html(DashboardHtml());
  // Every script and style sheet is the server's own: no CDN (a lab's server often has
  // no internet, and a page that loads another site's code trusts that site).
  std::regex attribute(R"re((?:src|href)="([^"]*)")re");
  for (auto it = std::sregex_iterator(html.begin(), html.end(), attribute);
       it != std::sregex_iterator(); ++it) {
    EXPECT_EQ((*it)[1].str().rfind("/ui/", 0), 0u) << (*it)[1];
  }
  EXPECT_EQ(html.find("<script>"), std::string::npos);  // no inline script (the CSP forbids it)
  // Names, commands and log lines come from people: the script sets them as text.
  std::string js(DashboardJs());
  EXPECT_EQ(js.find("innerHTML"), std::string::npos);
  EXPECT_EQ(js.find("outerHTML"), std::string::npos);
  EXPECT_EQ(js.find("insertAdjacentHTML"), std::string::npos);
  EXPECT_EQ(js.find("eval("), std::string::npos);
  std::string csp = DashboardFile(Get("/"))->headers["Content-Security-Policy"];
  EXPECT_NE(csp.find("default-src 'none'"), std::string::npos) << csp;
  EXPECT_NE(csp.find("frame-ancestors 'none'"), std::string::npos) << csp;
  EXPECT_EQ(csp.find("unsafe"), std::string::npos) << csp;
}

}  // namespace
}  // namespace tpufleet::server
