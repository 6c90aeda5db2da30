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
#include <string>

#include "store/sqlite_store.h"

namespace tpufleet {

/// Opens the store at `path` in a child, runs `writes` on it inside a Transaction and
/// kills the child with SIGKILL before the transaction ends. Fails the test unless the
/// child died that way.
inline void KillMidTransaction(const std::string& path,
                               const std::function<void(SqliteStore&)>& writes) {
  pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    Result<std::unique_ptr<SqliteStore>> s = SqliteStore::Open(path);
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
