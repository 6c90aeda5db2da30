#!/usr/bin/env bash
# End to end: a fleet spec's data disks, attached and mounted by `up` (issue 15), against
# `tpufleet emulator` with real worker hosts and the node agent:
#   a. a blank disk made through the emulator's Compute Engine API (disks insert);
#   b. a v4-8 with it read-write at /data: up formats it (ext4) and mounts it; a file
#      written there through exec;
#   c. that node deleted (the disk is free again), then a v4-32 and a v4-8 with the disk
#      read-only at /data: every worker of both reads the file, and no worker can write
#      there, root included;
#   d. after maintenance (the v4-8's worker reboots on a new address) the agent mounts it
#      again by itself;
#   and down, holder stop and emulator stop leave no process, namespace, sshd, link, loop
#   device or mount of this run.
# Prints "ok N - ..." or "not ok N - ..." per check and exits 1 if any failed.
# Usage: disks_spec_e2e.sh path/to/tpufleet. Exit 77 (skipped) when not root, when a tool
# it needs is missing, or when no tpufleet-agent was built next to tpufleet.
set -uo pipefail
source "$(dirname "$0")/e2e_lib.sh"
bin=$(realpath "$1")
e2e_require jq curl ssh ssh-keygen timeout ip pgrep losetup
e2e_require_agent "$bin"
e2e_home dspec
trap e2e_end EXIT
trap 'exit 143' TERM INT HUP  # so that a ctest timeout still cleans up
disk=projects/$project/zones/$zone/disks/shared

up_spec() {  # up_spec NAME: up of $tmp/NAME.yaml, its output in $tmp/up-NAME.txt
  tf up "$tmp/$1.yaml" --timeout 4m >"$tmp/up-$1.txt" 2>&1 || { cat "$tmp/up-$1.txt"; return 1; }
}
# on_every NODE COMMAND: COMMAND on every worker of NODE, its lines prefixed by worker.
on_every() { tf exec "$1" -- bash -c "$2"; }

track_hosts_begin
loops_before=$(losetup -a | wc -l)

# ---------------------------------------------------------------------------------
note "a. a blank disk, made through the Compute Engine API"
check_emulator_starts
makes_disk() {
  ecurl -s --max-time 20 -X POST -H 'Content-Type: application/json' \
    -d '{"name": "shared", "sizeGb": "10", "type": "pd-balanced"}' \
    "${ep}compute/v1/projects/$project/zones/$zone/disks" >"$tmp/insert.json" &&
    jq -e '.kind == "compute#operation"' "$tmp/insert.json" >/dev/null ||
    { cat "$tmp/insert.json"; return 1; }
  ready() { [[ $(api "compute/v1/projects/$project/zones/$zone/disks/shared" | jq -r .status) == READY ]]; }
  wait_for 30 ready || { api "compute/v1/projects/$project/zones/$zone/disks/shared"; return 1; }
}
check "disks insert makes a 10 GB pd-balanced disk (the smallest, and the type v4 takes) that turns READY" makes_disk

# ---------------------------------------------------------------------------------
note "b. read-write on one node: formatted, mounted, written"
cat >"$tmp/writer.yaml" <<EOF
fleet: dspec
provider: emulator
nodes:
  - name: writer
    type: v4-8
    zones: [$zone]
    data_disks:
      - {source: $disk, mode: read-write, mount: /data}
EOF
check "up attaches the disk read-write and says it mounts it" \
  eval 'up_spec writer && grep -q "writer: agent .*mounting 1 disk on 1 worker" "$tmp/up-writer.txt" ||
        { cat "$tmp/up-writer.txt"; false; }'
remember_hosts
formatted_rw() {
  on_every writer 'findmnt -no FSTYPE,OPTIONS /data' >"$tmp/findmnt.txt" 2>&1 &&
    grep -q 'ext4 *rw' "$tmp/findmnt.txt" || { cat "$tmp/findmnt.txt"; return 1; }
}
check "the worker has an ext4 file system mounted read-write at /data" formatted_rw
check "a file is written to /data through exec" \
  eval 'on_every writer "echo shared-bytes | sudo tee /data/hello >/dev/null && sync"'
check "down writer frees the disk" eval 'tf down writer --yes >"$tmp/down.txt" 2>&1 || { cat "$tmp/down.txt"; false; }'

# ---------------------------------------------------------------------------------
note "c. read-only on a v4-32 and a v4-8: the file on every worker, no writes"
cat >"$tmp/readers.yaml" <<EOF
fleet: dspec
provider: emulator
nodes:
  - name: pod
    type: v4-32
    zones: [$zone]
    data_disks:
      - {source: $disk, mount: /data}
  - name: solo
    type: v4-8
    zones: [$zone]
    data_disks:
      - {source: $disk, mount: /data}
EOF
check "up brings both up with the disk read-only" up_spec readers
remember_hosts
reads_everywhere() {
  local node
  for node in pod solo; do
    on_every "$node" 'cat /data/hello' >"$tmp/read-$node.txt" 2>&1 || { cat "$tmp/read-$node.txt"; return 1; }
  done
  [[ $(grep -c 'shared-bytes' "$tmp/read-pod.txt") == 4 && $(grep -c 'shared-bytes' "$tmp/read-solo.txt") == 1 ]] ||
    { cat "$tmp"/read-*.txt; return 1; }
}
check "every worker of both nodes reads the file the writer wrote (4 + 1)" reads_everywhere
no_writes() {
  local out
  out=$(tf exec pod -- bash -c 'sudo touch /data/x 2>&1 && echo WROTE; findmnt -no OPTIONS /data' 2>&1)
  ! grep -q WROTE <<<"$out" && [[ $(grep -c '^.*ro,' <<<"$out") -ge 4 ]] || { echo "$out"; return 1; }
}
check "no worker can write there, root included; it is mounted ro" no_writes

# ---------------------------------------------------------------------------------
note "d. after maintenance the agent mounts it again by itself"
remounts() {
  tf emulator inject maintenance solo --notice 1s >"$tmp/inject.txt" 2>&1 || { cat "$tmp/inject.txt"; return 1; }
  healthy() { [[ $(api "v2/projects/$project/locations/$zone/nodes/solo" | jq -r '.health // "HEALTHY"') == HEALTHY ]] &&
    [[ $(api "v2/projects/$project/locations/$zone/nodes/solo" | jq -r .state) == READY ]]; }
  sleep 2
  wait_for 120 healthy || return 1
  tf status --refresh >/dev/null 2>&1
  wait_for 60 eval 'tf exec solo -- cat /data/hello 2>/dev/null | grep -q shared-bytes' ||
    { tf exec solo -- bash -c 'findmnt /data; ls /dev/disk/by-id' 2>&1; return 1; }
}
check "after maintenance /data is mounted again on the v4-8 and holds the file" remounts

# ---------------------------------------------------------------------------------
check "down --all" eval 'tf down --all --yes >"$tmp/down.txt" 2>&1 || { cat "$tmp/down.txt"; false; }'
check "holder stop" holder_stops
check "emulator stop leaves no process, namespace, sshd or link of this run" stop_clean
check "no loop device of this run is left" eval '[[ $(losetup -a | wc -l) -le $loops_before ]] || losetup -a'

echo "1..$n"
((failed == 0))
