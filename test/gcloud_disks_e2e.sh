#!/usr/bin/env bash
# End to end: a lab admin shares a dataset disk with gcloud, as the guides do (issue 15):
# `gcloud compute disks create`, `gcloud compute tpus tpu-vm create` of a v4-8 with the
# disk READ_WRITE (--data-disk) where the admin formats it and writes a file through
# `tpu-vm ssh`, `gcloud alpha compute tpus tpu-vm detach-disk`, then `attach-disk
# --mode=read-only` to that v4-8 and to a v4-16, the file read on every worker of both
# through `tpu-vm ssh --worker=all` and writes refused, `compute disks delete` refused
# while attached; `tpufleet import` then adopts both gcloud-made nodes, disks and all
# (status shows the disk, tpufleet exec sees it on every worker); `detach-disk` from both
# and `compute disks delete`. Every step is checked by what gcloud (or tpufleet) prints.
# Prints "ok N - ..." or "not ok N - ..." per check and exits 1 if any failed.
# Usage: gcloud_disks_e2e.sh path/to/tpufleet. Exit 77 (skipped) when gcloud is not
# installed, when not root, or without loop devices.
set -uo pipefail
source "$(dirname "$0")/e2e_lib.sh"
source "$(dirname "$0")/gcloud_lib.sh"
bin=$(realpath "$1")
gcloud_require
e2e_require jq curl timeout ssh ssh-keygen
if [[ ! -e /dev/loop-control ]] && ! modprobe loop 2>/dev/null; then
  echo "SKIP: the machine has no loop devices (/dev/loop-control): data disks need them"
  exit 77
fi
e2e_home gdisks
trap 'gcloud_end; e2e_end' EXIT
trap 'exit 143' TERM INT HUP  # so that a ctest timeout still cleans up

check_emulator_starts
gcloud_env
z=(--zone="$zone")
tpus=(compute tpus tpu-vm)
alpha=(alpha compute tpus tpu-vm)
ssh_opts=(--ssh-flag=-oConnectTimeout=10 --strict-host-key-checking=no)

gc create_disk compute disks create dataset "${z[@]}" --size=10GB --type=pd-balanced
check "compute disks create says it made a READY 10 GB pd-balanced disk" \
  gc_prints create_disk '^dataset +us-central2-b +10 +pd-balanced +READY'

gc writer "${tpus[@]}" create writer "${z[@]}" --accelerator-type=v4-8 --version=tpu-ubuntu2204-base \
  --data-disk="source=projects/$project/zones/$zone/disks/dataset,mode=read-write"
check "tpu-vm create of a v4-8 with --data-disk mode=read-write" gc_prints writer 'Created tpu \[writer\]' err
gc pod "${tpus[@]}" create pod "${z[@]}" --accelerator-type=v4-16 --version=tpu-ubuntu2204-base
check "tpu-vm create of a v4-16 (2 workers)" gc_prints pod 'Created tpu \[pod\]' err

gc users compute disks describe dataset "${z[@]}" --format=json
check "disks describe: the disk's users are the v4-8's worker" gc_jq users \
  '(.users | length) == 1 and (.users[0] | test("/instances/t1v-n-[0-9a-f]{8}-w-0$"))'

gc write "${tpus[@]}" ssh alice@writer "${z[@]}" "${ssh_opts[@]}" --command='set -e
  sudo mkfs.ext4 -q /dev/sdb; sudo mkdir -p /mnt/disks/dataset
  sudo mount -o discard,defaults /dev/sdb /mnt/disks/dataset
  echo "imagenet shard 0" | sudo tee /mnt/disks/dataset/README >/dev/null
  sudo umount /mnt/disks/dataset; echo written'
check "through tpu-vm ssh, the admin (alice) formats /dev/sdb, mounts it and writes a file" gc_prints write '^written$'

gc in_use compute disks delete dataset "${z[@]}"
check "compute disks delete is refused while the disk is attached" \
  gc_fails in_use 'is already being used by .projects/.*/instances/t1v-n-'

gc detach "${alpha[@]}" detach-disk writer "${z[@]}" --disk=dataset
check "alpha tpu-vm detach-disk from the v4-8" gc_ok detach
gc detach_again "${alpha[@]}" detach-disk writer "${z[@]}" --disk=dataset
check "detach-disk of a disk no longer attached is an error" gc_fails detach_again 'no data disks to detach'

for node in writer pod; do
  gc "attach_$node" "${alpha[@]}" attach-disk "$node" "${z[@]}" --disk=dataset --mode=read-only
  check "alpha tpu-vm attach-disk --mode=read-only to $node" gc_ok "attach_$node"
done
gc users2 compute disks describe dataset "${z[@]}" --format=json
check "the disk's users are the 3 workers of both nodes" gc_jq users2 '(.users | length) == 3'

read_cmd='sudo mkdir -p /mnt/disks/dataset && sudo mount -o ro,noload /dev/sdb /mnt/disks/dataset 2>/dev/null
  echo "$(hostname): $(cat /mnt/disks/dataset/README)"
  sudo touch /mnt/disks/dataset/x 2>&1 | grep -o "Read-only file system"
  sudo umount /mnt/disks/dataset'
for node in writer pod; do
  gc "read_$node" "${tpus[@]}" ssh "alice@$node" "${z[@]}" "${ssh_opts[@]}" --worker=all --command="$read_cmd"
done
read_everywhere() {
  [[ $(grep -c ': imagenet shard 0$' "$tmp/read_writer.out" "$tmp/read_pod.out" | awk -F: '{s += $2} END {print s}') == 3 &&
     $(cat "$tmp/read_writer.out" "$tmp/read_pod.out" | grep -c '^Read-only file system$') == 3 ]] ||
    { shows read_writer; shows read_pod; return 1; }
}
check "tpu-vm ssh --worker=all: every worker of both mounts it, reads the file, cannot write" read_everywhere

adopted() {
  tf_run import import --provider emulator --project "$project" --zones "$zone"
  rc_is import 0 || { shows import; return 1; }
  tf_run status status --json
  rc_is status 0 || { shows status; return 1; }
  jq -e --arg s "projects/$project/zones/$zone/disks/dataset" '[.nodes[] | select(.node == "writer" or .node == "pod")
      | .data_disks == [{disk: "dataset", mode: "read-only", source: $s}]] == [true, true]' \
    "$tmp/status.out" >/dev/null || { shows status; return 1; }
  tf_run exec exec pod writer -- ls /dev/disk/by-id/google-dataset
  rc_is exec 0 && [[ $(grep -c 'google-dataset$' "$tmp/exec.out") == 3 ]] || { shows exec; return 1; }
}
check "tpufleet import adopts both gcloud-made nodes with the disk; exec sees it on their 3 workers" adopted

for node in writer pod; do
  gc "detach_$node" "${alpha[@]}" detach-disk "$node" "${z[@]}" --disk=dataset
  check "alpha tpu-vm detach-disk from $node" gc_ok "detach_$node"
done
gc delete compute disks delete dataset "${z[@]}"
check "compute disks delete, once detached everywhere" gc_prints delete 'Deleted \[.*/disks/dataset\]' err
gc list compute disks list
check "compute disks list shows no disk" gc_prints list 'Listed 0 items' err
echo "1..$n"
((failed == 0))
