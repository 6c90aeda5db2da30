#!/usr/bin/env bash
# End to end, issue 16's roles as the team server enforces them ("a member cannot see,
# cancel or log into another member's jobs or nodes they are not allowed on, through the
# CLI, the API and SSH"): an emulated fleet of two v4-8, ra and rb; `users add milo
# --nodes ra` and `users add ada --nodes ra --nodes rb` (members); a `serve` over TLS;
# a job of each person's started on ra as that person, through ssh and the node agent.
#   1. CLI: milo's `tpufleet --server URL status` lists ra, not rb; `jobs` his job, not
#      ada's; --json likewise; naming rb is answered as a node that does not exist;
#   2. API (curl with milo's token): /v1/status, /v1/jobs and /v1/events filtered,
#      /metrics 403 permission_denied; a bad token 401;
#   3. SSH: milo cannot log in to rb (no account there); on ra his `tpufleet-agent call`
#      job.list does not list ada's job, job.logs and job.cancel of it are refused, and
#      it still runs afterwards;
#   4. `tpufleet audit` (the operator through the server, and locally) shows milo's
#      allowed and refused requests and the bad token's, as "?"; milo may not read it.
# People's tokens are put in the store as `tpufleet invite` keeps them (the SHA-256 of a
# token chosen here; control/person_tokens.cc); e2e.invite tests the real issuing.
# Everything it starts (serve, the nodes, the emulator) is removed on exit, even on
# failure. Prints "ok N - ..." or "not ok N - ..." per check and exits 1 if any failed.
# Usage: roles_e2e.sh path/to/tpufleet. Exit 77 (skipped) when not root, when a tool it
# needs is missing, or when no tpufleet-agent was built next to tpufleet.
set -uo pipefail
source "$(dirname "$0")/e2e_lib.sh"
bin=$(realpath "$1")
e2e_require jq curl ssh ssh-keygen timeout ip pgrep python3
e2e_require_agent "$bin"
e2e_home roles

serve_e2e_traps

track_hosts_begin
check_emulator_starts
cat >"$tmp/fleet.yaml" <<EOF
fleet: roles
provider: emulator
nodes:
  - name: ra
    type: v4-8
    zones: [$zone]
  - name: rb
    type: v4-8
    zones: [$zone]
EOF
up_fleet() { up_spec "$tmp/fleet.yaml"; }
check "up brings up ra and rb" up_fleet
remember_hosts

# as PERSON ALIAS COMMAND…: COMMAND on worker ALIAS as PERSON with their own key, through
# tpufleet's SSH names (the pinned host keys) but not its key.
as() {
  local person=$1 alias=$2
  shift 2
  timeout 60 ssh -F "$state/ssh/config" -o IdentityFile="$tmp/$person" -o IdentitiesOnly=yes \
    -o BatchMode=yes -o ConnectTimeout=5 -o LogLevel=ERROR -l "$person" "$alias" "$@"
}
# agent_as PERSON NAME REQUEST: the agent's answer on ra to REQUEST (one JSON line), as
# PERSON, in $tmp/NAME.out.
agent_as() {
  as "$1" ra /usr/local/bin/tpufleet-agent call <<<"$3" >"$tmp/$2.out" 2>&1
}
# start_job PERSON ID: a job of PERSON's on ra (sleep), started by PERSON's own call.
start_job() {
  agent_as "$1" "start-$2" \
    "{\"v\":1,\"op\":\"job.start\",\"job\":{\"id\":\"$2\",\"name\":\"$1-sleeps\",\"command\":\"sleep 900\",\"topology\":{\"worker_addresses\":[\"127.0.0.1\"]}}}"
  jq -e '.job.state == "running" or .job.state == "starting"' "$tmp/start-$2.out" >/dev/null ||
    { cat "$tmp/start-$2.out"; return 1; }
}
ssh-keygen -q -t ed25519 -N '' -C milo@laptop -f "$tmp/milo"
ssh-keygen -q -t ed25519 -N '' -C ada@laptop -f "$tmp/ada"
people() {
  tf users add milo --key "$tmp/milo.pub" --nodes ra --spec "$tmp/fleet.yaml" >"$tmp/milo-add.txt" 2>&1 &&
    tf users add ada --key "$tmp/ada.pub" --nodes ra --nodes rb --spec "$tmp/fleet.yaml" \
      >"$tmp/ada-add.txt" 2>&1 || { cat "$tmp/milo-add.txt" "$tmp/ada-add.txt"; return 1; }
}
check "users add milo --nodes ra, ada --nodes ra --nodes rb (members)" people
jobs_started() { start_job ada jadajoba && start_job milo jmilojob; }
check "ada and milo each start a job on ra, as themselves, through the agent" jobs_started

serving() { serve_tls "$tmp/fleet.yaml" serve.log --pass 2; }
check "serve over TLS" serving
url=${url:-https://127.0.0.1:1}
tokens() { person_token milo && person_token ada; }
check "tpufleet invite gives milo and ada each a token" tokens

# ---- 1. the CLI through the server
# remote_as PERSON NAME ARGS…: `tpufleet --server $url ARGS…` with PERSON's token.
remote_as() {
  local person=$1 name=$2
  shift 2
  TPUFLEET_TOKEN=$(cat "$tmp/$person.token") tf_run "$name" --server "$url" "$@"
}
cli_status() {
  remote_as milo status status
  rc_is status 0 && grep -q '^ra ' "$tmp/status.out" && ! grep -q '^rb ' "$tmp/status.out" ||
    { shows status; return 1; }
  remote_as milo status-json status --json
  [[ $(jq -c '[.nodes[].node]' "$tmp/status-json.out") == '["ra"]' ]] || { shows status-json; return 1; }
  remote_as ada status-ada status --json
  [[ $(jq -c '[.nodes[].node]' "$tmp/status-ada.out") == '["ra","rb"]' ]] || { shows status-ada; return 1; }
}
check "milo's status through the server lists ra, not rb (table and --json); ada's both" cli_status
cli_jobs() {
  remote_as milo jobs jobs
  rc_is jobs 0 && grep -q jmilojob "$tmp/jobs.out" && ! grep -q jadajoba "$tmp/jobs.out" ||
    { shows jobs; return 1; }
  remote_as milo jobs-json jobs --json
  [[ $(jq -c '[.jobs[].id]' "$tmp/jobs-json.out") == '["jmilojob"]' ]] || { shows jobs-json; return 1; }
  # The fleet's own view has both.
  TPUFLEET_TOKEN_FILE=$state/serve/token tf_run jobs-all --server "$url" jobs --json
  [[ $(jq -c '[.jobs[].id] | sort' "$tmp/jobs-all.out") == '["jadajoba","jmilojob"]' ]] ||
    { shows jobs-all; return 1; }
}
check "milo's jobs through the server: his, not ada's (table and --json); the operator's both" cli_jobs
cli_hidden() {
  remote_as milo hidden status rb
  remote_as milo unknown status rz
  rc_is hidden 1 && [[ $(sed 's/rb/rz/' "$tmp/hidden.err") == "$(cat "$tmp/unknown.err")" ]] ||
    { shows hidden; shows unknown; return 1; }
  remote_as milo hidden-events events rb
  rc_is hidden-events 1 && grep -q "no node named rb" "$tmp/hidden-events.err" ||
    { shows hidden-events; return 1; }
}
check "milo naming rb is answered as a node that does not exist" cli_hidden

# ---- 2. the API
# get_as TOKEN PATH: the status code, then the body in $tmp/api.out.
get_as() {
  curl -s --max-time 20 --cacert "$state/serve/tls.crt" -o "$tmp/api.out" -w '%{http_code}' \
    -H "Authorization: Bearer $1" "$url$2"
}
api_filtered() {
  local milo code
  milo=$(cat "$tmp/milo.token")
  code=$(get_as "$milo" /v1/status)
  [[ $code == 200 && $(jq -c '[.nodes[].node]' "$tmp/api.out") == '["ra"]' ]] ||
    { echo "$code"; cat "$tmp/api.out"; return 1; }
  code=$(get_as "$milo" /v1/events)
  [[ $code == 200 ]] && jq -e 'length > 0 and all(.[]; .node == "ra" or (.node // "") == "")' \
    "$tmp/api.out" >/dev/null || { echo "$code"; cat "$tmp/api.out"; return 1; }
  code=$(get_as "$milo" /v1/jobs)
  [[ $code == 200 && $(jq -c '.jobs | length' "$tmp/api.out") == 0 ]] || { echo "$code"; cat "$tmp/api.out"; return 1; }
  code=$(get_as "$milo" /metrics)
  [[ $code == 403 && $(jq -r .error.code "$tmp/api.out") == permission_denied ]] ||
    { echo "$code"; cat "$tmp/api.out"; return 1; }
  code=$(get_as tpufleet-person-not-anyones /v1/status)
  [[ $code == 401 ]] || { echo "$code"; cat "$tmp/api.out"; return 1; }
  code=$(get_as "$(cat "$state/serve/token")" /metrics)
  [[ $code == 200 ]] || { echo "operator's /metrics: $code"; return 1; }
}
check "API with milo's token: status and events of ra only, no jobs, /metrics 403; a bad token 401" api_filtered

# ---- 3. SSH
no_login_to_rb() {
  if as milo rb true >"$tmp/rb.txt" 2>&1; then
    echo "milo logged in to rb"
    return 1
  fi
  as ada rb true || { echo "ada cannot log in to rb"; return 1; }
}
check "milo cannot ssh to rb (no account there); ada can" no_login_to_rb
agent_refuses() {
  agent_as milo list '{"v":1,"op":"job.list"}'
  [[ $(jq -c '[.jobs[].id]' "$tmp/list.out") == '["jmilojob"]' ]] || { cat "$tmp/list.out"; return 1; }
  agent_as milo logs '{"v":1,"op":"job.logs","id":"jadajoba"}'
  grep -q PERMISSION_DENIED "$tmp/logs.out" || { cat "$tmp/logs.out"; return 1; }
  agent_as milo cancel '{"v":1,"op":"job.cancel","id":"jadajoba","grace_seconds":1}'
  grep -q PERMISSION_DENIED "$tmp/cancel.out" || { cat "$tmp/cancel.out"; return 1; }
  agent_as ada ada-list '{"v":1,"op":"job.list","ids":["jadajoba"]}'
  [[ $(jq -r '.jobs[0].state' "$tmp/ada-list.out") == running ]] || { cat "$tmp/ada-list.out"; return 1; }
}
check "on ra, milo's agent call: job.list without ada's job, her logs and cancel refused; it still runs" agent_refuses

# ---- 4. the audit log
audited() {
  TPUFLEET_TOKEN_FILE=$state/serve/token tf_run audit --server "$url" audit
  rc_is audit 0 || { shows audit; return 1; }
  grep -Eq '^\S+ +milo +status +ok$' "$tmp/audit.out" &&
    grep -Eq '^\S+ +milo +GET /metrics +refused: 403 permission_denied$' "$tmp/audit.out" &&
    grep -Eq '^\S+ +milo +status rb +exit 1$' "$tmp/audit.out" &&
    grep -Eq '^\S+ +\? +GET /v1/status +unauthenticated$' "$tmp/audit.out" || { shows audit; return 1; }
  ! grep -q "e2e-roles" "$tmp/audit.out" || { echo "a token in the log"; return 1; }
  remote_as milo audit-milo audit
  rc_is audit-milo 1 && grep -q "the audit log is for the admins of every fleet; milo is not one" \
    "$tmp/audit-milo.err" || { shows audit-milo; return 1; }
}
check "audit (the operator through the server) shows milo's allowed and refused calls" audited

ends() {
  tf_run audit-local audit --json  # here, beside the running serve
  rc_is audit-local 0 && jq -e '[.[] | select(.person == "milo" and .outcome == "refused: 403 permission_denied")] | length == 1' \
    "$tmp/audit-local.out" >/dev/null || { shows audit-local; return 1; }
  stop_serve || return 1
  tf down --all --yes >"$tmp/down.txt" 2>&1 || { cat "$tmp/down.txt"; return 1; }
}
check "audit here, beside serve, shows the same log; serve stops on SIGTERM; down removes ra and rb" ends

echo "1..$n"
[[ $failed -eq 0 ]]
