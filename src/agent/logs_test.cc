// The job's log files: rotation bounds them, and a reader gets every byte kept, in
// order, across rotations, or the last lines asked for.
#include "agent/logs.h"

#include <gtest/gtest.h>

#include "util/file.h"
#include "util/testing/temp_dir.h"

namespace tpufleet::agent {
namespace {

std::string Lines(int from, int to) {
  std::string text;
  for (int i = from; i <= to; ++i) {
    text += "line " + std::to_string(i) + "\n";
  }
  return text;
}

std::string ReadAll(LogReader& r) {
  std::string all;
  for (std::string piece; !(piece = r.Read(16)).empty();) {
    all += piece;
  }
  return all;
}

TEST(AgentLogs, RotationKeepsTheNewestAndBoundsEachFile) {
  TempDir dir;
  std::string path = dir.Path("stdout.log");
  Result<LogWriter> w = LogWriter::Open(path, 100);
  ASSERT_TRUE(w.ok()) << w.status().ToString();
  const std::string all_lines = Lines(1, 100);  // 792 bytes: 8 files' worth
  ASSERT_TRUE(w->Append(all_lines).ok());
  for (const std::string& name : LogFileNames(path)) {
    Result<std::string> text = ReadFile(name);
    ASSERT_TRUE(text.ok()) << name;
    EXPECT_LE(text->size(), 100u) << name;
  }
  EXPECT_FALSE(ReadFile(path + ".4").ok());
  LogReader all = LogReader::Open(path, std::nullopt);
  std::string kept = ReadAll(all);
  EXPECT_EQ(kept.size(), 392u);  // 3 full rotated files and the current one's 92 bytes
  EXPECT_EQ(all_lines.substr(all_lines.size() - 392), kept);
}

TEST(AgentLogs, TailTakesTheLastLinesAcrossFiles) {
  TempDir dir;
  std::string path = dir.Path("stderr.log");
  Result<LogWriter> w = LogWriter::Open(path, 40);
  ASSERT_TRUE(w.ok());
  ASSERT_TRUE(w->Append(Lines(1, 12)).ok());
  LogReader last3 = LogReader::Open(path, 3);
  EXPECT_EQ(ReadAll(last3), Lines(10, 12));
  LogReader last7 = LogReader::Open(path, 7);
  EXPECT_EQ(ReadAll(last7), Lines(6, 12));
  LogReader none = LogReader::Open(path, 0);
  EXPECT_EQ(ReadAll(none), "");
  LogReader more = LogReader::Open(path, 1000);  // more than kept: all of it
  EXPECT_EQ(ReadAll(more), ReadAll(*std::make_unique<LogReader>(LogReader::Open(path, std::nullopt))));
}

// A reader that is following sees what is written after it opened, across rotations.
TEST(AgentLogs, AFollowerGoesOnAcrossRotations) {
  TempDir dir;
  std::string path = dir.Path("stdout.log");
  LogReader r = LogReader::Open(path, std::nullopt);  // nothing there yet
  EXPECT_EQ(r.Read(), "");
  Result<LogWriter> w = LogWriter::Open(path, 30);
  ASSERT_TRUE(w.ok());
  ASSERT_TRUE(w->Append(Lines(1, 2)).ok());
  EXPECT_EQ(ReadAll(r), Lines(1, 2));
  ASSERT_TRUE(w->Append(Lines(3, 6)).ok());  // rotates twice
  EXPECT_EQ(ReadAll(r), Lines(3, 6));
  EXPECT_EQ(r.Read(), "");
}

TEST(AgentLogs, APieceIsCutAfterALineOrBetweenCharacters) {
  TempDir dir;
  std::string path = dir.Path("stdout.log");
  Result<LogWriter> w = LogWriter::Open(path);
  ASSERT_TRUE(w.ok());
  ASSERT_TRUE(w->Append("ab\ncdefgh\n\xC3\xA9\xC3\xA9\xC3\xA9").ok());
  LogReader r = LogReader::Open(path, std::nullopt);
  EXPECT_EQ(r.Read(8), "ab\n");
  EXPECT_EQ(r.Read(8), "cdefgh\n");
  EXPECT_EQ(r.Read(3), "\xC3\xA9");  // not half of the second é
  EXPECT_EQ(r.Read(8), "\xC3\xA9\xC3\xA9");
}

}  // namespace
}  // namespace tpufleet::agent
