#!/usr/bin/env bash
# End to end, issue 16's admin commands through the team server: an emulated fleet `adm`
# of one v4-8 `one`; `users add boss --role admin` and `users add mia` (a member) by the
# operator; `tpufleet serve` over TLS; `tpufleet invite` for each, joined on a laptop of
# their own (a HOME with no fleet state). Then, from the laptops:
#   1. boss: `users add milo --key milo.pub --spec adm.yaml`: the key and the spec go
#      with the command; milo logs in to one's worker with his own key, the host key
#      pinned from the server's /v1/hosts;
#   2. boss: `up adm.yaml` with a second node `two` in his copy of the spec: two is made
#      and READY; `down two` without --yes is refused (a server has no terminal to ask
#      at), `down two --yes` deletes it;
#   3. mia (a member): up, down and users are refused, one line each, and change nothing;
#   4. a request naming a file of the server's machine without sending it (/etc/shadow,
#      and a good spec of adm's on the server's disk) is refused, and nothing is made;
#   5. the audit log shows boss's actions (the key's path left out) and mia's refusals.
# Everything (serve, the fleet, the emulator, $tmp) is removed on exit, even on failure.
# Prints "ok N - ..." or "not ok N - ..." per check and exits 1 if any failed.
# Usage: serve_admin_e2e.sh path/to/tpufleet. Exit 77 (skipped) when not root, when a
# tool it needs is missing, or when no tpufleet-agent was built next to tpufleet.
set -uo pipefail
here=$(dirname "$0")
source "$here/e2e_lib.sh"
bin=$(realpath "$1")
e2e_require jq curl ssh ssh-keygen timeout ip pgrep python3
e2e_require_agent "$bin"
e2e_home serve-admin

serve_e2e_traps

# spec FILE NODE…: fleet adm with a v4-8 of each NODE name.
spec() {
  local file=$1 node
  shift
  printf 'fleet: adm\nprovider: emulator\nnodes:\n' >"$file"
  for node in "$@"; do
    printf '  - name: %s\n    type: v4-8\n    zones: [%s]\n' "$node" "$zone" >>"$file"
  done
}
# as WHO NAME ARGS…: `tpufleet ARGS…` on WHO's laptop (a HOME of their own, a state dir
# that does not exist), in their laptop dir, kept as tf_run keeps it.
as() {
  local who=$1 name=$2
  shift 2
  (cd "$tmp/$who" && HOME=$tmp/$who TPUFLEET_STATE_DIR=$tmp/$who/no-state tf_run "$name" "$@")
}
# one_line NAME STATUS TEXT: the run NAME exited STATUS with the one line TEXT on stderr.
one_line() {
  rc_is "$1" "$2" && [[ $(wc -l <"$tmp/$1.err") == 1 ]] && grep -qxF "$3" "$tmp/$1.err" ||
    { shows "$1"; return 1; }
}
# nodes: the fleet's nodes and their states, from the server's own state.
nodes() { tf status --json 2>/dev/null | jq -r '[.nodes[] | .node + "=" + .state] | sort | join(" ")'; }

track_hosts_begin
check_emulator_starts
spec "$tmp/adm.yaml" one
up_fleet() { up_spec "$tmp/adm.yaml"; }
check "up brings up one (v4-8)" up_fleet
remember_hosts

add_people() {
  local who
  for who in boss mia milo; do
    mkdir -p "$tmp/$who" && ssh-keygen -q -t ed25519 -N '' -C "$who@laptop" -f "$tmp/$who/key" ||
      return 1
  done
  tf_run add-boss users add boss --key "$tmp/boss/key.pub" --role admin --spec "$tmp/adm.yaml"
  tf_run add-mia users add mia --key "$tmp/mia/key.pub" --spec "$tmp/adm.yaml"
  rc_is add-boss 0 && rc_is add-mia 0 || { shows add-boss; shows add-mia; return 1; }
}
check "the operator adds boss (admin of adm) and mia (a member)" add_people

serving() { serve_tls "$tmp/adm.yaml" serve.log; }
check "serve starts over TLS" serving
url=${url:-https://127.0.0.1:1}

joined() {
  local who
  for who in boss mia; do
    tf_run "invite-$who" invite "$who" --server-url "$url" --out "$tmp/$who/$who.tpufleet-invite"
    rc_is "invite-$who" 0 || { shows "invite-$who"; return 1; }
    as "$who" "join-$who" join "$who.tpufleet-invite"
    rc_is "join-$who" 0 || { shows "join-$who"; return 1; }
  done
}
check "invite and join boss and mia, each on a laptop of their own" joined

# ---- 1. boss adds milo
cp "$tmp/milo/key.pub" "$tmp/boss/milo.pub"
spec "$tmp/boss/adm.yaml" one
adds_milo() {
  as boss add users add milo --key milo.pub --spec adm.yaml
  rc_is add 0 && grep -q "^milo: added to fleet adm (no sudo, every node, role member)$" "$tmp/add.out" &&
    grep -q "^  one: done on 1 worker$" "$tmp/add.out" || { shows add; return 1; }
}
check "boss, from his laptop: users add milo --key milo.pub --spec adm.yaml" adds_milo
milo_logs_in() {
  local host address port key out
  host=$(curl -sk --max-time 20 -H "Authorization: Bearer $(cat "$state/serve/token")" "$url/v1/hosts" |
    jq -c '.hosts[] | select(.node == "one" and .worker == 0)')
  address=$(jq -r .address <<<"$host") port=$(jq -r .port <<<"$host") key=$(jq -r .host_key <<<"$host")
  [[ -n $address && -n $key ]] || { echo "no host: $host"; return 1; }
  if [[ $port == 22 ]]; then echo "$address $key"; else echo "[$address]:$port $key"; fi >"$tmp/milo/known_hosts"
  out=$(timeout 60 ssh -i "$tmp/milo/key" -o IdentitiesOnly=yes -o BatchMode=yes \
    -o UserKnownHostsFile="$tmp/milo/known_hosts" -o StrictHostKeyChecking=yes -o ConnectTimeout=10 \
    -o LogLevel=ERROR -p "$port" "milo@$address" 'id -un' 2>&1) && [[ $out == milo ]] ||
    { echo "ssh said: $out"; return 1; }
}
check "milo logs in to one's worker with his own key (host key pinned from /v1/hosts)" milo_logs_in

# ---- 2. boss brings up two, then deletes it
spec "$tmp/boss/adm.yaml" one two
brings_up() {
  as boss up up adm.yaml --timeout 3m
  rc_is up 0 && grep -q "^2 of 2 nodes ready; 1 changed.$" "$tmp/up.out" || { shows up; return 1; }
  [[ $(nodes) == "one=READY two=READY" ]] || { nodes; return 1; }
}
check "boss: up adm.yaml (his copy, with a node two): two is made and READY" brings_up
deletes() {
  as boss ask down two
  one_line ask 2 "tpufleet: down deletes two; a team server has no terminal to ask at, so pass --yes to confirm" ||
    return 1
  as boss down down two --yes
  rc_is down 0 || { shows down; return 1; }
  [[ $(nodes) == "one=READY" ]] || { nodes; return 1; }
}
check "boss: down two asks for --yes, then deletes it" deletes

# ---- 3. mia is refused
spec "$tmp/mia/adm.yaml" one three
cp "$tmp/milo/key.pub" "$tmp/mia/zed.pub"
refused() {
  local denied="needs an admin of fleet adm (or the team server's operator); mia is not one"
  as mia up up adm.yaml
  one_line up 1 "tpufleet: error: up $denied" || return 1
  as mia down down one --yes
  one_line down 1 "tpufleet: error: down of one $denied" || return 1
  as mia users users add zed --key zed.pub --spec adm.yaml
  one_line users 1 "tpufleet: error: users add $denied" || return 1
  [[ $(nodes) == "one=READY" ]] || { nodes; return 1; }
  tf_run list users list --json
  [[ $(jq -r '[.users[].name] | sort | join(" ")' "$tmp/list.out") == "boss mia milo" ]] ||
    { shows list; return 1; }
}
check "mia (a member): up, down and users refused in one line each; nothing changed" refused

# ---- 4. the server's own files are never read for a client
own_files() {
  local token out
  token=$(jq -r .token "$tmp/boss/boss.tpufleet-invite")
  spec "$tmp/server-side.yaml" one four
  for path in /etc/shadow "$tmp/server-side.yaml"; do
    out=$(curl -sk --max-time 60 -H "Authorization: Bearer $token" -H 'Content-Type: application/json' \
      --data "$(jq -cn --arg p "$path" '{argv: ["up", $p, "--timeout", "3m"]}')" "$url/v1/command")
    # The answer streams (NDJSON): the stderr pieces, then the exit code.
    [[ $(jq -rs 'map(.exit_code // empty) | last' <<<"$out") == 1 &&
       $(jq -rjs 'map(.stderr // empty) | join("")' <<<"$out") == "tpufleet: error: reading the fleet spec: \"$path\" was not sent with the command: a team server reads the files a command names from its client only, never from its own disk" ]] ||
      { echo "$out"; return 1; }
  done
  [[ $(nodes) == "one=READY" ]] || { nodes; return 1; }
}
check "up naming a file of the server's (/etc/shadow, a good spec) without sending it: refused, nothing made" own_files

# ---- 5. the audit log
audited() {
  tf_run audit audit
  rc_is audit 0 || { shows audit; return 1; }
  grep -Eq '^\S+ +boss +users add milo --key … --spec adm.yaml +ok$' "$tmp/audit.out" &&
    grep -Eq '^\S+ +boss +up adm.yaml --timeout 3m +ok$' "$tmp/audit.out" &&
    grep -Eq '^\S+ +boss +down two +exit 2$' "$tmp/audit.out" &&
    grep -Eq '^\S+ +boss +down two --yes +ok$' "$tmp/audit.out" &&
    grep -Eq '^\S+ +mia +up adm.yaml +exit 1$' "$tmp/audit.out" &&
    grep -Eq '^\S+ +mia +users add zed --key … --spec adm.yaml +exit 1$' "$tmp/audit.out" &&
    grep -Eq "^\S+ +boss +up /etc/shadow --timeout 3m +exit 1$" "$tmp/audit.out" ||
    { shows audit; return 1; }
}
check "the audit log shows boss's actions and mia's refusals" audited

check "serve stops, and down removes one" serve_and_fleet_end

echo "1..$n"
[[ $failed -eq 0 ]]
