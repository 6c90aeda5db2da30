#include "control/access.h"

#include <algorithm>

#include "control/targets.h"

namespace tpufleet {

std::string_view RoleName(Role role) {
  switch (role) {
    case Role::kViewer:
      return "viewer";
    case Role::kMember:
      return "member";
    case Role::kAdmin:
      return "admin";
  }
  return "viewer";
}

Result<Role> ParseRole(std::string_view word) {
  for (Role r : {Role::kViewer, Role::kMember, Role::kAdmin}) {
    if (RoleName(r) == word) {
      return r;
    }
  }
  return InvalidArgumentError("a role is member, viewer or admin, not '" +
                              std::string(word.substr(0, 64)) + "'");
}

bool UserSelectsNode(const UserRecord& user, const std::string& node,
                     const std::map<std::string, std::string>& labels) {
  return user.nodes.empty() ||
         std::any_of(user.nodes.begin(), user.nodes.end(),
                     [&](const std::string& w) { return SelectsNode(w, node, labels); });
}

Access Access::Everything(std::string who) {
  Access a;
  a.who_ = std::move(who);
  a.everything_ = true;
  return a;
}

Access Access::Of(std::string person, const std::vector<UserRecord>& rows) {
  Access a;
  a.who_ = std::move(person);
  std::copy_if(rows.begin(), rows.end(), std::back_inserter(a.rows_),
               [&](const UserRecord& u) { return u.name == a.who_; });
  return a;
}

const UserRecord* Access::RowOf(std::string_view fleet) const {
  auto it = std::find_if(rows_.begin(), rows_.end(),
                         [&](const UserRecord& u) { return u.fleet == fleet; });
  return it == rows_.end() ? nullptr : &*it;
}

std::optional<Role> Access::RoleIn(std::string_view fleet) const {
  if (everything_) {
    return Role::kAdmin;
  }
  const UserRecord* row = RowOf(fleet);
  if (row == nullptr) {
    return std::nullopt;
  }
  // A stored role this build does not know gives the least.
  Result<Role> role = ParseRole(row->role);
  return role.ok() ? *role : Role::kViewer;
}

bool Access::SameAs(const Access& other) const {
  auto allows = [](const UserRecord& a, const UserRecord& b) {
    return a.fleet == b.fleet && a.role == b.role && a.nodes == b.nodes;
  };
  return who_ == other.who_ && everything_ == other.everything_ &&
         std::equal(rows_.begin(), rows_.end(), other.rows_.begin(), other.rows_.end(), allows);
}

bool Access::IsAdminOf(std::string_view fleet) const {
  return RoleIn(fleet) == Role::kAdmin;
}

std::vector<std::string> Access::Fleets() const {
  std::vector<std::string> out;
  for (const UserRecord& u : rows_) {
    out.push_back(u.fleet);
  }
  return out;
}

bool Access::MaySeeNode(const NodeRecord& node) const {
  if (IsAdminOf(node.fleet)) {
    return true;
  }
  const UserRecord* row = RowOf(node.fleet);
  return row != nullptr && UserSelectsNode(*row, node.name, node.labels);
}

bool Access::MayUseNode(const NodeRecord& node) const {
  std::optional<Role> role = RoleIn(node.fleet);
  return role.has_value() && *role >= Role::kMember && MaySeeNode(node);
}

bool Access::MaySeeJob(std::string_view fleet, std::string_view job_user) const {
  return IsAdminOf(fleet) || (RoleIn(fleet).has_value() && job_user == who_);
}

bool Access::MayChangeJob(std::string_view fleet, std::string_view job_user) const {
  std::optional<Role> role = RoleIn(fleet);
  return role == Role::kAdmin || (role == Role::kMember && job_user == who_);
}

}  // namespace tpufleet
