// POST /v1/command's bodies, both ways, and the bodies a broken or hostile peer sends.
#include "api/remote_command.h"

#include <gtest/gtest.h>

namespace tpufleet::api {
namespace {

TEST(CommandRequest, RoundTripsAndRefusesWhatIsNotOne) {
  Result<CommandRequest> r = ParseCommandRequest(ToJson(CommandRequest{{"status", "--json"}}));
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->argv, (std::vector<std::string>{"status", "--json"}));
  for (const char* bad : {"", "[]", "{}", "{\"argv\": []}", "{\"argv\": \"status\"}",
                          "{\"argv\": [\"status\", 1]}"}) {
    EXPECT_EQ(ParseCommandRequest(bad).status().code(), StatusCode::kInvalidArgument) << bad;
  }
  std::string many = "{\"argv\": [" + std::string("\"x\",") + "\"x\"";
  for (size_t i = 0; i < kMaxCommandWords; ++i) {
    many += ",\"x\"";
  }
  EXPECT_EQ(ParseCommandRequest(many + "]}").status().code(), StatusCode::kInvalidArgument);
}

TEST(CommandRequest, CarriesTheFilesTheCommandReadsWithinBounds) {
  CommandRequest in{{"up", "lab.yaml"}, {{"lab.yaml", "fleet: lab\n"}, {"-", "ssh-ed25519 A"}}};
  Result<CommandRequest> r = ParseCommandRequest(ToJson(in));
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->files, in.files);
  EXPECT_EQ(ToJson(CommandRequest{{"status"}}), "{\"argv\":[\"status\"]}") << "no files: none sent";
  for (const char* bad :
       {"{\"argv\": [\"up\"], \"files\": []}", "{\"argv\": [\"up\"], \"files\": {\"a\": 1}}",
        "{\"argv\": [\"up\"], \"files\": {\"\": \"x\"}}"}) {
    EXPECT_EQ(ParseCommandRequest(bad).status().code(), StatusCode::kInvalidArgument) << bad;
  }
  CommandRequest many{{"up"}};
  for (size_t i = 0; i <= kMaxCommandFiles; ++i) {
    many.files["f" + std::to_string(i)] = "x";
  }
  EXPECT_EQ(ParseCommandRequest(ToJson(many)).status().code(), StatusCode::kInvalidArgument);
  CommandRequest big{{"up"}, {{"a", std::string(kMaxCommandFileBytes / 2 + 1, 'x')},
                              {"b", std::string(kMaxCommandFileBytes / 2, 'x')}}};
  Result<CommandRequest> too_big = ParseCommandRequest(ToJson(big));
  EXPECT_EQ(too_big.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(too_big.status().message(), "a command request's files hold at most 2 MiB in all");
  big.files["a"].pop_back();
  EXPECT_TRUE(ParseCommandRequest(ToJson(big)).ok()) << "2 MiB exactly is taken";
  std::string huge = "{\"argv\": [\"up\"], \"pad\": \"" +
                     std::string(kMaxCommandRequestBytes, ' ') + "\"}";
  EXPECT_EQ(ParseCommandRequest(huge).status().code(), StatusCode::kInvalidArgument);
}

TEST(CommandRequest, MaySayHowOldAnAnswerWillDo) {
  CommandRequest in{{"cost", "--json"}, {}, 30};
  EXPECT_EQ(ToJson(in), "{\"argv\":[\"cost\",\"--json\"],\"max_age_seconds\":30}");
  Result<CommandRequest> r = ParseCommandRequest(ToJson(in));
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->max_age_seconds, 30);
  EXPECT_EQ(ParseCommandRequest("{\"argv\": [\"jobs\"]}")->max_age_seconds, std::nullopt);
  for (const char* bad : {"0", "-5", "301", "2.5", "\"30\"", "null"}) {
    Result<CommandRequest> b = ParseCommandRequest(
        std::string("{\"argv\": [\"jobs\"], \"max_age_seconds\": ") + bad + "}");
    EXPECT_EQ(b.status().code(), StatusCode::kInvalidArgument) << bad;
    EXPECT_EQ(b.status().message(),
              "a command request's max_age_seconds is a whole number from 1 to 300")
        << bad;
  }
}

TEST(CommandStream, FramesOneObjectALineAndReadsItBackTextAsItIs) {
  CommandResult in{1, "NODE  STATE\npod   READY\n", "tpufleet: error: \x1b[31mx\n"};
  std::string stream = ToJson(in);
  EXPECT_EQ(stream,
            "{\"stdout\":\"NODE  STATE\\npod   READY\\n\"}\n"
            "{\"stderr\":\"tpufleet: error: \\u001b[31mx\\n\"}\n"
            "{\"exit_code\":1}\n");
  Result<CommandResult> out = ParseCommandResult(stream);
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  EXPECT_EQ(out->exit_code, 1);
  EXPECT_EQ(out->out, in.out);
  EXPECT_EQ(out->err, in.err);
}

TEST(CommandStream, ReadsLinesCutAnywhereInOrderAndSkipsKeepAlives) {
  std::string stream = FrameOutput(OutputStream::kStdout, "one\n") + std::string(kKeepAliveLine) +
                       FrameOutput(OutputStream::kStderr, "two\n") +
                       FrameOutput(OutputStream::kStdout, "thr") + FrameExit(130);
  std::vector<std::string> seen;
  CommandStreamReader reader([&seen](OutputStream s, std::string_view text) {
    seen.push_back((s == OutputStream::kStdout ? "out:" : "err:") + std::string(text));
  });
  for (char c : stream) {  // a byte at a time: lines complete only at their newline
    ASSERT_TRUE(reader.Feed(std::string_view(&c, 1)).ok());
  }
  EXPECT_EQ(seen, (std::vector<std::string>{"out:one\n", "err:two\n", "out:thr"}));
  Result<int> code = reader.Finish();
  ASSERT_TRUE(code.ok());
  EXPECT_EQ(*code, 130);
}

TEST(CommandStream, AStreamWithoutItsExitCodeIsAnError) {
  for (std::string cut : {std::string(), FrameOutput(OutputStream::kStdout, "half\n"),
                          std::string("{\"exit_code\":0}")}) {  // no newline: not a line
    CommandStreamReader reader([](OutputStream, std::string_view) {});
    ASSERT_TRUE(reader.Feed(cut).ok());
    EXPECT_EQ(reader.Finish().status().ToString(),
              "unavailable: the server closed the connection before the command ended")
        << cut;
  }
}

TEST(CommandStream, RefusesWhatIsNotALineOfIt) {
  for (const char* bad : {"[]\n", "{\"stdout\": 1}\n", "{\"exit_code\": \"0\"}\n",
                          "{\"stdout\": \"a\", \"stderr\": \"b\"}\n", "nope\n",
                          "{\"exit_code\":0}\n{\"stdout\":\"late\"}\n"}) {
    CommandStreamReader reader([](OutputStream, std::string_view) {});
    EXPECT_EQ(reader.Feed(bad).code(), StatusCode::kInvalidArgument) << bad;
  }
  CommandStreamReader reader([](OutputStream, std::string_view) {});
  EXPECT_EQ(reader.Feed(std::string(kMaxStreamLineBytes + 1, ' ')).code(),
            StatusCode::kInvalidArgument);  // never held whole
}

TEST(CommandStream, SplitsLargeOutputBetweenCharactersIntoBoundedLines) {
  // "é" is two bytes: an odd bound would cut one in half if lines were cut by bytes.
  std::string text = "x";
  while (text.size() < 3 * kMaxStreamTextBytes) {
    text += "\xC3\xA9";
  }
  std::string stream = FrameOutput(OutputStream::kStdout, text);
  size_t lines = 0;
  std::string back;
  CommandStreamReader reader([&](OutputStream, std::string_view piece) {
    ++lines;
    EXPECT_LE(piece.size(), kMaxStreamTextBytes);
    EXPECT_EQ(Utf8Prefix(piece, piece.size()), piece.size()) << "a character cut in two";
    back.append(piece);
  });
  ASSERT_TRUE(reader.Feed(stream).ok());
  EXPECT_EQ(lines, 4u);
  EXPECT_EQ(back, text);
}

TEST(Utf8Prefix, HoldsBackACharacterCutShortOnly) {
  EXPECT_EQ(Utf8Prefix("ab\xE2\x82", 10), 2u);      // € begun, not ended
  EXPECT_EQ(Utf8Prefix("ab\xE2\x82\xAC", 10), 5u);  // € whole
  EXPECT_EQ(Utf8Prefix("ab\xE2\x82\xAC", 4), 2u);
  EXPECT_EQ(Utf8Prefix("\x80\x80\x80\x80", 10), 4u);  // no UTF-8: as it is
  EXPECT_EQ(Utf8Prefix("abc", 2), 2u);
}

}  // namespace
}  // namespace tpufleet::api
