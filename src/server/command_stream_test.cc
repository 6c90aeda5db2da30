// POST /v1/command's answer as a stream, over real HTTP on loopback with the CLI's
// transport (util's CurlHttpClient): a line the command prints reaches the client
// while the command still runs (the command waits for the client to have seen it), a
// client that goes away interrupts the command, and the commands running at once are
// bounded while the other routes still answer. No assertion on time: the waits below
// are each released by what the test asserts, and bounded only so that a broken
// stream fails the test instead of hanging it.
#include "server/command_stream.h"

#include <gtest/gtest.h>

#include <condition_variable>
#include <future>
#include <mutex>
#include <thread>

#include "server/http_server.h"
#include "store/sqlite_store.h"
#include "util/http_client.h"
#include "util/testing/fake_clock.h"

namespace tpufleet::server {
namespace {

constexpr const char* kStreamToken = "tpufleet-serve-stream-token";
// How long a wait that should end at once may take before the test calls it broken.
constexpr std::chrono::seconds kBroken{30};

// A latch the test opens, or the command's interrupt does.
class Gate {
 public:
  void Open() {
    std::lock_guard<std::mutex> lock(mu_);
    open_ = true;
    cv_.notify_all();
  }
  // True when opened, false when interrupted first (or broken).
  bool Wait(const std::atomic<bool>& interrupt) {
    std::unique_lock<std::mutex> lock(mu_);
    auto until = std::chrono::steady_clock::now() + kBroken;
    while (!open_ && !interrupt && std::chrono::steady_clock::now() < until) {
      cv_.wait_for(lock, std::chrono::milliseconds(10));
    }
    return open_;
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  bool open_ = false;
};

class CommandStreamTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ServeApiContext context{kStreamToken, nullptr, store_.get(), &clock_};
    context.run_command = [this](const api::CommandRequest& request, const Caller&,
                                 std::ostream& out, std::ostream& err,
                                 const std::atomic<bool>& interrupt) {
      ++started_;
      started_cv_.notify_all();
      out << "first line of " << request.argv[0] << "\n";
      err << "a partial line";  // sent after kPartialLineFlush, no newline needed
      if (!gate_.Wait(interrupt)) {
        interrupted_.set_value(true);
        return 130;
      }
      out << "after the gate\n";
      return 0;
    };
    api_ = std::make_unique<ServeApi>(std::move(context));
    server_ = std::make_unique<ServeHttpServer>(api_.get(), "127.0.0.1", 0);
    Result<int> port = server_->Start();
    ASSERT_TRUE(port.ok()) << port.status().ToString();
    url_ = "http://127.0.0.1:" + std::to_string(*port);
  }

  // POST /v1/command for `word`, each piece of the body given to `on_body`.
  Result<HttpResponse> Post(const std::string& word,
                            std::function<bool(std::string_view)> on_body) {
    return Post(api::CommandRequest{{word}}, std::move(on_body));
  }
  Result<HttpResponse> Post(const api::CommandRequest& command,
                            std::function<bool(std::string_view)> on_body) {
    CurlHttpClient http;
    HttpRequest req;
    req.method = "POST";
    req.url = url_ + "/v1/command";
    req.headers["Authorization"] = std::string("Bearer ") + kStreamToken;
    req.body = api::ToJson(command);
    req.timeout = kBroken;
    req.on_body = std::move(on_body);
    return http.Send(req);
  }

  FakeClock clock_;
  std::unique_ptr<SqliteStore> store_ = SqliteStore::Open(":memory:").value();
  Gate gate_;
  std::atomic<int> started_{0};
  std::mutex started_mu_;
  std::condition_variable started_cv_;
  std::promise<bool> interrupted_;
  std::unique_ptr<ServeApi> api_;
  std::unique_ptr<ServeHttpServer> server_;
  std::string url_;
};

TEST_F(CommandStreamTest, LinesReachTheClientWhileTheCommandRuns) {
  std::string body;
  std::vector<std::string> seen;
  api::CommandStreamReader reader([&](api::OutputStream s, std::string_view text) {
    seen.push_back((s == api::OutputStream::kStdout ? "out:" : "err:") + std::string(text));
    if (seen.size() == 2) {
      gate_.Open();  // the command goes on only once its first lines arrived here
    }
  });
  Result<HttpResponse> r = Post("logs", [&](std::string_view piece) {
    body.append(piece);
    return reader.Feed(piece).ok();
  });
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->status, 200);
  EXPECT_EQ(r->headers["content-type"], "application/x-ndjson");
  EXPECT_EQ(r->headers["transfer-encoding"], "chunked");
  EXPECT_EQ(seen, (std::vector<std::string>{"out:first line of logs\n", "err:a partial line",
                                            "out:after the gate\n"}));
  Result<int> code = reader.Finish();
  ASSERT_TRUE(code.ok()) << body;
  EXPECT_EQ(*code, 0);
  server_->Stop();  // every command has ended: its audit line is written
  std::vector<AuditRecord> audit = store_->Audit(std::nullopt, 10).value();
  ASSERT_EQ(audit.size(), 1u);
  EXPECT_EQ(audit[0].action, "logs");
  EXPECT_EQ(audit[0].outcome, "ok");
}

TEST_F(CommandStreamTest, AClientThatGoesAwayInterruptsTheCommand) {
  std::future<bool> interrupted = interrupted_.get_future();
  std::string body;
  Result<HttpResponse> r = Post("logs", [&](std::string_view piece) {
    body.append(piece);
    return body.find("first line") == std::string::npos;  // then hang up, as Ctrl-C
  });
  ASSERT_FALSE(r.ok());
  ASSERT_EQ(interrupted.wait_for(kBroken), std::future_status::ready)
      << "the command still runs with its client gone";
  server_->Stop();
  std::vector<AuditRecord> audit = store_->Audit(std::nullopt, 10).value();
  ASSERT_EQ(audit.size(), 1u);
  EXPECT_EQ(audit[0].outcome, "exit 130");
}

TEST_F(CommandStreamTest, CommandsAtOnceAreBoundedAndTheOtherRoutesStillAnswer) {
  std::vector<std::thread> clients;
  std::vector<int> codes(kMaxRunningCommands, -1);
  for (int i = 0; i < kMaxRunningCommands; ++i) {
    clients.emplace_back([this, i, &codes] {
      api::CommandStreamReader reader([](api::OutputStream, std::string_view) {});
      Result<HttpResponse> r =
          Post("jobs", [&reader](std::string_view piece) { return reader.Feed(piece).ok(); });
      Result<int> code = reader.Finish();
      codes[i] = r.ok() && code.ok() ? *code : -2;
    });
  }
  {
    std::unique_lock<std::mutex> lock(started_mu_);
    ASSERT_TRUE(started_cv_.wait_for(lock, kBroken,
                                     [this] { return started_ == kMaxRunningCommands; }));
  }
  Result<HttpResponse> busy = Post("status", nullptr);
  ASSERT_TRUE(busy.ok()) << busy.status().ToString();
  EXPECT_EQ(busy->status, 503) << busy->body;
  EXPECT_NE(busy->body.find("runs 8 commands at once"), std::string::npos) << busy->body;
  CurlHttpClient http;
  HttpRequest jobs;
  jobs.url = url_ + "/v1/jobs";
  jobs.headers["Authorization"] = std::string("Bearer ") + kStreamToken;
  jobs.timeout = kBroken;
  Result<HttpResponse> listed = http.Send(jobs);
  ASSERT_TRUE(listed.ok()) << listed.status().ToString();
  EXPECT_EQ(listed->status, 200) << listed->body;
  gate_.Open();
  for (std::thread& t : clients) {
    t.join();
  }
  EXPECT_EQ(codes, std::vector<int>(kMaxRunningCommands, 0));
}

TEST_F(CommandStreamTest, FollowedLogsHaveSlotsOfTheirOwn) {
  // Every command slot taken by a command that waits, then every followed log's.
  std::vector<std::thread> clients;
  auto start = [&](api::CommandRequest command) {
    clients.emplace_back([this, command] {
      api::CommandStreamReader reader([](api::OutputStream, std::string_view) {});
      (void)Post(command, [&reader](std::string_view piece) { return reader.Feed(piece).ok(); });
    });
  };
  auto wait_started = [&](int n) {
    std::unique_lock<std::mutex> lock(started_mu_);
    return started_cv_.wait_for(lock, kBroken, [&] { return started_ == n; });
  };
  for (int i = 0; i < kMaxRunningCommands; ++i) {
    start({{"jobs"}});
  }
  ASSERT_TRUE(wait_started(kMaxRunningCommands));
  for (int i = 0; i < kMaxFollowedLogs; ++i) {
    start({{"logs", "job-" + std::to_string(i), i % 2 ? "-f" : "--follow"}});
  }
  ASSERT_TRUE(wait_started(kMaxRunningCommands + kMaxFollowedLogs))
      << "a followed log waits for a command slot";
  Result<HttpResponse> busy = Post(api::CommandRequest{{"logs", "-f", "one-more"}}, nullptr);
  ASSERT_TRUE(busy.ok()) << busy.status().ToString();
  EXPECT_EQ(busy->status, 503) << busy->body;
  EXPECT_NE(busy->body.find("follows 32 logs at once"), std::string::npos) << busy->body;
  gate_.Open();
  for (std::thread& t : clients) {
    t.join();
  }
  Result<HttpResponse> again = Post(api::CommandRequest{{"logs", "-f", "later"}}, nullptr);
  ASSERT_TRUE(again.ok()) << again.status().ToString();
  EXPECT_EQ(again->status, 200) << "the slots are given back as the logs end";
  EXPECT_TRUE(FollowsLog({"logs", "ID", "-f"}));
  EXPECT_FALSE(FollowsLog({"logs", "ID"}));
  EXPECT_FALSE(FollowsLog({"run", "-f"})) << "only `logs` follows in its own slots";
}

TEST_F(CommandStreamTest, AReportAskedWithAMaxAgeIsRunOnceForItsAskersInThatTime) {
  gate_.Open();  // the command prints and ends at once
  auto ask = [&](api::CommandRequest command) {
    std::string body;
    Result<HttpResponse> r = Post(command, [&](std::string_view piece) {
      body.append(piece);
      return true;
    });
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    EXPECT_EQ(r.ok() ? r->status : 0, 200) << body;
    EXPECT_EQ(r.ok() ? r->headers["connection"] : "", "close")
        << "one request per connection: an open one would hold a thread";
    Result<api::CommandResult> result = api::ParseCommandResult(body);
    EXPECT_TRUE(result.ok()) << body;
    return std::make_pair(r.ok() ? r->headers["age"] : "?", result.ok() ? result->out : "?");
  };
  api::CommandRequest cost{{"cost", "--by", "node", "--json"}, {}, 30};
  EXPECT_EQ(ask(cost),
            std::make_pair(std::string("0"), std::string("first line of cost\nafter the gate\n")));
  clock_.Advance(std::chrono::seconds(20));
  EXPECT_EQ(ask(cost).first, "20") << "the answer of 20 s ago";
  EXPECT_EQ(started_, 1);
  clock_.Advance(std::chrono::seconds(11));
  EXPECT_EQ(ask(cost).first, "0") << "31 s old is older than asked: run again";
  EXPECT_EQ(started_, 2);
  api::CommandRequest other = cost;
  other.argv = {"cost", "--by", "person", "--json"};
  ask(other);
  EXPECT_EQ(started_, 3) << "other words, another answer";
  cost.max_age_seconds.reset();
  ask(cost);
  EXPECT_EQ(started_, 4) << "without max_age_seconds the command runs now";
  ask({{"logs", "x"}, {}, 30});
  ask({{"logs", "x"}, {}, 30});
  EXPECT_EQ(started_, 6) << "logs are never kept";
  server_->Stop();
  std::vector<AuditRecord> audit = store_->Audit(std::nullopt, 10).value();
  EXPECT_EQ(audit.size(), 7u)
      << "every request is in the audit log, answered from the cache or not";
}

TEST(CommandStreamBounds, AReportAnsweredWholeIsBoundedAsAStreamedOne) {
  FakeClock clock;
  ServeApiContext context{kStreamToken, nullptr, nullptr, &clock};
  context.run_command = [](const api::CommandRequest&, const Caller&, std::ostream& out,
                           std::ostream&, const std::atomic<bool>& interrupt) {
    std::string chunk(64 << 10, 'x');
    while (!interrupt) {
      out << chunk;
    }
    return 130;
  };
  ServeApi api(std::move(context));
  ApiRequest request{"POST",
                     "/v1/command",
                     {},
                     {{"authorization", std::string("Bearer ") + kStreamToken}},
                     api::ToJson(api::CommandRequest{{"jobs", "--json"}, {}, 5})};
  ApiResponse r = api.Handle(request);
  ASSERT_EQ(r.stream, nullptr) << "answered whole";
  Result<api::CommandResult> result = api::ParseCommandResult(r.body);
  ASSERT_TRUE(result.ok()) << result.status().ToString();
  EXPECT_EQ(result->out.size(), api::kMaxServedOutputBytes);
  EXPECT_EQ(result->err,
            "tpufleet: the output passed 16 MiB, the most a team server sends back; "
            "the rest was cut\n");
  EXPECT_EQ(result->exit_code, 130);
}

TEST(CommandStreamBounds, OutputPastTheBoundIsCutSaidAndTheCommandInterrupted) {
  CommandStream stream(
      [](std::ostream& out, std::ostream&, const std::atomic<bool>& interrupt) {
        std::string chunk(64 << 10, 'x');
        while (!interrupt) {
          out << chunk;
        }
        return 130;
      },
      [](int) {});
  size_t out_bytes = 0;
  std::string err;
  int exit_code = -1;
  api::CommandStreamReader reader([&](api::OutputStream s, std::string_view text) {
    s == api::OutputStream::kStdout ? void(out_bytes += text.size()) : void(err.append(text));
  });
  while (std::optional<std::string> piece = stream.Next()) {
    ASSERT_TRUE(reader.Feed(*piece).ok());
  }
  stream.End();
  Result<int> code = reader.Finish();
  exit_code = code.ok() ? *code : -1;
  EXPECT_EQ(out_bytes, api::kMaxServedOutputBytes);
  EXPECT_EQ(err, "tpufleet: the output passed 16 MiB, the most a team server sends back; the "
                 "rest was cut\n");
  EXPECT_EQ(exit_code, 130);
}

}  // namespace
}  // namespace tpufleet::server
