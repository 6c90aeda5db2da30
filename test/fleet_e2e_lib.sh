# Helpers of fleet_e2e_test.sh (sourced by it, after e2e_lib.sh, with $tmp, $bin,
# $project, $sshcfg and $ep set): the emulator's API as jq sees it, ssh to a worker by
# its SSH name, status --json fields, and the record of what the run made so that its
# end can check all of it is gone.

zone_api() { echo "v2/projects/$project/locations/$1"; }
# "ZONE NAME STATE" of every node in the zones, sorted.
cloud_nodes() {
  local z
  for z in "$@"; do
    api "$(zone_api "$z")/nodes" |
      jq -r --arg z "$z" '.nodes[]? | "\($z) \(.name | split("/") | last) \(.state)"'
  done | sort
}
cloud_queued() {
  local z
  for z in "$@"; do
    api "$(zone_api "$z")/queuedResources" |
      jq -r --arg z "$z" '.queuedResources[]? | "\($z) \(.name | split("/") | last) \(.state.state)"'
  done | sort
}
cloud_ops() {
  local z
  for z in "$@"; do api "$(zone_api "$z")/operations" | jq -r '.operations[]?.name'; done | sort
}
on() {
  local host=$1
  shift
  timeout 30 ssh -F "$sshcfg" -o BatchMode=yes -o ConnectTimeout=5 -o LogLevel=ERROR "$host" "$@"
}
status_json() { tf status --json "$@" >"$tmp/status.json" && jq -e . "$tmp/status.json" >/dev/null; }
field() { jq -r --arg n "$1" ".nodes[] | select(.node == \$n) | $2" "$tmp/status.json"; }

track_hosts_begin  # e2e_lib.sh: what this run's emulator makes, checked at its end

# setup_once NODE WORKERS: every worker's ~/setup-runs has one line, its own hostname.
setup_once() {
  local node=$1 workers=$2 i out host
  for ((i = 0; i < workers; i++)); do
    host=$node-w$i
    out=$(on "$host" 'hostname; cat ~/setup-runs') || { echo "$host: ssh failed"; return 1; }
    mapfile -t lines <<<"$out"
    [[ ${#lines[@]} -eq 2 && ${lines[1]} == "${lines[0]}" ]] ||
      { echo "$host: hostname, then setup runs:"; echo "$out"; return 1; }
  done
}
