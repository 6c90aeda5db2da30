#!/usr/bin/env bash
# End to end: a Compute Engine disk shared between TPU nodes (issue 15), with curl only
# (no gcloud, so it runs on CI), against `tpufleet emulator` with real worker hosts:
#   a. disks.insert makes a 10 GB pd-balanced disk (a zone operation, waited for with
#      operations.wait), READY, its backing file sparse in the emulator's state dir;
#   b. a v4-8 made with the disk READ_WRITE, and a v4-16 (2 workers) without, are READY;
#      the disk's users name the v4-8's worker;
#   c. on the v4-8, alice (a key in the node's metadata) formats /dev/sdb with
#      `sudo mkfs.ext4`, mounts it, writes a file and unmounts;
#   d. a disk in use cannot be deleted (400 resourceInUseByAnotherResource);
#   e. detached (a patch of data_disks without it), /dev/sdb is gone from the v4-8;
#   f. a READ_WRITE attach to the multi-host v4-16 is refused; READ_ONLY to both nodes
#      works and the disk's users are their 3 workers;
#   g. every worker of both mounts it, reads the file, and cannot write;
#   i. `tpufleet import` adopts both nodes, disks and all: status and status --json show
#      the disk on each, read-only;
#   h. detached from both, the disk deletes and its file goes, and `status --refresh`
#      shows the nodes without it;
#   and emulator stop leaves no process, namespace, sshd, link or loop device of this run.
# The token goes to curl in a header read from a file descriptor (e2e_lib.sh ecurl),
# never in argv. Prints "ok N - ..." or "not ok N - ..." per check and exits 1 if any
# failed. Usage: disks_e2e.sh path/to/tpufleet. Exit 77 (skipped) when not root, when a
# tool it needs is missing, or when the machine has no loop devices.
set -uo pipefail
source "$(dirname "$0")/e2e_lib.sh"
bin=$(realpath "$1")
e2e_require jq curl ssh ssh-keygen timeout ip pgrep losetup
if [[ ! -e /dev/loop-control ]] && ! modprobe loop 2>/dev/null; then
  echo "SKIP: the machine has no loop devices (/dev/loop-control): data disks need them"
  exit 77
fi
e2e_home disks
trap e2e_end EXIT
trap 'exit 143' TERM INT HUP  # so that a ctest timeout still cleans up

track_hosts_begin
check_emulator_starts
tpu=${ep}v2/projects/$project/locations/$zone
disks=${ep}compute/v1/projects/$project/zones/$zone/disks
source_disk=projects/$project/zones/$zone/disks/data

# send METHOD URL [JSON]: the emulator's answer; its HTTP status in $tmp/code.
send() {
  ecurl -s --max-time 40 -o "$tmp/answer.json" -w '%{http_code}' -X "$1" \
    -H 'Content-Type: application/json' ${3:+-d "$3"} "$2" >"$tmp/code"
  cat "$tmp/answer.json"
}
# compute_done OP_JSON_FILE: waits for the zone operation with operations.wait; DONE
# without error.
compute_done() {
  local op
  op=$(jq -r .name "$1")
  for _ in 1 2 3 4 5 6; do
    send POST "${ep}compute/v1/projects/$project/zones/$zone/operations/$op/wait" "{}" >"$tmp/op.json"
    jq -e '.status == "DONE"' "$tmp/op.json" >/dev/null && break
  done
  jq -e '.status == "DONE" and .error == null' "$tmp/op.json" >/dev/null || { cat "$tmp/op.json"; return 1; }
}
# tpu_done OP_JSON_FILE: the TPU operation ends without error within 120 s.
tpu_done() {
  local name
  name=$(jq -r .name "$1")
  wait_for 120 eval "api /v2/$name | jq -e '.done == true' >/dev/null" || { api "/v2/$name"; return 1; }
  api "/v2/$name" | jq -e '.error == null' >/dev/null || { api "/v2/$name"; return 1; }
}
users_count() { api "/compute/v1/projects/$project/zones/$zone/disks/data" | jq '.users // [] | length'; }

ssh-keygen -q -t ed25519 -N '' -C alice -f "$tmp/alice"
alice_entry="alice:$(cut -d' ' -f1,2 "$tmp/alice.pub") alice"
: >"$tmp/known_hosts"

# make_node ID TYPE DATA_DISKS_JSON: creates node ID with alice's key and waits until READY;
# its workers' addresses go to $tmp/ID.addrs, their host keys to $tmp/known_hosts.
make_node() {
  send POST "$tpu/nodes?nodeId=$1" "$(jq -cn --arg t "$2" --arg k "$alice_entry" --argjson d "$3" \
    '{acceleratorType: $t, runtimeVersion: "tpu-ubuntu2204-base", metadata: {"ssh-keys": $k}, dataDisks: $d}')" \
    >"$tmp/create-$1.json"
  tpu_done "$tmp/create-$1.json" || return 1
  api "/v2/projects/$project/locations/$zone/nodes/$1" | jq -r '.networkEndpoints[].ipAddress' >"$tmp/$1.addrs"
  send POST "$tpu/nodes/$1:getGuestAttributes" '{"workerIds":[""]}' |
    jq -r '.guestAttributes[].queryValue.items[] | select(.key == "ssh-ed25519") | .value' >"$tmp/$1.keys"
  paste -d' ' "$tmp/$1.addrs" <(sed 's/^/ssh-ed25519 /' "$tmp/$1.keys") >>"$tmp/known_hosts"
}
# on ADDRESS COMMAND: runs COMMAND as alice on the worker at ADDRESS, its host key pinned.
on() {
  timeout 60 ssh -i "$tmp/alice" -o UserKnownHostsFile="$tmp/known_hosts" -o StrictHostKeyChecking=yes \
    -o BatchMode=yes -o ConnectTimeout=5 -o LogLevel=ERROR "alice@$1" "$2"
}
# attach NODE DATA_DISKS_JSON: a patch of data_disks (what gcloud's attach-disk and
# detach-disk send), its operation waited for.
attach() {
  send PATCH "$tpu/nodes/$1?updateMask=data_disks" "{\"dataDisks\":$2}" >"$tmp/patch-$1.json"
  [[ $(cat "$tmp/code") == 200 ]] || { cat "$tmp/patch-$1.json"; return 1; }
  tpu_done "$tmp/patch-$1.json"
}

# ---- a ------------------------------------------------------------------------------
make_disk() {
  send POST "$disks" '{"name":"data","sizeGb":"10","type":"pd-balanced"}' >"$tmp/insert.json"
  jq -e '.kind == "compute#operation" and .operationType == "insert"' "$tmp/insert.json" >/dev/null ||
    { cat "$tmp/insert.json"; return 1; }
  compute_done "$tmp/insert.json" || return 1
  api "/compute/v1/projects/$project/zones/$zone/disks/data" |
    jq -e '.status == "READY" and .sizeGb == "10" and (.type | endswith("/diskTypes/pd-balanced"))' >/dev/null || return 1
  local image=$TPUFLEET_EMULATOR_DIR/disks/$project/$zone/data.img
  [[ $(stat -c %s "$image") == $((10 << 30)) && $(stat -c %b "$image") -lt 2048 ]] ||
    { stat "$image"; return 1; }
}
check "disks.insert: a zone operation, then a READY 10 GB disk with a sparse file in the state dir" make_disk

# ---- b ------------------------------------------------------------------------------
rw='[{"sourceDisk":"'$source_disk'","mode":"READ_WRITE"}]'
ro='[{"sourceDisk":"'$source_disk'","mode":"READ_ONLY"}]'
check "a v4-8 made with the disk READ_WRITE and a v4-16 without are READY" \
  eval 'make_node solo v4-8 "$rw" && make_node pod v4-16 "[]"'
remember_hosts
check "the disk's users are the v4-8's one worker" eval '[[ $(users_count) == 1 ]]'

# ---- c ------------------------------------------------------------------------------
write_file() {
  on "$(head -1 "$tmp/solo.addrs")" 'set -e; ls -l /dev/sdb /dev/disk/by-id/google-data >/dev/null
    sudo mkfs.ext4 -q /dev/sdb; sudo mkdir -p /mnt/disks/data
    sudo mount -o discard,defaults /dev/sdb /mnt/disks/data
    echo "shared dataset v1" | sudo tee /mnt/disks/data/README >/dev/null
    sudo umount /mnt/disks/data; echo written'
}
check "alice formats /dev/sdb with mkfs.ext4, mounts it, writes a file and unmounts" write_file

# ---- d ------------------------------------------------------------------------------
in_use() {
  send DELETE "$disks/data" >/dev/null
  [[ $(cat "$tmp/code") == 400 ]] &&
    jq -e '.error.errors[0].reason == "resourceInUseByAnotherResource"
      and (.error.message | test("^The disk resource .projects/.*/disks/data. is already being used by .projects/.*/instances/t1v-n-"))' \
      "$tmp/answer.json" >/dev/null || { cat "$tmp/code" "$tmp/answer.json"; return 1; }
}
check "a disk in use cannot be deleted: 400 resourceInUseByAnotherResource" in_use

# ---- e ------------------------------------------------------------------------------
detached() {
  attach solo '[]' || return 1
  out=$(on "$(head -1 "$tmp/solo.addrs")" 'ls /dev/sdb 2>&1 || echo gone') || return 1
  [[ $out == *gone ]] || { echo "after detach: $out"; return 1; }
}
check "detached (data_disks patched to none), /dev/sdb is gone from the v4-8" detached

# ---- f ------------------------------------------------------------------------------
rw_refused() {
  send PATCH "$tpu/nodes/pod?updateMask=data_disks" "{\"dataDisks\":$rw}" >/dev/null
  [[ $(cat "$tmp/code") == 400 ]] && grep -q 'multi-host TPU must be READ_ONLY' "$tmp/answer.json" ||
    { cat "$tmp/answer.json"; return 1; }
}
check "a READ_WRITE attach to the multi-host v4-16 is refused" rw_refused
check "READ_ONLY to both nodes: the disk's users are their 3 workers" \
  eval 'attach solo "$ro" && attach pod "$ro" && [[ $(users_count) == 3 ]]'

# ---- g ------------------------------------------------------------------------------
read_everywhere() {
  local addr out i=0
  for addr in $(cat "$tmp/solo.addrs" "$tmp/pod.addrs"); do
    out=$(on "$addr" 'sudo mkdir -p /mnt/disks/data && sudo mount -o ro,noload /dev/sdb /mnt/disks/data 2>/dev/null
      cat /mnt/disks/data/README
      sudo touch /mnt/disks/data/new 2>&1 | grep -o "Read-only file system"
      sudo umount /mnt/disks/data') || { echo "worker $addr: $out"; return 1; }
    [[ $out == "shared dataset v1"$'\n'"Read-only file system" ]] || { echo "worker $addr said: $out"; return 1; }
    i=$((i + 1))
  done
  [[ $i == 3 ]]
}
check "every worker of both nodes mounts it, reads the file, and cannot write" read_everywhere

# ---- i ------------------------------------------------------------------------------
# disks_of NODE: NODE's data disks in $tmp/status.json as "name mode source" lines.
disks_of() {
  jq -r --arg n "$1" '.nodes[] | select(.node == $n) | .data_disks[] | "\(.disk) \(.mode) \(.source)"' \
    "$tmp/status.json"
}
imported() {
  tf_run import import --provider emulator --project "$project" --zones "$zone"
  rc_is import 0 || { shows import; return 1; }
  tf_run status status --json
  rc_is status 0 || { shows status; return 1; }
  cp "$tmp/status.out" "$tmp/status.json"
  local node
  for node in solo pod; do
    [[ $(disks_of $node) == "data read-only $source_disk" ]] || { echo "$node:"; shows status; return 1; }
  done
  tf_run table status
  grep -qE "^solo +data +read-only +$source_disk" "$tmp/table.out" &&
    grep -qE "^pod +data +read-only +$source_disk" "$tmp/table.out" || { shows table; return 1; }
}
check "tpufleet import adopts both nodes with the disk: status and status --json show it read-only" imported

# ---- h ------------------------------------------------------------------------------
delete_disk() {
  attach solo '[]' || { echo "detach from solo failed"; return 1; }
  attach pod '[]' || { echo "detach from pod failed"; return 1; }
  send DELETE "$disks/data" >"$tmp/delete.json"
  jq -e '.operationType == "delete"' "$tmp/delete.json" >/dev/null || { cat "$tmp/delete.json"; return 1; }
  compute_done "$tmp/delete.json" || return 1
  send GET "$disks/data" >/dev/null
  [[ $(cat "$tmp/code") == 404 && ! -e $TPUFLEET_EMULATOR_DIR/disks/$project/$zone/data.img ]]
}
check "detached from both, the disk deletes and its file goes" delete_disk
refreshed() {
  tf_run status status --refresh --json
  rc_is status 0 || { shows status; return 1; }
  cp "$tmp/status.out" "$tmp/status.json"
  [[ -z $(disks_of solo)$(disks_of pod) ]] || { shows status; return 1; }
  tf_run table status
  ! grep -q "Data disks" "$tmp/table.out" || { shows table; return 1; }
}
check "status --refresh shows both nodes without the disk" refreshed

check "emulator stop leaves no process, namespace, sshd or link of this run" stop_clean
check "no loop device of this run is left" eval '! losetup -a | grep -qF "$tmp"'
echo "1..$n"
((failed == 0))
