#!/usr/bin/env bash
# End to end, issue 14's bad input "a revoked credential mid-run: a clear message;
# nothing deleted that should not be", as a user meets it: `tpufleet serve` keeps one
# emulated fleet, one v4-8 node `brief` whose ttl (60s) comes due while serve's
# credential is revoked.
#   1. `tpufleet emulator token rotate`: the emulator refuses the old token (401) and
#      writes a new one to STATE/token, which serve takes up by itself (no refusal in
#      its log).
#   2. `tpufleet emulator inject denied --for 10s` (403 PERMISSION_DENIED on every API
#      call, as when the credential's role is taken away): serve's log names the 403,
#      the permission and the credential once, and says when it ended.
#   3. The token file then holds the revoked token again (a client whose credential was
#      revoked): serve's log names the 401 and the emulator's token in one line, said
#      once over many passes; `status --refresh` and `up` say the same; while the ttl comes due,
#      nothing is deleted or made (no delete-requested or create-requested event, the
#      node still listed).
#   4. The new token back in the file: serve says the refusal ended ("no longer: …")
#      and carries on: it deletes `brief` for its ttl, which was due all along.
# Prints "ok N - ..." or "not ok N - ..." per check and exits 1 if any failed.
# Usage: serve_credentials_e2e.sh path/to/tpufleet. Exit 77 (skipped) when not root,
# when a tool it needs is missing, or when no tpufleet-agent was built next to tpufleet.
set -uo pipefail
here=$(dirname "$0")
source "$here/e2e_lib.sh"
bin=$(realpath "$1")
e2e_require jq curl ssh ssh-keygen timeout ip pgrep
e2e_require_agent "$bin"
e2e_home servecred

# Serve's pass here (seconds): short, so that "said once" spans many passes.
readonly pass=2
readonly ttl=60
# How long the credential's role is taken away (the 403), within brief's ttl.
readonly denied_for=10
serve_pid=""
cleanup() {
  stop_serve
  e2e_end
}
trap cleanup EXIT
trap 'exit 143' TERM INT HUP  # so that a ctest timeout still cleans up

log_since() { tail -c +"$(($1 + 1))" "$tmp/serve.log"; }
log_size() { stat -c %s "$tmp/serve.log"; }
# The emulator's node list as the holder of token file $1 sees it: "NAME ID" lines, into
# $tmp/$2.nodes; the HTTP status into $tmp/$2.code.
nodes_as() {
  curl -s --max-time 20 -o "$tmp/$2.json" -w '%{http_code}' \
    -H @<(printf 'Authorization: Bearer %s\n' "$(<"$1")") \
    "${ep}v2/projects/$project/locations/$zone/nodes" >"$tmp/$2.code"
  jq -r '(.nodes // [])[] | "\(.name | sub(".*/"; "")) \(.id)"' "$tmp/$2.json" 2>/dev/null |
    sort >"$tmp/$2.nodes"
}
# ev_count KIND [DETAIL_REGEX]: how many events of KIND the state has.
ev_count() {
  tf events --json >"$tmp/ev.json" 2>/dev/null || return 1
  jq --arg k "$1" --arg d "${2:-}" '(if type == "array" then . else .events end)
    | [.[] | select(.kind == $k and ((.detail // "") | test($d)))] | length' "$tmp/ev.json"
}
# put TOKEN_FILE: the emulator's token file holds what TOKEN_FILE holds, replaced in one
# rename (as the emulator writes it), mode 0600.
put() {
  install -m 600 "$1" "$TPUFLEET_EMULATOR_DIR/token.new" &&
    mv -f "$TPUFLEET_EMULATOR_DIR/token.new" "$TPUFLEET_EMULATOR_DIR/token"
}

track_hosts_begin
check_emulator_starts
cat >"$tmp/cred.yaml" <<EOF
fleet: cred
provider: emulator
nodes:
  - name: brief
    type: v4-8
    zones: [$zone]
    ttl: ${ttl}s
EOF
up_one() {
  tf up "$tmp/cred.yaml" --timeout 3m >"$tmp/up.txt" 2>&1 || { cat "$tmp/up.txt"; return 1; }
  up_at=$SECONDS
}
check "up makes brief (ttl ${ttl}s)" up_one
remember_hosts
up_at=${up_at:-$SECONDS}

"$bin" serve "$tmp/cred.yaml" --listen 127.0.0.1:0 --pass "$pass" >"$tmp/serve.out" 2>"$tmp/serve.log" &
serve_pid=$!
serve_runs() {
  status_says() { tf status >"$tmp/st.txt" 2>&1 && grep -q "^serve: running (pid ${serve_pid}[,)]" "$tmp/st.txt"; }
  wait_for 30 status_says || { cat "$tmp/st.txt"; echo "serve's log:"; cat "$tmp/serve.log"; return 1; }
}
check "serve starts and keeps the fleet" serve_runs

token=$TPUFLEET_EMULATOR_DIR/token
cp -p "$token" "$tmp/revoked.tok"
rotated() {
  local mark
  mark=$(log_size)
  tf emulator token rotate >"$tmp/rotate.txt" 2>&1 || { cat "$tmp/rotate.txt"; return 1; }
  grep -q "401" "$tmp/rotate.txt" || { cat "$tmp/rotate.txt"; return 1; }
  cp -p "$token" "$tmp/new.tok"
  [[ $(stat -c %a "$token") == 600 ]] || { stat "$token"; return 1; }
  ! cmp -s "$tmp/new.tok" "$tmp/revoked.tok" || { echo "the token did not change"; return 1; }
  nodes_as "$tmp/revoked.tok" old && [[ $(<"$tmp/old.code") == 401 ]] ||
    { echo "the old token got $(<"$tmp/old.code"): $(head -c 300 "$tmp/old.json")"; return 1; }
  jq -e '.error.status == "UNAUTHENTICATED"' "$tmp/old.json" >/dev/null || { cat "$tmp/old.json"; return 1; }
  nodes_as "$tmp/new.tok" new && [[ $(<"$tmp/new.code") == 200 ]] && grep -q '^brief ' "$tmp/new.nodes" ||
    { echo "the new token got $(<"$tmp/new.code")"; return 1; }
  # Serve takes the new token up by itself: nothing refused in 3 passes.
  sleep $((3 * pass))
  kill -0 "$serve_pid" || { echo "serve ended"; return 1; }
  ! log_since "$mark" | grep -iE '401|refused|unauth' || { echo "serve's log since:"; log_since "$mark"; return 1; }
}
check "emulator token rotate: the old token gets 401, the new one is in STATE/token (0600) and serve takes it up" rotated

note "the credential's role taken away for ${denied_for}s: emulator inject denied"
denied() {
  local mark began ended
  mark=$(log_size)
  tf emulator inject denied --for "${denied_for}s" >"$tmp/inject.txt" 2>&1 || { cat "$tmp/inject.txt"; return 1; }
  sleep $((denied_for + 3 * pass))
  kill -0 "$serve_pid" || { echo "serve ended"; log_since "$mark"; return 1; }
  # One line when it began (naming the 403, the permission and the credential), one
  # "no longer: " when it ended.
  began=$(log_since "$mark" | grep 'HTTP 403 PERMISSION_DENIED' | grep -vc ' no longer: ')
  ended=$(log_since "$mark" | grep 'HTTP 403 PERMISSION_DENIED' | grep -c ' no longer: ')
  [[ $began == 1 && $ended == 1 ]] || { echo "serve's log since:"; log_since "$mark"; return 1; }
  log_since "$mark" | grep -v ' no longer: ' | grep 'HTTP 403' | grep "Permission 'tpu.nodes.list' denied" |
    grep -qF "the emulator's token" || { echo "serve's log since:"; log_since "$mark"; return 1; }
  note "serve said: $(log_since "$mark" | grep -v ' no longer: ' | grep 'HTTP 403' | cut -c1-300)…"
  nodes_as "$tmp/new.tok" after_denied && grep -q '^brief ' "$tmp/after_denied.nodes" ||
    { echo "brief is gone"; return 1; }
  [[ $(ev_count delete-requested) == 0 ]] || { jq -c . "$tmp/ev.json" | tail -c 2000; return 1; }
}
check "a 403 for ${denied_for}s: serve's log names it once, and that it ended; nothing deleted" denied

note "the token file holds the revoked token (a client whose credential was revoked)"
creates0=$(ev_count create-requested)  # up's
mark=$(log_size)
cp -p "$tmp/new.tok" "$tmp/new.tok.kept"
put "$tmp/revoked.tok"
revoked_t0=$SECONDS
said_once() {
  local said
  # Until brief's ttl is well past (it came due while the credential was revoked), and
  # at least 5 passes.
  sleep $((5 * pass))
  while ((SECONDS < up_at + ttl + 3 * pass)); do sleep 1; done
  kill -0 "$serve_pid" || { echo "serve ended"; log_since "$mark"; return 1; }
  said=$(log_since "$mark" | grep -E '401|refus|denied|unauth')
  [[ $(grep -c . <<<"$said") == 1 ]] || { echo "serve's log since:"; log_since "$mark"; return 1; }
  grep -q 'HTTP 401 UNAUTHENTICATED' <<<"$said" && grep -qF "the emulator's token ($token)" <<<"$said" &&
    grep -q 'token rotate' <<<"$said" || { echo "serve said: $said"; return 1; }
  note "serve said, once in $(((SECONDS - revoked_t0) / pass)) passes: $said"
}
check "serve's log names the 401 and the credential in one line, said once" said_once
nothing_done() {
  nodes_as "$tmp/new.tok.kept" during && grep -q '^brief ' "$tmp/during.nodes" ||
    { echo "brief is gone: $(cat "$tmp/during.json")"; return 1; }
  [[ $(ev_count delete-requested) == 0 && $(ev_count create-requested) == "$creates0" ]] ||
    { jq -c '.' "$tmp/ev.json" | tail -c 3000; return 1; }
}
check "while refused: brief, whose ttl is due, is not deleted, and nothing is made" nothing_done
# Plain `status` answers from the state (serve's records); --refresh asks the cloud.
status_says_401() {
  tf_run st status --refresh
  grep -q 'HTTP 401 UNAUTHENTICATED' "$tmp/st.out" "$tmp/st.err" &&
    grep -qF "the emulator's token" "$tmp/st.out" "$tmp/st.err" || { shows st; return 1; }
  note "status --refresh says: $(grep -h '401' "$tmp/st.out" "$tmp/st.err" | head -1)"
}
check "status --refresh names the 401 and the credential" status_says_401
up_says_401() {
  tf_run upr up "$tmp/cred.yaml" --timeout 1m
  ! rc_is upr 0 && grep -q 'HTTP 401 UNAUTHENTICATED' "$tmp/upr.err" &&
    grep -qF "the emulator's token" "$tmp/upr.err" || { shows upr; return 1; }
  note "up says: $(grep -h '401' "$tmp/upr.err" | head -1)"
  [[ $(ev_count create-requested) == "$creates0" && $(ev_count delete-requested) == 0 ]]
}
check "up fails naming the 401 and the credential, and changes nothing" up_says_401

note "the new token back in the file"
mark=$(log_size)
put "$tmp/new.tok.kept"
resumes() {
  ended() { log_since "$mark" | grep -q '^.*no longer: .*401'; }
  wait_for 30 ended || { echo "serve's log since:"; log_since "$mark"; return 1; }
  deleted_for_ttl() { [[ $(ev_count delete-requested 'reason=ttl') == 1 ]]; }
  wait_for 60 deleted_for_ttl || { echo "serve's log since:"; log_since "$mark"; jq -c . "$tmp/ev.json" | tail -c 2000; return 1; }
}
check "serve says the refusal ended and carries on: it deletes brief for its ttl" resumes

term_ends() {
  stop_serve || { echo "serve exited $?"; tail -c 2000 "$tmp/serve.log"; return 1; }
}
check "SIGTERM ends serve (exit 0)" term_ends
down_all() { tf down --all --yes >"$tmp/down.txt" 2>&1 || { cat "$tmp/down.txt"; return 1; }; }
check "down --all" down_all
tf holder stop >/dev/null 2>&1
check "emulator stop leaves no process, namespace, sshd or link of this run" stop_clean
echo "1..$n"
((failed == 0))
