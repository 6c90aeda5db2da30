# Helpers of fleet_e2e_test.sh (sourced by it, after e2e_lib.sh, with $tmp, $bin,
# $project, $sshcfg and $ep set): the emulator's API as jq sees it, ssh to a worker by
# its SSH name, status --json fields, and the record of what the run made so that its
# end can check all of it is gone.

api() { ecurl -s --max-time 20 "$ep$1"; }
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
# wait_for SECONDS COMMAND...: polls COMMAND every 0.1 s until it succeeds.
wait_for() {
  local deadline=$((SECONDS + $1))
  shift
  until "$@"; do
    ((SECONDS < deadline)) || return 1
    sleep 0.1
  done
}
on() {
  local host=$1
  shift
  timeout 30 ssh -F "$sshcfg" -o BatchMode=yes -o ConnectTimeout=5 -o LogLevel=ERROR "$host" "$@"
}
status_json() { tf status --json "$@" >"$tmp/status.json" && jq -e . "$tmp/status.json" >/dev/null; }
field() { jq -r --arg n "$1" ".nodes[] | select(.node == \$n) | $2" "$tmp/status.json"; }

# What this run made, so that its end can check all of it is gone: the workers' network
# namespaces (by inode), the sshd processes in them, and the emulator's links.
root_netns=$(readlink /proc/self/ns/net)
: >"$tmp/netns" && : >"$tmp/sshd" && : >"$tmp/links"
ip -o link show | grep -o ' tpf[0-9a-z]*' | tr -d ' ' | sort -u >"$tmp/links.before"
remember_hosts() {
  local p ns
  for p in $(pgrep -f "tpufleet-emulator-worker --disk=$TPUFLEET_EMULATOR_DIR/"); do
    ns=$(readlink "/proc/$p/ns/net" 2>/dev/null) || continue
    [[ $ns != "$root_netns" ]] && echo "$ns" >>"$tmp/netns"
  done
  sort -u -o "$tmp/netns" "$tmp/netns"
  for p in $(pgrep -x sshd); do
    ns=$(readlink "/proc/$p/ns/net" 2>/dev/null) || continue
    grep -qxF "$ns" "$tmp/netns" && echo "$p" >>"$tmp/sshd"
  done
  sort -u -o "$tmp/sshd" "$tmp/sshd"
  ip -o link show | grep -o ' tpf[0-9a-z]*' | tr -d ' ' | sort -u |
    comm -23 - "$tmp/links.before" >>"$tmp/links"
  sort -u -o "$tmp/links" "$tmp/links"
}

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
stop_clean() {
  local p ns left=""
  [[ -s $tmp/netns && -s $tmp/sshd ]] || { echo "no worker namespaces or sshd were recorded"; return 1; }
  tf emulator stop >/dev/null || return 1
  sleep 0.2
  for p in /proc/[0-9]*; do
    ns=$(readlink "$p/ns/net" 2>/dev/null) || continue
    grep -qxF "$ns" "$tmp/netns" && left+=" ${p#/proc/}($(tr '\0' ' ' <"$p/cmdline" | cut -c1-60))"
  done
  [[ -z $left ]] || { echo "processes still in the workers' namespaces:$left"; return 1; }
  while read -r p; do
    [[ -d /proc/$p && $(cat "/proc/$p/comm" 2>/dev/null) == sshd ]] && left+=" sshd:$p"
  done <"$tmp/sshd"
  [[ -z $left ]] || { echo "sshd left:$left"; return 1; }
  left=$(pgrep -af "$tmp" | grep -v "^$$ ")
  [[ -z $left ]] || { echo "processes left: $left"; return 1; }
  left=$(ip -o link show | grep -o ' tpf[0-9a-z]*' | tr -d ' ' | sort -u | comm -12 - "$tmp/links")
  [[ -z $left ]] || { echo "links left: $left"; return 1; }
  [[ ! -e $TPUFLEET_EMULATOR_DIR ]] || { echo "state dir left"; return 1; }
}
