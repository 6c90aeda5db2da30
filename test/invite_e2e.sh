#!/usr/bin/env bash
# End to end, issue 16's collaborator from their own side: an emulated fleet of one spot
# v4-8 `pod`, `users add milo`, `tpufleet serve` over TLS on 127.0.0.1, then:
#   1. `invite eve` (no collaborator) is refused in one line; `invite milo` writes a 0600
#      file holding serve's fingerprint, prints the one line milo runs and never the
#      token; a second invite to the same file is refused;
#   2. on milo's laptop (a HOME of his own, no fleet state): a tampered invite (another
#      fingerprint) is refused at first contact, nothing kept; a malformed one in one
#      line; `tpufleet join FILE` keeps the token 0600, pins the certificate and includes
#      the SSH names in ~/.ssh/config;
#   3. `ssh pod` (through that config, StrictHostKeyChecking yes, milo's own key) logs
#      in as milo; `tpufleet jobs` and `status` go to the server with no --server (`up`
#      too, refused: milo is a member);
#   4. pod is preempted (`emulator inject preempt`) and serve recreates it with new host
#      keys: `ssh pod` works again by the same name, with no prompt;
#   5. `users remove milo`: his token is forgotten, `tpufleet jobs` is refused.
# Everything (serve, the emulator, the temp dirs) is removed on exit, even on failure.
# Prints "ok N - ..." or "not ok N - ..." per check and exits 1 if any failed.
# Usage: invite_e2e.sh path/to/tpufleet. Exit 77 (skipped) when not root, when a tool it
# needs is missing, or when no tpufleet-agent was built next to tpufleet.
set -uo pipefail
here=$(dirname "$0")
source "$here/e2e_lib.sh"
bin=$(realpath "$1")
e2e_require jq curl ssh ssh-keygen timeout ip pgrep python3
e2e_require_agent "$bin"
e2e_home invite

serve_e2e_traps

laptop=$tmp/laptop
mkdir -p "$laptop"
# on_laptop NAME ARGS…: `tpufleet ARGS…` as milo on his laptop (a HOME of his own, a
# state dir that does not exist), in $tmp, kept as tf_run keeps it.
on_laptop() {
  local name=$1
  shift
  (cd "$tmp" && HOME=$laptop TPUFLEET_STATE_DIR=$laptop/no-state tf_run "$name" "$@")
}
# milo_ssh ALIAS COMMAND: ssh as milo with his own key, through the names join wrote.
milo_ssh() {
  HOME=$laptop TPUFLEET_STATE_DIR=$laptop/no-state timeout 60 ssh -F "$laptop/.ssh/config" \
    -o IdentityFile="$tmp/milo" -o IdentitiesOnly=yes -o BatchMode=yes -o ConnectTimeout=10 \
    -o LogLevel=ERROR "$1" "$2"
}
# Worker 0 of pod as serve's /v1/hosts gives it to the operator: "ADDRESS KEY".
pod_host() {
  curl -sk --max-time 20 -H "Authorization: Bearer $(cat "$state/serve/token")" "$url/v1/hosts" |
    jq -r '.hosts[] | select(.node == "pod" and .worker == 0) | .address + " " + .host_key'
}

track_hosts_begin
check_emulator_starts
printf 'fleet: inv\nprovider: emulator\nnodes:\n  - name: pod\n    type: v4-8\n    capacity: spot\n    zones: [%s]\n' \
  "$zone" >"$tmp/fleet.yaml"
ssh-keygen -q -t ed25519 -N '' -C milo@laptop -f "$tmp/milo"
up_and_add() {
  up_spec "$tmp/fleet.yaml"
  tf_run add users add milo --key "$tmp/milo.pub" --spec "$tmp/fleet.yaml"
  rc_is add 0 || { shows add; return 1; }
}
check "up makes the spot v4-8 pod; users add milo" up_and_add
remember_hosts

serving() { serve_tls "$tmp/fleet.yaml" serve.log --pass 2; }
check "serve starts over TLS" serving
url=${url:-https://127.0.0.1:1}
fp=${fp:-none}

# ---- 1. invite
stranger() {
  tf_run eve invite eve --server-url "$url" --out "$tmp/eve.tpufleet-invite"
  rc_is eve 1 && [[ $(wc -l <"$tmp/eve.err") == 1 ]] &&
    grep -q "^tpufleet: error: eve is no collaborator of any fleet here: \`tpufleet users add eve" "$tmp/eve.err" ||
    { shows eve; return 1; }
  [[ ! -e $tmp/eve.tpufleet-invite ]] || { echo "a file was written"; return 1; }
}
check "invite of a non-collaborator: one line, no file" stranger
invite="$tmp/milo.tpufleet-invite"
invited() {
  (cd "$tmp" && tf_run invite invite milo --server-url "$url")
  rc_is invite 0 || { shows invite; return 1; }
  [[ $(stat -c %a "$invite") == 600 ]] || { stat -c %a "$invite"; return 1; }
  grep -qx "  tpufleet join milo.tpufleet-invite" "$tmp/invite.out" &&
    grep -q "It is a credential" "$tmp/invite.out" || { shows invite; return 1; }
  [[ $(jq -r .fingerprint "$invite") == "$fp" && $(jq -r .server "$invite") == "$url" &&
     $(jq -r .person "$invite") == milo && $(jq -r .tpufleet_invite "$invite") == 1 ]] ||
    { jq 'del(.token)' "$invite"; return 1; }
  local token
  token=$(jq -r .token "$invite")
  [[ $token == tpufleet-person-* ]] || return 1
  ! grep -qF "$token" "$tmp/invite.out" "$tmp/invite.err" "$tmp/serve.log" ||
    { echo "the token was printed"; return 1; }
}
check "invite milo: a 0600 file with serve's fingerprint, the line to run, the token never printed" invited
twice() {
  (cd "$tmp" && tf_run again invite milo --server-url "$url")
  rc_is again 1 && grep -q "milo.tpufleet-invite exists" "$tmp/again.err" || { shows again; return 1; }
}
check "a second invite to the same file is refused" twice

# ---- 2. join
tampered() {
  local other
  other="SHA256:$(head -c 32 /dev/urandom | base64 | tr -d =)"
  jq --arg f "$other" '.fingerprint = $f' "$invite" >"$tmp/tampered.tpufleet-invite"
  on_laptop tampered join tampered.tpufleet-invite
  rc_is tampered 1 && [[ $(wc -l <"$tmp/tampered.err") == 1 ]] &&
    grep -qF "presents another TLS certificate, $fp, than the one pinned for it, $other, in the invite tampered.tpufleet-invite. Nothing was sent." "$tmp/tampered.err" ||
    { shows tampered; return 1; }
  [[ ! -e $laptop/.config/tpufleet/server && ! -e $laptop/.config/tpufleet/known_servers &&
     ! -e $laptop/.ssh ]] || { find "$laptop"; return 1; }
  echo '{"tpufleet_invite": 1, "server": "https://x"}' >"$tmp/bad.tpufleet-invite"
  on_laptop bad join bad.tpufleet-invite
  rc_is bad 1 && grep -qxF 'tpufleet: error: bad.tpufleet-invite: its "fingerprint" is not a certificate'"'"'s SHA256:…' "$tmp/bad.err" ||
    { shows bad; return 1; }
}
check "a tampered invite (another fingerprint) is refused at first contact, nothing kept; a malformed one in one line" tampered
joined() {
  on_laptop join join milo.tpufleet-invite
  rc_is join 0 && grep -q "^Joined $url as milo" "$tmp/join.out" && grep -qx "  pod (worker 0)" "$tmp/join.out" ||
    { shows join; return 1; }
  local server=${url#https://}
  [[ $(stat -c %a "$laptop/.config/tpufleet/servers/$server") == 600 ]] || return 1
  [[ $(cat "$laptop/.config/tpufleet/known_servers") == "$server $fp" ]] ||
    { cat "$laptop/.config/tpufleet/known_servers"; return 1; }
  grep -qx "Include $laptop/.ssh/tpufleet/$server/config" "$laptop/.ssh/config" || { cat "$laptop/.ssh/config"; return 1; }
  grep -q "ProxyCommand $bin ssh-proxy --server $url -- pod 0" "$laptop/.ssh/tpufleet/$server/config" &&
    grep -q "User milo" "$laptop/.ssh/tpufleet/$server/config" ||
    { cat "$laptop/.ssh/tpufleet/$server/config"; return 1; }
}
check "join: the token kept 0600, the certificate pinned, the SSH names included" joined

# ---- 3. ssh and the commands through the server
logs_in() {
  local out
  out=$(milo_ssh pod 'echo $(id -un)@$(hostname)' 2>&1) || { echo "ssh failed: $out"; return 1; }
  [[ $out == milo@* ]] || { echo "said: $out"; return 1; }
  out=$(milo_ssh pod-w0 'id -un' 2>&1) && [[ $out == milo ]] || { echo "pod-w0: $out"; return 1; }
}
check "ssh pod logs in as milo with his own key, the host key pinned" logs_in
commands() {
  on_laptop jobs jobs
  rc_is jobs 0 || { shows jobs; return 1; }
  on_laptop status status
  rc_is status 0 && grep -q "^pod " "$tmp/status.out" || { shows status; return 1; }
  on_laptop up up fleet.yaml
  rc_is up 1 && grep -qxF "tpufleet: error: up needs an admin of fleet inv (or the team server's operator); milo is not one" "$tmp/up.err" ||
    { shows up; return 1; }
}
check "tpufleet jobs and status go to the server with no --server; up goes there too and is refused (milo is no admin)" commands

# ---- 4. a recreate
before=$(pod_host)
note "pod/w0 before: ${before%% *}"
check "emulator inject preempt pod" tf emulator inject preempt pod
recreated() {
  local now
  now=$(pod_host)
  [[ -n $now && $now != "$before" ]] || return 1
  tf status --json 2>/dev/null | jq -e '.nodes[] | select(.node == "pod") | .state == "READY"' >/dev/null
}
recreates() {
  wait_for 300 recreated || { echo "before: $before"; echo "now: $(pod_host)"; tail -20 "$tmp/serve.log"; return 1; }
  local now
  now=$(pod_host)
  note "pod/w0 after: ${now%% *}"
  [[ ${now#* } != "${before#* }" ]] || { echo "the same host key: $now"; return 1; }
}
check "serve recreates pod: new host keys" recreates
again() {
  local out=""
  logs_in_again() { out=$(milo_ssh pod 'id -un' 2>&1) && [[ $out == milo ]]; }
  # milo's account comes back with the node's users a moment after READY.
  wait_for 120 logs_in_again || { echo "ssh said: $out"; return 1; }
}
check "ssh pod works again by the same name, StrictHostKeyChecking yes, no prompt" again

# ---- 5. removed
removed() {
  # Here, beside the running serve, on the same store.
  tf_run remove users remove milo --spec "$tmp/fleet.yaml"
  rc_is remove 0 || { shows remove; return 1; }
  on_laptop gone jobs
  rc_is gone 1 && grep -q "refused the token (from the invite joined (milo))" "$tmp/gone.err" ||
    { shows gone; return 1; }
}
check "users remove milo: his token is forgotten, jobs through the server refused" removed

check "serve stops, and down removes pod" serve_and_fleet_end

echo "1..$n"
[[ $failed -eq 0 ]]
