// PostgresServer: a throwaway PostgreSQL server for tests, one per test binary run, with
// a fresh database per test (NewDatabase). Store tests run against it as well as SQLite
// (store_backends.h), and so may serve's and the reconciler's.
//
// It uses Debian's server binaries (/usr/lib/postgresql/*/bin/{initdb,pg_ctl,postgres}).
// The cluster is made by initdb in a new temp dir, owned by and run as an unprivileged
// user (PostgreSQL refuses root: as root, the package's `postgres` user; otherwise this
// process's own user), with trust authentication, listening on a unix socket in that
// dir only (no TCP). The server dies with the test process (PR_SET_PDEATHSIG), and the
// binary's exit stops it and removes the dir, also when tests failed.
//
// Thread-safety: call from a test's main thread only (it forks; the server is bound to
// the thread that started it).
#pragma once

#include <fcntl.h>
#include <glob.h>
#include <grp.h>
#include <gtest/gtest.h>
#include <pwd.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "util/status.h"
#include "util/testing/temp_dir.h"

namespace tpufleet {

class PostgresServer {
 public:
  /// The binary run's server, started on first use; nullptr with the reason in `*why`
  /// when it cannot run here (no server binaries, no unprivileged user), or when it
  /// failed to start (the reason says why and where its log is).
  static PostgresServer* Shared(std::string* why) {
    static std::string reason;
    static std::unique_ptr<PostgresServer> server = Start(&reason);
    *why = reason;
    return server.get();
  }

  ~PostgresServer() {
    if (::getpid() != owner_) {
      return;  // a forked test child exiting: the server is its parent's
    }
    if (server_pid_ > 0) {
      ::kill(server_pid_, SIGQUIT);  // immediate shutdown: nothing here is worth keeping
      int ws = 0;
      ::waitpid(server_pid_, &ws, 0);
    }
    RemoveTree(dir_);
  }
  PostgresServer(const PostgresServer&) = delete;
  PostgresServer& operator=(const PostgresServer&) = delete;

  /// A new, empty database's name ("tN"; its URL is Url(name)).
  Result<std::string> NewDatabase() {
    std::string name = "t" + std::to_string(++databases_);
    int rc = RunAs({bin_ + "/createdb", "-h", dir_, "-U", user_, name}, /*wait=*/true);
    if (rc != 0) {
      return InternalError("createdb " + name + " failed (" + std::to_string(rc) + "); see " +
                           dir_ + "/log");
    }
    return name;
  }

  /// Runs `sql` on database `name` with psql, as another program (an older tpufleet, an
  /// edit by hand) would; psql's exit status.
  int Psql(const std::string& name, const std::string& sql) {
    return RunAs({bin_ + "/psql", "-q", "-h", dir_, "-U", user_, "-d", name, "-v",
                  "ON_ERROR_STOP=1", "-c", sql},
                 true);
  }

  /// The URL of database `name` on this server.
  std::string Url(const std::string& name) const {
    return "postgresql:///" + name + "?host=" + dir_ + "&user=" + user_;
  }
  /// The directory of the server's socket (and of its data, in data/).
  const std::string& dir() const { return dir_; }

 private:
  PostgresServer() = default;

  static std::unique_ptr<PostgresServer> Start(std::string* why) {
    std::unique_ptr<PostgresServer> s(new PostgresServer());
    s->owner_ = ::getpid();
    s->bin_ = FindBin();
    if (s->bin_.empty()) {
      *why =
          "PostgreSQL's server binaries (/usr/lib/postgresql/*/bin/initdb, pg_ctl, postgres) "
          "are not installed (Debian: apt-get install postgresql)";
      return nullptr;
    }
    if (::geteuid() == 0) {
      const passwd* pw = ::getpwnam("postgres");
      if (pw == nullptr) {
        *why = "running as root and there is no `postgres` user to run the server as";
        return nullptr;
      }
      s->uid_ = pw->pw_uid;
      s->gid_ = pw->pw_gid;
      s->user_ = "postgres";
    } else {
      s->uid_ = ::geteuid();
      s->gid_ = ::getegid();
      const passwd* pw = ::getpwuid(s->uid_);
      s->user_ = pw != nullptr ? pw->pw_name : "tpufleet";
    }
    const char* base = ::getenv("TMPDIR");
    std::string t =
        std::string(base != nullptr && *base != '\0' ? base : "/tmp") + "/tpufleet-pg-XXXXXX";
    if (::mkdtemp(t.data()) == nullptr) {
      *why = "cannot make a temp dir for the test server";
      return nullptr;
    }
    s->dir_ = t;
    if (::chown(t.c_str(), s->uid_, s->gid_) != 0) {
      *why = "cannot give " + t + " to " + s->user_;
      return nullptr;
    }
    std::string data = t + "/data";
    if (s->RunAs({s->bin_ + "/initdb", "-D", data, "-U", s->user_, "--auth=trust", "-E", "UTF8",
                  "--locale=C", "--no-sync"},
                 true) != 0) {
      *why = "initdb failed; see " + t + "/log";
      s->dir_.clear();  // kept for its log
      return nullptr;
    }
    s->server_pid_ = s->RunAs({s->bin_ + "/postgres", "-D", data, "-k", t, "-c",
                               "listen_addresses=", "-c", "fsync=off", "-c", "max_connections=200"},
                              false);
    // Ready when it accepts a connection: pg_isready, for at most a minute.
    for (int i = 0; i < 600; ++i) {
      if (s->RunAs({s->bin_ + "/pg_isready", "-q", "-h", t, "-U", s->user_}, true) == 0) {
        return s;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    *why = "the test server did not start; see " + t + "/log";
    ::kill(s->server_pid_, SIGQUIT);
    ::waitpid(s->server_pid_, nullptr, 0);
    s->server_pid_ = -1;
    s->dir_.clear();  // kept for its log
    return nullptr;
  }

  // The newest /usr/lib/postgresql/N/bin with the server's binaries, or "".
  static std::string FindBin() {
    glob_t g{};
    std::string found;
    if (::glob("/usr/lib/postgresql/*/bin/postgres", 0, nullptr, &g) == 0) {
      for (size_t i = 0; i < g.gl_pathc; ++i) {
        std::string bin(g.gl_pathv[i]);
        bin.resize(bin.size() - std::string("/postgres").size());
        if (::access((bin + "/initdb").c_str(), X_OK) == 0 &&
            ::access((bin + "/pg_ctl").c_str(), X_OK) == 0) {
          found = bin;  // glob sorts; the last is the newest of one-digit-width versions
        }
      }
    }
    ::globfree(&g);
    return found;
  }

  // Runs argv as the server's user with output appended to DIR/log. wait: its exit
  // status (-1 when it did not exit); else: its pid, which dies with this thread.
  int RunAs(const std::vector<std::string>& argv, bool wait) {
    std::string log = dir_ + "/log";
    pid_t pid = ::fork();
    if (pid < 0) {
      return -1;
    }
    if (pid == 0) {
      int fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
      if (fd >= 0) {
        ::dup2(fd, 1);
        ::dup2(fd, 2);
      }
      if (::geteuid() == 0 &&
          (::setgroups(0, nullptr) != 0 || ::setgid(gid_) != 0 || ::setuid(uid_) != 0)) {
        ::_exit(126);
      }
      if (!wait) {
        ::prctl(PR_SET_PDEATHSIG, SIGQUIT);  // after setuid, which clears it
      }
      std::vector<char*> args;
      for (const std::string& a : argv) {
        args.push_back(const_cast<char*>(a.c_str()));
      }
      args.push_back(nullptr);
      ::execv(args[0], args.data());
      ::_exit(127);
    }
    if (!wait) {
      return pid;
    }
    int ws = 0;
    ::waitpid(pid, &ws, 0);
    return WIFEXITED(ws) ? WEXITSTATUS(ws) : -1;
  }

  pid_t owner_ = 0;
  std::string bin_;
  std::string dir_;
  std::string user_;
  uid_t uid_ = 0;
  gid_t gid_ = 0;
  pid_t server_pid_ = -1;
  int databases_ = 0;
};

/// For a test's SetUp: sets `*server` to the binary's server and `*database` to a fresh
/// database on it. Where there can be no server, the test is skipped (GTEST_SKIP, with
/// the reason) and `*server` stays null; where the database cannot be made, it fails.
inline void TestDatabase(PostgresServer** server, std::string* database) {
  std::string why;
  PostgresServer* shared = PostgresServer::Shared(&why);
  if (shared == nullptr) {
    GTEST_SKIP() << "no PostgreSQL test server: " << why;
  }
  Result<std::string> db = shared->NewDatabase();
  ASSERT_TRUE(db.ok()) << db.status().ToString();
  *database = *db;
  *server = shared;
}

}  // namespace tpufleet
