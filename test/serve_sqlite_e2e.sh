#!/usr/bin/env bash
# Issue 16: serve on a SQLite state, its API's commands and local commands side by side.
# Each served command opens the store again inside serve's process; a local `tpufleet
# jobs` and `status` run meanwhile and exit. Opening the file by hand once dropped every
# POSIX lock serve held on it (closing any descriptor of a file does), so an exiting local
# command took itself for the last user, removed the WAL index from under serve, and
# every later served command failed with "disk I/O error". Checks, as a user sees them:
# every served and local command exits 0, and the WAL index is still there.
# Usage: serve_sqlite_e2e.sh path/to/tpufleet. Exit 77 (skipped) when not root, when a
# tool it needs is missing, or when no tpufleet-agent was built next to tpufleet.
set -uo pipefail
source "$(dirname "$0")/e2e_lib.sh"
bin=$(realpath "$1")
e2e_require jq curl ssh timeout ip pgrep python3
e2e_require_agent "$bin"
e2e_home sqlite

serve_e2e_traps

track_hosts_begin
check_emulator_starts
cat >"$tmp/fleet.yaml" <<YAML
fleet: sqlite
provider: emulator
nodes:
  - name: sq
    type: v4-8
    zones: [$zone]
YAML
up_sq() { up_spec "$tmp/fleet.yaml"; }
check "up makes sq" up_sq
remember_hosts

start_serve() { serve_tls "$tmp/fleet.yaml" serve.log --pass 2; }
check "serve starts on the SQLite state" start_serve
url=${url:-https://127.0.0.1:1}

side_by_side() {
  local i
  for i in 1 2 3 4; do
    TPUFLEET_TOKEN_FILE=$state/serve/token tf_run "served-$i" --server "$url" status
    tf_run "jobs-$i" jobs
    tf_run "status-$i" status
    rc_is "served-$i" 0 && rc_is "jobs-$i" 0 && rc_is "status-$i" 0 ||
      { shows "served-$i"; shows "jobs-$i"; shows "status-$i"; return 1; }
    sleep 2  # serve's passes (--pass 2) use the store meanwhile
  done
  [[ -e $state/state.db-shm ]] || { echo "state.db-shm is gone"; return 1; }
}
check "served status and local jobs and status, four rounds: all exit 0, the WAL index kept" side_by_side

check "serve stops, and down removes sq" serve_and_fleet_end

echo "1..$n"
[[ $failed -eq 0 ]]
