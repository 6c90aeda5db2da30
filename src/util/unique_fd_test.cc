#include "util/unique_fd.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <utility>
#include <vector>

namespace tpufleet {
namespace {

bool IsOpen(int fd) {
  return ::fcntl(fd, F_GETFD) != -1;
}

TEST(UniqueFd, ClosesWhenDestroyedAndWhenReset) {
  int p[2];
  ASSERT_EQ(::pipe(p), 0);
  {
    UniqueFd r(p[0]);
    UniqueFd w(p[1]);
    w.Reset();
    EXPECT_EQ(w.get(), -1);
    EXPECT_FALSE(IsOpen(p[1]));
    EXPECT_TRUE(IsOpen(p[0]));
  }
  EXPECT_FALSE(IsOpen(p[0]));
}

TEST(UniqueFd, MovingHandsOverOwnership) {
  int p[2];
  ASSERT_EQ(::pipe(p), 0);
  std::vector<UniqueFd> fds;
  fds.emplace_back(p[0]);
  UniqueFd w(p[1]);
  UniqueFd moved(std::move(w));
  EXPECT_EQ(w.get(), -1);  // NOLINT(bugprone-use-after-move): the state after a move is the point
  EXPECT_EQ(moved.get(), p[1]);
  fds.emplace_back();
  fds[1] = std::move(moved);
  EXPECT_TRUE(IsOpen(p[1]));
  fds.clear();
  EXPECT_FALSE(IsOpen(p[0]));
  EXPECT_FALSE(IsOpen(p[1]));
}

}  // namespace
}  // namespace tpufleet
