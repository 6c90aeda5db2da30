#!/usr/bin/env bash
# End to end, issue 16's team server over TLS, as its admin and a collaborator meet it:
# `tpufleet serve` keeps one emulated fleet (a v4-8 `rn` running a job) on 127.0.0.1 and
# the CLI talks to it with --server and TPUFLEET_SERVER.
#   1. serve makes its key and certificate at first start (key 0600, directory 0700) and
#      logs the certificate's fingerprint, the one openssl computes from the file;
#   2. `tpufleet --server URL status --json`, `jobs --json` and `events --json` print
#      what the local commands print (the ages and costs, which move, left out); the
#      tables too; the first use pins the certificate in ~/.config/tpufleet/known_servers
#      (0600) and says so with its fingerprint; `invite` through the server is refused in one
#      line, nothing run here;
#   3. a wrong token, a server that is down: one message each;
#   4. serve restarted with another certificate (--tls-cert, --tls-key): refused, naming
#      both fingerprints and the file, nothing sent; --server-fingerprint with the new
#      one, as the message says, is taken and pinned; a fingerprint given ahead of first
#      use works with no trust on first use;
#   5. a hostile local user (runuser -u nobody), even let through the directories,
#      reads neither the key, nor the token, nor the pins;
#   6. --plain-http on a non-loopback address is refused.
# Prints "ok N - ..." or "not ok N - ..." per check and exits 1 if any failed.
# Usage: serve_remote_e2e.sh path/to/tpufleet. Exit 77 (skipped) when not root, when a
# tool it needs is missing, or when no tpufleet-agent was built next to tpufleet.
set -uo pipefail
here=$(dirname "$0")
source "$here/e2e_lib.sh"
bin=$(realpath "$1")
e2e_require jq curl ssh ssh-keygen timeout ip pgrep openssl runuser python3
e2e_require_agent "$bin"
e2e_home remote

serve_pid=""
cleanup() {
  stop_serve
  tf down --all --yes >/dev/null 2>&1
  e2e_end
}
trap cleanup EXIT
trap 'exit 143' TERM INT HUP  # so that a ctest timeout still cleans up

# One port for every serve of the run: a client pins a certificate per HOST:PORT.
# start_serve LOG ARGS…: serve in the background; $url and $fp from its log.
start_serve() { local log=$1; shift; serve_tls "$tmp/rn.yaml" "$log" --pass 2 "$@"; }
# The fingerprint openssl computes of certificate file $1, written as tpufleet writes it.
openssl_fp() {
  echo "SHA256:$(openssl x509 -in "$1" -outform DER | openssl dgst -sha256 -binary | base64 | tr -d =)"
}
# remote NAME ARGS…: `tpufleet --server $url ARGS…` kept as tf_run keeps it.
remote() {
  local name=$1
  shift
  TPUFLEET_TOKEN_FILE=$state/serve/token tf_run "$name" --server "$url" "$@"
}
# What moves between two runs a second apart: ages, costs, "seconds ago".
steady() {
  jq -S 'del(.. | .age_seconds?, .cost_usd?, .states_age_seconds?, .last_pass_seconds_ago?,
              .duration_ms?, .verdict_detail?)' "$1"
}

track_hosts_begin
check_emulator_starts
cat >"$tmp/rn.yaml" <<EOF
fleet: remote
provider: emulator
nodes:
  - name: rn
    type: v4-8
    zones: [$zone]
EOF
up_rn() {
  tf up "$tmp/rn.yaml" --timeout 3m >"$tmp/up.txt" 2>&1 || { cat "$tmp/up.txt"; return 1; }
  tf run --detach rn --name sleeper --no-accelerator -- sleep 900 >"$tmp/run.txt" 2>&1 ||
    { cat "$tmp/run.txt"; return 1; }
}
check "up makes rn, and a job runs on it" up_rn
remember_hosts

# ---- 1. the certificate
made() {
  start_serve serve.log || return 1
  [[ $(stat -c %a "$state/serve/tls.key") == 600 && $(stat -c %a "$state/serve") == 700 ]] ||
    { stat -c '%n %a %U' "$state/serve" "$state/serve/"*; return 1; }
  [[ $fp == "$(openssl_fp "$state/serve/tls.crt")" ]] ||
    { echo "logged $fp, openssl says $(openssl_fp "$state/serve/tls.crt")"; return 1; }
  openssl x509 -in "$state/serve/tls.crt" -noout -text | grep -q 'IP Address:127.0.0.1' ||
    { openssl x509 -in "$state/serve/tls.crt" -noout -text; return 1; }
  note "serve: $url, certificate $fp"
}
check "serve makes its key (0600) and certificate and logs the fingerprint openssl computes" made
url=${url:-https://127.0.0.1:1}

# ---- 2. the same output through the server
same_json() {
  local cmd
  for cmd in status jobs events; do
    tf_run "local-$cmd" "$cmd" --json
    remote "remote-$cmd" "$cmd" --json
    rc_is "remote-$cmd" 0 && rc_is "local-$cmd" 0 || { shows "remote-$cmd"; shows "local-$cmd"; return 1; }
    diff <(steady "$tmp/local-$cmd.out") <(steady "$tmp/remote-$cmd.out") ||
      { echo "$cmd --json differs"; return 1; }
  done
  jq -e '.nodes[0].node == "rn"' "$tmp/remote-status.out" >/dev/null || { shows remote-status; return 1; }
  jq -e '[.jobs[] | select(.name == "sleeper")] | length == 1' "$tmp/remote-jobs.out" >/dev/null ||
    { shows remote-jobs; return 1; }
}
check "--server: status, jobs and events --json print what the local commands print" same_json
first_use_pinned() {
  local known=$HOME/.config/tpufleet/known_servers
  grep -qF "first use of ${url#https://}: pinned its TLS certificate $fp in $known" \
    "$tmp/remote-status.err" || { shows remote-status; return 1; }
  [[ $(cat "$known") == "${url#https://} $fp" && $(stat -c %a "$known") == 600 ]] ||
    { cat "$known"; stat -c '%a' "$known"; return 1; }
  ! grep -q "first use" "$tmp/remote-jobs.err" || { echo "said again:"; shows remote-jobs; return 1; }
}
check "the first use pins the certificate in known_servers (0600) and says so, once" first_use_pinned
same_tables() {
  tf_run local-events events
  TPUFLEET_SERVER=$url TPUFLEET_TOKEN_FILE=$state/serve/token tf_run remote-events events
  cmp -s "$tmp/local-events.out" "$tmp/remote-events.out" ||
    { diff "$tmp/local-events.out" "$tmp/remote-events.out"; return 1; }
  tf_run local-status status
  remote remote-status status
  # The same columns and the same node row up to its age and cost.
  diff <(head -2 "$tmp/local-status.out" | cut -c1-60) <(head -2 "$tmp/remote-status.out" | cut -c1-60) ||
    { shows remote-status; return 1; }
  grep -q "^serve: running (pid $serve_pid," "$tmp/remote-status.out" || { shows remote-status; return 1; }
}
check "the tables too (events exactly; TPUFLEET_SERVER works as --server)" same_tables
not_served() {
  remote invite invite milo --server-url "$url"
  rc_is invite 2 && [[ $(wc -l <"$tmp/invite.err") == 1 ]] &&
    grep -q "^tpufleet: \`invite\` is not served remotely yet" "$tmp/invite.err" ||
    { shows invite; return 1; }
  [[ ! -s $tmp/invite.out ]] || { shows invite; return 1; }
}
check "invite through the server: one line saying it is not served remotely yet, nothing run" not_served

# ---- 3. a wrong token, a server that is down
wrong_token() {
  TPUFLEET_TOKEN=tpufleet-serve-not-the-token tf_run wrong --server "$url" status
  rc_is wrong 1 && [[ $(wc -l <"$tmp/wrong.err") == 1 ]] &&
    grep -q "^tpufleet: error: the team server $url refused the token (from TPUFLEET_TOKEN): the token is neither serve's nor a person's of this server" \
      "$tmp/wrong.err" || { shows wrong; return 1; }
}
check "a wrong token: one message, the server's refusal" wrong_token
down_server() {
  TPUFLEET_TOKEN_FILE=$state/serve/token tf_run dead --server https://127.0.0.1:1 jobs
  rc_is dead 1 && [[ $(wc -l <"$tmp/dead.err") == 1 ]] &&
    grep -q "^tpufleet: error: cannot reach the team server https://127.0.0.1:1: " "$tmp/dead.err" ||
    { shows dead; return 1; }
}
check "a server that is down: one message" down_server

# ---- 4. another certificate
old_fp=$fp
changed_refused() {
  stop_serve
  openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 2 -subj /CN=other \
    -addext subjectAltName=IP:127.0.0.1 -keyout "$tmp/other.key" -out "$tmp/other.crt" 2>/dev/null &&
    chmod 600 "$tmp/other.key" || return 1
  start_serve serve2.log --tls-cert "$tmp/other.crt" --tls-key "$tmp/other.key" || return 1
  [[ $fp == "$(openssl_fp "$tmp/other.crt")" && $fp != "$old_fp" ]] || { echo "$fp $old_fp"; return 1; }
  remote changed status --json
  rc_is changed 1 && [[ $(wc -l <"$tmp/changed.err") == 1 ]] || { shows changed; return 1; }
  grep -qF "presents another TLS certificate, $fp, than the one pinned for it, $old_fp, in $HOME/.config/tpufleet/known_servers" \
    "$tmp/changed.err" && grep -qF "run once with --server-fingerprint $fp to pin it" "$tmp/changed.err" ||
    { shows changed; return 1; }
  [[ ! -s $tmp/changed.out ]] || { shows changed; return 1; }
}
check "serve with another certificate: refused, naming both fingerprints and the file" changed_refused
accepted() {
  remote accept --server-fingerprint "$fp" status --json
  rc_is accept 0 && grep -q "replaced the pinned TLS certificate" "$tmp/accept.err" || { shows accept; return 1; }
  grep -qF "${url#https://} $fp" "$HOME/.config/tpufleet/known_servers" || return 1
  remote again status --json
  rc_is again 0 && [[ ! -s $tmp/again.err ]] || { shows again; return 1; }
}
check "--server-fingerprint with the new one, as the message says: taken and pinned" accepted
pre_pinned() {
  HOME=$tmp/fresh-home remote pre --server-fingerprint "$old_fp" jobs
  rc_is pre 1 && grep -q "presents another TLS certificate" "$tmp/pre.err" || { shows pre; return 1; }
  [[ ! -e $tmp/fresh-home/.config/tpufleet/known_servers ]] || { echo "pinned a refused one"; return 1; }
  HOME=$tmp/fresh-home remote pre2 --server-fingerprint "$fp" jobs
  rc_is pre2 0 && grep -q "sleeper" "$tmp/pre2.out" && grep -q "(as --server-fingerprint says)" "$tmp/pre2.err" ||
    { shows pre2; return 1; }
}
check "a fingerprint given ahead of first use: the wrong one refused, the right one used" pre_pinned

# ---- 5. a hostile local user
hostile() {
  local f
  # Let nobody through the directories: only the files' own modes stand in the way.
  chmod o+x "$tmp" "$HOME" "$HOME/.config" "$HOME/.config/tpufleet" "$state" "$state/serve" || return 1
  for f in "$state/serve/tls.key" "$state/serve/token" "$HOME/.config/tpufleet/known_servers"; do
    if runuser -u nobody -- cat "$f" >/dev/null 2>"$tmp/nobody.err"; then
      echo "nobody read $f"; return 1
    fi
    grep -q "Permission denied" "$tmp/nobody.err" || { cat "$tmp/nobody.err"; return 1; }
  done
  chmod o-x "$tmp" "$HOME" "$HOME/.config" "$HOME/.config/tpufleet" "$state" "$state/serve"
}
check "nobody, let through the directories, reads neither key, nor token, nor pins" hostile

# ---- 6. no plain HTTP off loopback
plain_refused() {
  tf_run plain serve "$tmp/rn.yaml" --listen 0.0.0.0:0 --plain-http --once
  rc_is plain 2 && grep -q "^tpufleet: --plain-http is for a loopback address only" "$tmp/plain.err" ||
    { shows plain; return 1; }
}
check "--plain-http on a non-loopback address is refused" plain_refused

ends() {
  stop_serve || return 1
  tf down --all --yes >"$tmp/down.txt" 2>&1 || { cat "$tmp/down.txt"; return 1; }
}
check "serve stops on SIGTERM, and down removes rn" ends

echo "1..$n"
[[ $failed -eq 0 ]]
