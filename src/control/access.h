// Access: what one caller may see and do through a team server (`tpufleet serve`,
// issue 16), the one answer every API route and every served command asks, so that a
// member is held to the same rules by the CLI, the API and what the server runs.
//
// Locally, whoever can open the state may do everything (the state directory's owner
// checks guard it): Access::Everything. Through a team server:
//   - serve's own token: the operator, everything;
//   - a person's token (control/person_tokens.h): that person, with a role in each fleet
//     they are a collaborator of (their UserRecords; `users add --role`):
//       admin:  everything in that fleet (specs, up/down, users, every job);
//       member: the nodes their `nodes` selects (status, events, run), and their own
//               jobs (see, logs, cancel);
//       viewer: the nodes their `nodes` selects and their own jobs, read only.
//     A fleet they are not on does not exist for them.
// A job is a person's when it runs as their Unix account (JobRecord's spec `user`, a
// worker's JobOnWorker::user): the account a collaborator logs in with is their name.
//
// Thread-safety: immutable after construction; copy freely.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/node_record.h"
#include "util/status.h"

namespace tpufleet {

/// A collaborator's role in one fleet, weakest first.
enum class Role { kViewer, kMember, kAdmin };

/// "viewer" | "member" | "admin" (kUserRoles' words).
std::string_view RoleName(Role role);
/// The role of a word of kUserRoles; InvalidArgument, listing them, for anything else.
Result<Role> ParseRole(std::string_view word);

/// Whether `user`'s `nodes` select the node `node` with `labels` (every node when it has
/// none).
bool UserSelectsNode(const UserRecord& user, const std::string& node,
                     const std::map<std::string, std::string>& labels);

class Access {
 public:
  /// Everything, for `who` ("operator", or the local user): no check refuses it.
  static Access Everything(std::string who);
  /// A person with their rows of the users table (every fleet's; rows of other names are
  /// ignored). With none, they see nothing.
  static Access Of(std::string person, const std::vector<UserRecord>& rows);

  const std::string& who() const { return who_; }
  bool everything() const { return everything_; }
  /// The person's role in `fleet`; nullopt when they are not on it (Everything: admin).
  std::optional<Role> RoleIn(std::string_view fleet) const;
  bool IsAdminOf(std::string_view fleet) const;
  /// The fleets they are on, in the order of their rows (Everything: none, as it is on
  /// every fleet; ask everything() first).
  std::vector<std::string> Fleets() const;
  /// Whether they may see `node` (its state, events, addresses).
  bool MaySeeNode(const NodeRecord& node) const;
  /// Whether they may start jobs on `node` and log in to it: a member or admin who sees it.
  bool MayUseNode(const NodeRecord& node) const;
  /// Whether they may see the job of fleet `fleet` run as Unix user `job_user`: an admin
  /// of the fleet, or the job's own person.
  bool MaySeeJob(std::string_view fleet, std::string_view job_user) const;
  /// Whether `other` is the same caller allowed exactly the same (each fleet's role and
  /// node selectors): what they see is then the same.
  bool SameAs(const Access& other) const;
  /// Whether they may cancel or restart it: an admin, or a member whose job it is.
  bool MayChangeJob(std::string_view fleet, std::string_view job_user) const;

 private:
  std::string who_;
  bool everything_ = false;
  std::vector<UserRecord> rows_;  // the person's, one per fleet

  const UserRecord* RowOf(std::string_view fleet) const;
};

}  // namespace tpufleet
