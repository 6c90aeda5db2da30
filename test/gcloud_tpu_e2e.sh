#!/usr/bin/env bash
# End to end: Google's gcloud drives the emulator's Cloud TPU API as a user following the
# guides does (issue 15): `compute tpus tpu-vm` create (GA and alpha tracks), list,
# describe, stop/start, update of labels and delete, and `queued-resources` create
# (spot), list, describe and delete --force. Every step is checked by what gcloud
# prints: --format=json where a user would script it, the human tables of list and
# describe too. ssh/scp and disks are other scripts'.
# Prints "ok N - ..." or "not ok N - ..." per check and exits 1 if any failed.
# Usage: gcloud_tpu_e2e.sh path/to/tpufleet. Exit 77 (skipped) when gcloud is not
# installed or when not root (the emulator's workers are network namespaces).
set -uo pipefail
source "$(dirname "$0")/e2e_lib.sh"
source "$(dirname "$0")/gcloud_lib.sh"
bin=$(realpath "$1")
gcloud_require
e2e_require jq curl timeout
e2e_home gtpu
trap 'gcloud_end; e2e_end' EXIT
trap 'exit 143' TERM INT HUP  # so that a ctest timeout still cleans up

check_emulator_starts
gcloud_env
z=(--zone="$zone")
z5=(--zone=us-west4-a)  # where v5e is offered
tpus=(compute tpus)
alpha=(alpha compute tpus)

# describe_until NAME ZONE-ARG JQ [SECONDS]: polls `tpu-vm describe NAME --format=json`
# (GA) until JQ is true of it, the last answer in $tmp/poll.{out,err,rc}.
describe_until() {
  local deadline=$((SECONDS + ${4:-60}))
  until gc poll "${tpus[@]}" tpu-vm describe "$1" "$2" --format=json && gc_jq poll "$3" >/dev/null; do
    ((SECONDS < deadline)) || { gc_jq poll "$3"; return 1; }
    sleep 0.5
  done
}
# qr_until NAME JQ [SECONDS]: the same for `queued-resources describe` (alpha).
qr_until() {
  local deadline=$((SECONDS + ${3:-60}))
  until gc qpoll "${alpha[@]}" queued-resources describe "$1" "${z[@]}" --format=json &&
    gc_jq qpoll "$2" >/dev/null; do
    ((SECONDS < deadline)) || { gc_jq qpoll "$2"; return 1; }
    sleep 0.5
  done
}

# ---------------------------------------------------------------------------------
note "create on the GA track (v2) and on the alpha track (v2alpha1, with an alpha field)"
gc create_ga "${tpus[@]}" tpu-vm create ga1 "${z[@]}" --accelerator-type=v4-8 \
  --version=tpu-ubuntu2204-base --labels=team=infra
check "tpu-vm create (GA) of a v4-8 says it created ga1" gc_prints create_ga 'Created tpu \[ga1\]' err
gc create_alpha "${alpha[@]}" tpu-vm create al1 "${z5[@]}" --accelerator-type=v5litepod-4 \
  --version=v2-alpha-tpuv5-lite --autocheckpoint-enabled
check "alpha tpu-vm create of a v5litepod-4 with --autocheckpoint-enabled says it created al1" \
  gc_prints create_alpha 'Created tpu \[al1\]' err

gc list_json "${tpus[@]}" tpu-vm list "${z[@]}" --format=json
check "list --format=json has ga1 READY, a v4-8" gc_jq list_json \
  '[.[] | select(.name | endswith("/nodes/ga1"))] | length == 1 and .[0].state == "READY" and .[0].acceleratorType == "v4-8"'
gc list_human "${tpus[@]}" tpu-vm list "${z[@]}"
check "list (the table a user reads) shows ga1: zone, v4-8, V4, 2x2x1, READY" \
  gc_prints list_human '^ga1 +us-central2-b +v4-8 +V4 +2x2x1 .* READY$'
gc list_alpha "${alpha[@]}" tpu-vm list "${z5[@]}"
check "alpha list shows al1: v5litepod-4, V5LITE_POD, READY" \
  gc_prints list_alpha '^al1 +us-west4-a +v5litepod-4 +V5LITE_POD .* READY$'

gc describe_ga "${tpus[@]}" tpu-vm describe ga1 "${z[@]}" --format=json
check "describe --format=json: state, acceleratorType, runtimeVersion, labels, apiVersion V2" \
  gc_jq describe_ga '.state == "READY" and .acceleratorType == "v4-8" and
    .runtimeVersion == "tpu-ubuntu2204-base" and .labels.team == "infra" and .apiVersion == "V2"'
gc describe_alpha "${alpha[@]}" tpu-vm describe al1 "${z5[@]}" --format=json
check "alpha describe --format=json: READY, v5litepod-4, autocheckpointEnabled, apiVersion V2_ALPHA1" \
  gc_jq describe_alpha '.state == "READY" and .acceleratorType == "v5litepod-4" and
    .autocheckpointEnabled == true and .apiVersion == "V2_ALPHA1" and
    .schedulingConfig.provisioningModel == "STANDARD"'
gc describe_alpha_human "${alpha[@]}" tpu-vm describe al1 "${z5[@]}"
check "alpha describe (as a user reads it) shows the state, the type and the alpha field" eval \
  'gc_prints describe_alpha_human "^state: READY$" && gc_prints describe_alpha_human "^acceleratorType: v5litepod-4$" &&
   gc_prints describe_alpha_human "^autocheckpointEnabled: true$"'
gc describe_al1_ga "${tpus[@]}" tpu-vm describe al1 "${z5[@]}" --format=json
check "the GA track's describe of al1 has no alpha field (v2 has none)" gc_jq describe_al1_ga \
  '.state == "READY" and (has("autocheckpointEnabled") | not) and (.schedulingConfig | has("provisioningModel") | not)'

# ---------------------------------------------------------------------------------
note "stop and start of a single-host node, an update of labels (alpha track)"
gc stop "${alpha[@]}" tpu-vm stop al1 "${z5[@]}" --format=json
check "alpha tpu-vm stop prints its done operation, the node STOPPED" gc_jq stop \
  '.done and .response.state == "STOPPED"'
gc stopped "${tpus[@]}" tpu-vm describe al1 "${z5[@]}" --format='value(state)'
check "describe says STOPPED" gc_prints stopped '^STOPPED$'
gc start "${alpha[@]}" tpu-vm start al1 "${z5[@]}" --format=json
check "alpha tpu-vm start prints the node READY, its alpha field kept" gc_jq start \
  '.done and .response.state == "READY" and .response.autocheckpointEnabled == true'
gc stop_ga "${tpus[@]}" tpu-vm stop ga1 "${z[@]}"
check "GA tpu-vm stop of ga1 (a v4-8 is one host) exits 0" gc_ok stop_ga
gc start_ga "${tpus[@]}" tpu-vm start ga1 "${z[@]}"
check "GA tpu-vm start of ga1 exits 0" gc_ok start_ga
gc update "${alpha[@]}" tpu-vm update ga1 "${z[@]}" --update-labels=env=dev
check "alpha tpu-vm update --update-labels says it updated ga1" gc_prints update 'Updated tpu \[ga1\]' err
gc updated "${tpus[@]}" tpu-vm describe ga1 "${z[@]}" --format=json
check "describe shows the new label beside the old" gc_jq updated \
  '.labels == {"team": "infra", "env": "dev"} and .state == "READY"'

# ---------------------------------------------------------------------------------
note "a queued spot resource (alpha track): create, list, describe, reset, delete --force"
gc qr_create "${alpha[@]}" queued-resources create qr1 "${z[@]}" --node-id=qn1 \
  --accelerator-type=v4-8 --runtime-version=tpu-ubuntu2204-base --spot
check "alpha queued-resources create --spot exits 0" gc_ok qr_create
check "it becomes ACTIVE, spot" qr_until qr1 '.state.state == "ACTIVE" and .spot == {}'
gc qr_list "${alpha[@]}" queued-resources list "${z[@]}"
check "queued-resources list (the table) shows qr1 with 1 node, v4-8, ACTIVE" \
  gc_prints qr_list '^qr1 +us-central2-b +1 +v4-8 .*ACTIVE$'
gc qn1 "${tpus[@]}" tpu-vm describe qn1 "${z[@]}" --format=json
check "its node qn1 is READY, spot, and names its queued resource" gc_jq qn1 \
  '.state == "READY" and .schedulingConfig.spot == true and (.queuedResource | endswith("/queuedResources/qr1"))'
gc qr_describe_ga "${tpus[@]}" queued-resources describe qr1 "${z[@]}" --format=json
check "the GA describe of qr1 has no alpha field (provisioningModel)" gc_jq qr_describe_ga \
  '.state.state == "ACTIVE" and (has("provisioningModel") | not)'

gc qn1_delete "${tpus[@]}" tpu-vm delete qn1 "${z[@]}" --quiet
check "deleting its node by hand exits 0" gc_ok qn1_delete
check "the queued resource is then SUSPENDED" qr_until qr1 '.state.state == "SUSPENDED"'
gc qr_reset "${alpha[@]}" queued-resources reset qr1 "${z[@]}"
check "alpha queued-resources reset exits 0" gc_ok qr_reset
check "and it is ACTIVE again, with a new qn1" qr_until qr1 '.state.state == "ACTIVE"'

gc qr_delete_plain "${alpha[@]}" queued-resources delete qr1 "${z[@]}" --quiet
check "queued-resources delete without --force is refused while qn1 exists" \
  gc_fails qr_delete_plain 'still has 1 node'
gc qr_delete "${alpha[@]}" queued-resources delete qr1 "${z[@]}" --force --quiet
check "queued-resources delete --force (gcloud sends force=True) says deleted" \
  gc_prints qr_delete 'Deleted queued_resource \[qr1\]' err
gc qr_gone "${alpha[@]}" queued-resources list "${z[@]}" --format=json
check "queued-resources list is empty" gc_jq qr_gone 'length == 0'

# ---------------------------------------------------------------------------------
note "delete, on both tracks"
gc delete_ga "${tpus[@]}" tpu-vm delete ga1 "${z[@]}" --quiet
check "tpu-vm delete ga1 says deleted" gc_prints delete_ga 'Deleted tpu \[ga1\]' err
gc delete_alpha "${alpha[@]}" tpu-vm delete al1 "${z5[@]}" --quiet
check "alpha tpu-vm delete al1 says deleted" gc_prints delete_alpha 'Deleted tpu \[al1\]' err
gc describe_gone "${tpus[@]}" tpu-vm describe ga1 "${z[@]}"
check "describe of ga1 is NOT_FOUND" gc_fails describe_gone 'NOT_FOUND|not found'
list_empty() {
  gc empty "${tpus[@]}" tpu-vm list "${z[@]}" --format=json && gc_jq empty 'length == 0'
}
check "list is empty once qn1's delete is done" wait_for 60 list_empty

exit $((failed > 0))
