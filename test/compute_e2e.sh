#!/usr/bin/env bash
# End to end: project-wide SSH keys through the emulator's Compute Engine API v1 (issue
# 15), with curl only (no gcloud), against `tpufleet emulator` with real worker hosts:
#   a. two nodes (a v4-32 of 4 workers and a v4-8) and a v4-8 whose metadata has
#      block-project-ssh-keys=TRUE (and an instance key for dave) become READY;
#   b. projects.get shows the common instance metadata and its fingerprint; a key for
#      carol set with setCommonInstanceMetadata (a global operation, waited for with
#      operations.wait) lets carol log in to every worker of both nodes, host keys
#      pinned from getGuestAttributes, and every worker serves it under
#      project/attributes/ssh-keys;
#   c. the blocking node serves it too but makes no carol: she cannot log in there, and
#      dave (its instance key) still can;
#   d. a stale fingerprint is refused with 412 conditionNotMet and changes nothing;
#   e. a node made after the set gets the key at boot;
#   f. removing the key takes it away from every worker at once;
#   and emulator stop leaves no process, namespace, sshd or link of this run.
# The token goes to curl in a header read from a file descriptor (e2e_lib.sh ecurl),
# never in argv. Prints "ok N - ..." or "not ok N - ..." per check and exits 1 if any
# failed. Usage: compute_e2e.sh path/to/tpufleet. Exit 77 (skipped) when not root or
# when a tool it needs is missing.
set -uo pipefail
source "$(dirname "$0")/e2e_lib.sh"
bin=$(realpath "$1")
e2e_require jq curl ssh ssh-keygen timeout ip pgrep
e2e_home compute
trap e2e_end EXIT
trap 'exit 143' TERM INT HUP  # so that a ctest timeout still cleans up

track_hosts_begin
check_emulator_starts
tpu=${ep}v2/projects/$project/locations/$zone
compute=${ep}compute/v1/projects/$project

# post URL JSON: the emulator's answer to a POST of JSON.
post() { ecurl -s --max-time 40 -X POST -H 'Content-Type: application/json' -d "$2" "$1"; }

# create_node ID TYPE [METADATA_JSON]: starts creating node ID.
create_node() {
  post "$tpu/nodes?nodeId=$1" "{\"acceleratorType\":\"$2\",\"runtimeVersion\":\"tpu-ubuntu2204-base\",\"metadata\":${3:-{\}}}" >"$tmp/create-$1.json"
  jq -e '.name' "$tmp/create-$1.json" >/dev/null || { cat "$tmp/create-$1.json"; return 1; }
}
# ready ID...: every node ID is READY within 120 s; its workers' addresses go to
# $tmp/ID.addrs and their host keys (getGuestAttributes) to $tmp/known_hosts.
ready() {
  local id
  for id in "$@"; do
    wait_for 120 eval "api /v2/projects/$project/locations/$zone/nodes/$id | jq -e '.state == \"READY\"' >/dev/null" ||
      { api "/v2/projects/$project/locations/$zone/nodes/$id"; return 1; }
    api "/v2/projects/$project/locations/$zone/nodes/$id" | jq -r '.networkEndpoints[].ipAddress' >"$tmp/$id.addrs"
    post "$tpu/nodes/$id:getGuestAttributes" '{"workerIds":[""]}' >"$tmp/$id.ga.json"
    jq -r '.guestAttributes[] | select(.queryValue.items != null) as $g
           | $g.queryValue.items[] | select(.key == "ssh-ed25519") | .value' "$tmp/$id.ga.json" >"$tmp/$id.hostkeys"
    paste -d' ' "$tmp/$id.addrs" <(sed 's/^/ssh-ed25519 /' "$tmp/$id.hostkeys") >>"$tmp/known_hosts"
    [[ $(wc -l <"$tmp/$id.addrs") -ge 1 && $(wc -l <"$tmp/$id.addrs") == $(wc -l <"$tmp/$id.hostkeys") ]] ||
      { echo "addresses and host keys of $id differ:"; cat "$tmp/$id.addrs" "$tmp/$id.ga.json"; return 1; }
  done
}
# ssh_as USER ADDRESS COMMAND...: runs COMMAND on the worker at ADDRESS as USER with USER's
# key, the host key pinned.
ssh_as() {
  local user=$1 addr=$2
  shift 2
  timeout 30 ssh -i "$tmp/$user" -o UserKnownHostsFile="$tmp/known_hosts" \
    -o StrictHostKeyChecking=yes -o BatchMode=yes -o ConnectTimeout=5 -o LogLevel=ERROR \
    "$user@$addr" "$@"
}
for u in carol dave; do
  ssh-keygen -q -t ed25519 -N '' -C "$u" -f "$tmp/$u"
done
carol_entry="carol:$(cut -d' ' -f1,2 "$tmp/carol.pub") carol"
dave_entry="dave:$(cut -d' ' -f1,2 "$tmp/dave.pub") dave"
: >"$tmp/known_hosts"

# ---- a ------------------------------------------------------------------------------
make_nodes() {
  create_node pod v4-32 && create_node solo v4-8 &&
    create_node closed v4-8 "{\"block-project-ssh-keys\":\"TRUE\",\"ssh-keys\":\"$dave_entry\"}" &&
    ready pod solo closed
}
check "a v4-32, a v4-8 and a v4-8 that blocks project keys become READY" make_nodes
remember_hosts

# ---- b ------------------------------------------------------------------------------
fingerprint() { api "/compute/v1/projects/$project" | jq -r '.commonInstanceMetadata.fingerprint'; }
# set_project_keys NAME ITEMS_JSON [FINGERPRINT]: setCommonInstanceMetadata, its answer in
# $tmp/NAME.json, then operations.wait until the operation is DONE (its last state in
# $tmp/NAME.done.json).
set_project_keys() {
  local name=$1 fp=${3:-$(fingerprint)}
  post "$compute/setCommonInstanceMetadata" "{\"fingerprint\":\"$fp\",\"items\":$2}" >"$tmp/$name.json"
  jq -e '.kind == "compute#operation" and .operationType == "compute.projects.setCommonInstanceMetadata"' \
    "$tmp/$name.json" >/dev/null || { cat "$tmp/$name.json"; return 1; }
  local op
  op=$(jq -r .name "$tmp/$name.json")
  for _ in 1 2 3 4 5 6; do
    post "$compute/global/operations/$op/wait" '' >"$tmp/$name.done.json"
    jq -e '.status == "DONE"' "$tmp/$name.done.json" >/dev/null && break
  done
  jq -e '.status == "DONE" and (.error == null)' "$tmp/$name.done.json" >/dev/null ||
    { cat "$tmp/$name.done.json"; return 1; }
}
project_shows_metadata() {
  api "/compute/v1/projects/$project" >"$tmp/project.json"
  jq -e --arg p "$project" '.kind == "compute#project" and .name == $p
    and (.commonInstanceMetadata.fingerprint | length) > 0
    and .selfLink == "'"$compute"'"' "$tmp/project.json" >/dev/null || { cat "$tmp/project.json"; return 1; }
}
check "projects.get shows the project, its selfLink on this endpoint and a metadata fingerprint" \
  project_shows_metadata

items_with_carol=$(jq -cn --arg k "$carol_entry" '[{key: "ssh-keys", value: $k}, {key: "enable-oslogin", value: "FALSE"}]')
check "setCommonInstanceMetadata with carol's key: a global operation, DONE through operations.wait" \
  set_project_keys set "$items_with_carol"

# on_every NODE USER WANT_PREFIX: USER logs in to every worker of NODE, each saying who
# it is and which worker it is (its hostname ends -w-N).
on_every() {
  local node=$1 user=$2 i=0 addr out
  while read -r addr; do
    out=$(ssh_as "$user" "$addr" 'id -un; hostname; curl -s -H "Metadata-Flavor: Google" http://169.254.169.254/computeMetadata/v1/project/attributes/ssh-keys') ||
      { echo "$user could not log in to worker $i of $node ($addr): $out"; return 1; }
    mapfile -t lines <<<"$out"
    [[ ${lines[0]} == "$user" && ${lines[1]} == t1v-n-*-w-$i && ${lines[2]} == "$carol_entry" ]] ||
      { echo "worker $i of $node said: $out"; return 1; }
    i=$((i + 1))
  done <"$tmp/$node.addrs"
  [[ $i -ge 1 ]]
}
check "carol logs in to the 4 workers of the v4-32, each serving the project's key" on_every pod carol
check "carol logs in to the v4-8" on_every solo carol

# ---- c ------------------------------------------------------------------------------
blocked() {
  local addr out
  addr=$(head -1 "$tmp/closed.addrs")
  if out=$(ssh_as carol "$addr" true 2>&1); then
    echo "carol logged in to the node that blocks project keys"
    return 1
  fi
  grep -q 'Permission denied' <<<"$out" || { echo "carol's refusal: $out"; return 1; }
  out=$(ssh_as dave "$addr" 'id -un; getent passwd carol || echo no-carol; curl -s -H "Metadata-Flavor: Google" http://169.254.169.254/computeMetadata/v1/project/attributes/ssh-keys') ||
    { echo "dave (the node's own key) could not log in: $out"; return 1; }
  [[ $out == "dave"$'\n'"no-carol"$'\n'"$carol_entry" ]] || { echo "dave's worker said: $out"; return 1; }
}
check "block-project-ssh-keys: the node serves the project's key but carol has no account; dave logs in" \
  blocked

# ---- d ------------------------------------------------------------------------------
stale_refused() {
  local code
  code=$(ecurl -s -o "$tmp/stale.json" -w '%{http_code}' -X POST -H 'Content-Type: application/json' \
    -d '{"fingerprint":"AAAAAAAAAAA=","items":[]}' "$compute/setCommonInstanceMetadata")
  [[ $code == 412 ]] && jq -e '.error.code == 412 and .error.errors[0].reason == "conditionNotMet"
    and .error.errors[0].domain == "global"' "$tmp/stale.json" >/dev/null ||
    { echo "HTTP $code: $(cat "$tmp/stale.json")"; return 1; }
  api "/compute/v1/projects/$project" | jq -e --arg k "$carol_entry" \
    '.commonInstanceMetadata.items[] | select(.key == "ssh-keys") | .value == $k' >/dev/null
}
check "a stale fingerprint gets 412 conditionNotMet in Compute's envelope and changes nothing" stale_refused

# ---- e ------------------------------------------------------------------------------
late_node() { create_node late v4-8 && ready late && on_every late carol; }
check "a node made after the set gets carol's key at boot" late_node
remember_hosts

# ---- f ------------------------------------------------------------------------------
check "setCommonInstanceMetadata without ssh-keys" set_project_keys unset '[{"key":"enable-oslogin","value":"FALSE"}]'
gone_everywhere() {
  local node addr
  for node in pod solo late; do
    while read -r addr; do
      if ssh_as carol "$addr" true 2>/dev/null; then
        echo "carol still logs in to $node ($addr)"
        return 1
      fi
    done <"$tmp/$node.addrs"
  done
}
check "once removed, carol's key logs in to no worker of any node" gone_everywhere

check "emulator stop leaves no process, namespace, sshd or link of this run" stop_clean
echo "1..$n"
((failed == 0))
