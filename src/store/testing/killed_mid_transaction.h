// KillMidTransaction: runs writes in a child process that dies by SIGKILL inside a
// Transaction, before its COMMIT, as `kill -9` of up or serve would; what the store tests
// of "a step is all or nothing" share.
//
// Thread-safety: forks; call from a test's main thread only.
#pragma once

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <functional>
#include <memory>
#include <string>

#include "store/store.h"

namespace tpufleet {

/// Opens a store with `open` (a Result<unique_ptr<S>>() for a Store S) in a child, runs
/// `writes` on it inside a Transaction and kills the child with SIGKILL before the
/// transaction ends. Fails the test unless the child died that way.
template <typename Open>
void KillMidTransaction(const Open& open, const std::function<void(Store&)>& writes) {
  pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    auto s = open();
    if (!s.ok()) {
      ::_exit(3);
    }
    (void)(*s)->Transaction([&]() -> Status {
      writes(**s);
      ::raise(SIGKILL);  // dies here, before COMMIT
      return Status::Ok();
    });
    ::_exit(4);
  }
  int wstatus = 0;
  ASSERT_EQ(::waitpid(child, &wstatus, 0), child);
  ASSERT_TRUE(WIFSIGNALED(wstatus) && WTERMSIG(wstatus) == SIGKILL) << wstatus;
}

}  // namespace tpufleet
