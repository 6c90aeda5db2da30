// In-memory stand-ins for the World's fleet key, SSH files and forwards (control/world.h),
// so that control's and the CLI's tests need no ssh-keygen, no ssh and no HOME of their
// own. The real ones (FleetKeyFiles, SshFileDir, SshForwarder) are tested in
// ssh/fleet_key_test.cc, ssh/ssh_files_test.cc and control/ssh_login_test.cc.
//
// Thread-safety: FakeFleetKeys and FakeSshFiles lock (up calls them from its loop and
// FinishLeftovers from several threads); FakeForwarder belongs to the test's thread.
#pragma once

#include <deque>
#include <memory>
#include <mutex>
#include <ostream>
#include <string>
#include <utility>
#include <vector>

#include "control/port_forward.h"
#include "ssh/fleet_key.h"
#include "ssh/ssh_files.h"
#include "util/status.h"

namespace tpufleet::testing {

/// A fixed fleet key, never generated: Ensure hands out the same pair every time.
class FakeFleetKeys final : public FleetKeyStore {
 public:
  /// A real ed25519 public key (the private half was thrown away), commented as
  /// EnsureFleetKey's are.
  static constexpr char kPublicKey[] =
      "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIMNZojkKp1bQgynPhPrbmb7oakqD0WxnsrBxQVfIy0K/ "
      "tpufleet";

  explicit FakeFleetKeys(std::string dir) : dir_(std::move(dir)) {}

  Result<FleetKey> Ensure() override {
    std::lock_guard<std::mutex> l(mu_);
    ++ensured_;
    return FleetKey{PrivateKeyPath(), kPublicKey};
  }
  std::string PrivateKeyPath() const override { return dir_ + "/id_ed25519"; }

  /// How often the key was asked for.
  int ensured() const {
    std::lock_guard<std::mutex> l(mu_);
    return ensured_;
  }

 private:
  const std::string dir_;
  mutable std::mutex mu_;
  int ensured_ = 0;  // guarded by mu_
};

/// The SSH files as the text SshFileDir would write (RenderSshConfig, RenderKnownHosts),
/// kept here; a refused entry leaves the old text, as WriteSshFiles does.
class FakeSshFiles final : public SshFileStore {
 public:
  /// `dir`: the STATE/ssh the text names (the known_hosts the config points at).
  explicit FakeSshFiles(std::string dir) : dir_(std::move(dir)) {}

  Status Rewrite(const EntriesFn& entries) override {
    std::lock_guard<std::mutex> l(mu_);
    TPUFLEET_ASSIGN_OR_RETURN(std::vector<SshHostEntry> written, entries());
    TPUFLEET_ASSIGN_OR_RETURN(std::string config,
                              RenderSshConfig(written, dir_ + "/known_hosts"));
    config_ = std::move(config);
    known_hosts_ = RenderKnownHosts(written);
    written_ = true;
    ++rewrites_;
    return Status::Ok();
  }

  Result<std::string> Config() const override {
    std::lock_guard<std::mutex> l(mu_);
    if (!written_) {
      return FailedPreconditionError("no SSH config at " + dir_ +
                                     "/config yet; `tpufleet up` writes it");
    }
    return dir_ + "/config";
  }

  std::string config() const {
    std::lock_guard<std::mutex> l(mu_);
    return config_;
  }
  std::string known_hosts() const {
    std::lock_guard<std::mutex> l(mu_);
    return known_hosts_;
  }
  /// How often the files were rewritten (each time with the ~/.ssh/config Include).
  int rewrites() const {
    std::lock_guard<std::mutex> l(mu_);
    return rewrites_;
  }
  /// As if the files had been removed: Config() refuses again.
  void Remove() {
    std::lock_guard<std::mutex> l(mu_);
    written_ = false;
    config_.clear();
    known_hosts_.clear();
  }

 private:
  const std::string dir_;
  mutable std::mutex mu_;
  bool written_ = false;     // guarded by mu_
  std::string config_;       // guarded by mu_
  std::string known_hosts_;  // guarded by mu_
  int rewrites_ = 0;         // guarded by mu_
};

/// Forwards that play what the test scripts: each Start takes the next script (or, with
/// none left, one that listens until stopped) and records the command line.
class FakeForwarder final : public Forwarder {
 public:
  /// One forward's life: the events its Wait returns in turn (kStopped once they run
  /// out), what it says once listening, and its ExitMessage.
  struct Script {
    std::vector<Forward::Event> events;
    std::string exit_message;
    std::string log;
  };
  struct Started {
    std::vector<std::string> argv;
    int local_port = 0;
  };

  void Add(Script script) { scripts_.push_back(std::move(script)); }

  Result<std::unique_ptr<Forward>> Start(const std::vector<std::string>& argv,
                                         int local_port) override {
    started_.push_back({argv, local_port});
    Script script;
    if (scripts_.empty()) {
      script.events = {Forward::Event::kListening};
    } else {
      script = std::move(scripts_.front());
      scripts_.pop_front();
    }
    return std::unique_ptr<Forward>(std::make_unique<Played>(std::move(script)));
  }

  const std::vector<Started>& started() const { return started_; }

 private:
  class Played final : public Forward {
   public:
    explicit Played(Script script) : script_(std::move(script)) {}
    Event Wait(int, std::ostream& log) override {
      if (next_ >= script_.events.size()) {
        return Event::kStopped;
      }
      Event e = script_.events[next_++];
      if (e == Event::kListening) {
        log << script_.log;
      }
      return e;
    }
    std::string ExitMessage() const override { return script_.exit_message; }

   private:
    const Script script_;
    size_t next_ = 0;
  };

  std::deque<Script> scripts_;
  std::vector<Started> started_;
};

}  // namespace tpufleet::testing
