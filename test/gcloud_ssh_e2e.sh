#!/usr/bin/env bash
# End to end: Google's gcloud logs in to the emulator's workers as a user following the
# guides does (issue 15), against `tpufleet emulator` with real worker hosts:
#   a. `tpu-vm ssh USER@NODE --command` on a v4-8 and on one worker of a v4-32 (4
#      workers): gcloud makes ~/.ssh/google_compute_engine (HOME is this run's), reads
#      the project from the Compute API, adds its key to the node's ssh-keys, records
#      each worker's host key under an alias ending in the last 6 characters of the key
#      the worker's guest attributes publish (so the recorded key must be that one), and
#      the worker answers with its own hostname and the user; later calls use
#      --strict-host-key-checking=yes;
#   b. `--worker=all`: every worker of the v4-32 answers, each with its own hostname;
#   c. `tpu-vm scp --worker=all` puts a file on every worker (its checksum read back on
#      each), and scp from worker 2 brings back that worker's /etc/hostname;
#   d. a project-wide key added with `compute project-info add-metadata
#      --metadata-from-file ssh-keys=FILE` logs in with plain ssh to every worker of both
#      nodes (host keys pinned from gcloud's known-hosts file); with gcloud's own key in
#      the project, `tpu-vm ssh` says so and leaves the node's metadata alone;
#      `remove-metadata --keys=ssh-keys` takes the key away;
#   and emulator stop leaves no process, namespace, sshd or link of this run.
# Prints "ok N - ..." or "not ok N - ..." per check and exits 1 if any failed.
# Usage: gcloud_ssh_e2e.sh path/to/tpufleet. Exit 77 (skipped) when gcloud is not
# installed, when not root (the emulator's workers are network namespaces) or when a
# tool it needs is missing.
set -uo pipefail
source "$(dirname "$0")/e2e_lib.sh"
source "$(dirname "$0")/gcloud_lib.sh"
bin=$(realpath "$1")
gcloud_require
e2e_require jq curl ssh ssh-keygen scp timeout ip pgrep sha256sum
e2e_home gssh
trap 'gcloud_end; e2e_end' EXIT
trap 'exit 143' TERM INT HUP  # so that a ctest timeout still cleans up

track_hosts_begin
check_emulator_starts
gcloud_env
z=(--zone="$zone")
vm=(compute tpus tpu-vm)
known=$HOME/.ssh/google_compute_known_hosts

# ---- a ------------------------------------------------------------------------------
gc create1 "${vm[@]}" create one "${z[@]}" --accelerator-type=v4-8 --version=tpu-ubuntu2204-base
gc create4 "${vm[@]}" create pod "${z[@]}" --accelerator-type=v4-32 --version=tpu-ubuntu2204-base
check "tpu-vm create makes a v4-8 and a v4-32" eval 'gc_ok create1 && gc_ok create4'
remember_hosts

gc ssh1 "${vm[@]}" ssh alice@one "${z[@]}" --command='hostname; id -un'
ssh_one() {
  gc_ok ssh1 || return 1
  mapfile -t out < <(tail -n 2 "$tmp/ssh1.out")  # after what ssh-keygen printed
  [[ ${out[0]} == t1v-n-*-w-0 && ${out[1]} == alice ]] || { shows ssh1; return 1; }
}
check "tpu-vm ssh alice@one --command: the worker says its hostname and alice" ssh_one
gcloud_keys() {
  [[ -s $HOME/.ssh/google_compute_engine && -s $HOME/.ssh/google_compute_engine.pub ]] ||
    { ls -la "$HOME/.ssh"; return 1; }
  [[ $(stat -c %a "$HOME/.ssh/google_compute_engine") == 600 ]] || return 1
  gc meta "${vm[@]}" describe one "${z[@]}" --format=json
  gc_ok meta && jq -e --arg k "$(cut -d' ' -f2 "$HOME/.ssh/google_compute_engine.pub")" \
    '.metadata["ssh-keys"] | contains("alice:") and contains($k)' "$tmp/meta.out" >/dev/null ||
    { shows meta; return 1; }
  # tpu.<node id>-<worker>-<last 6 characters of the guest attributes' host key>, which
  # OpenSSH writes in lower case
  grep -Eq "^tpu\.[0-9]+-0-[^ ]{6} ssh-ed25519 " "$known" &&
    awk '{ if (substr($1, length($1) - 5) != tolower(substr($3, length($3) - 5))) bad = 1 } END { exit bad }' "$known" ||
    { echo "aliases do not end as the keys recorded under them:"; cat "$known"; return 1; }
}
check "gcloud made its key in this HOME, put it in the node's ssh-keys, recorded the guest attributes' host key" \
  gcloud_keys

gc ssh_w1 "${vm[@]}" ssh alice@pod "${z[@]}" --worker=1 --command=hostname
check "tpu-vm ssh --worker=1 reaches worker 1 of the v4-32" gc_prints ssh_w1 '^t1v-n-[0-9a-f]+-w-1$'

# ---- b ------------------------------------------------------------------------------
gc ssh_all "${vm[@]}" ssh alice@pod "${z[@]}" --worker=all --command=hostname
every_worker_answers() {
  gc_ok ssh_all || return 1
  local prefix
  prefix=$(sed -n 's/-w-1$//p' "$tmp/ssh_w1.out")
  [[ $(sort "$tmp/ssh_all.out") == "$(printf "$prefix-w-%s\n" 0 1 2 3)" ]] ||
    { echo "want $prefix-w-0..3:"; shows ssh_all; return 1; }
}
check "tpu-vm ssh --worker=all: each of the 4 workers answers with its own hostname" every_worker_answers

# ---- c ------------------------------------------------------------------------------
head -c 100000 /dev/urandom >"$tmp/payload"
sum=$(sha256sum <"$tmp/payload" | cut -d' ' -f1)
gc scp_all "${vm[@]}" scp "$tmp/payload" alice@pod:payload.bin "${z[@]}" --worker=all --strict-host-key-checking=yes
gc sums "${vm[@]}" ssh alice@pod "${z[@]}" --worker=all --strict-host-key-checking=yes \
  --command='echo $(hostname) $(sha256sum <payload.bin)'
scp_everywhere() {
  gc_ok scp_all && gc_ok sums || return 1
  [[ $(awk '{print $2}' "$tmp/sums.out" | sort -u) == "$sum" && $(awk '{print $1}' "$tmp/sums.out" | sort -u | wc -l) == 4 ]] ||
    { echo "want $sum on 4 workers:"; shows sums; return 1; }
}
check "tpu-vm scp --worker=all: the file is on every worker, checksum intact" scp_everywhere
gc scp_back "${vm[@]}" scp alice@pod:/etc/hostname "$tmp/back" "${z[@]}" --worker=2 --strict-host-key-checking=yes
check "tpu-vm scp from --worker=2 brings back worker 2's /etc/hostname" \
  eval 'gc_ok scp_back && grep -qx "t1v-n-[0-9a-f]*-w-2" "$tmp/back"'

# ---- d ------------------------------------------------------------------------------
ssh-keygen -q -t ed25519 -N '' -C bob -f "$tmp/bob"
echo "bob:$(cut -d' ' -f1,2 "$tmp/bob.pub") bob" >"$tmp/bob.keys"
gc add compute project-info add-metadata --metadata-from-file ssh-keys="$tmp/bob.keys"
gc info compute project-info describe --format=json
bob_in_project() {
  gc_ok add && gc_ok info || return 1
  jq -e --arg k "$(<"$tmp/bob.keys")" '.commonInstanceMetadata.items[]
    | select(.key == "ssh-keys") | .value | rtrimstr("\n") == $k' "$tmp/info.out" >/dev/null ||
    { shows info; return 1; }
}
check "project-info add-metadata puts bob's key in the project's metadata" bob_in_project

# plain_ssh NODE USER KEY COMMAND: OpenSSH's ssh as USER to every worker of NODE, each
# host key pinned from gcloud's known-hosts file (tpu.<node id>-<worker>-… aliases);
# prints "<worker> <exit status> <what it said>" a line, its errors in $tmp/plain.err.
plain_ssh() {
  gc pdesc "${vm[@]}" describe "$1" "${z[@]}" --format=json || return 1
  local id i=0 addr alias out rc
  id=$(jq -r .id "$tmp/pdesc.out")
  : >"$tmp/plain.err"
  for addr in $(jq -r '.networkEndpoints[].ipAddress' "$tmp/pdesc.out"); do
    alias=$(awk -v p="tpu.$id-$i-" 'index($1, p) == 1 {print $1; exit}' "$known")
    [[ -n $alias ]] || { echo "no host key of worker $i of $1 in $known"; return 1; }
    out=$(timeout 30 ssh -i "$3" -o UserKnownHostsFile="$known" -o HostKeyAlias="$alias" \
      -o StrictHostKeyChecking=yes -o BatchMode=yes -o ConnectTimeout=5 -o LogLevel=ERROR \
      "$2@$addr" "$4" 2>>"$tmp/plain.err")
    rc=$?
    echo "$i $rc $out"
    i=$((i + 1))
  done
}
project_key_logs_in() {
  local node want
  for node in one pod; do
    plain_ssh "$node" bob "$tmp/bob" 'echo $(id -un) $(hostname)' >"$tmp/bob.$node" || return 1
    want=$(jq '.networkEndpoints | length' "$tmp/pdesc.out")
    [[ $(awk '$2 == 0 && $3 == "bob" {print $4}' "$tmp/bob.$node" | sort -u | wc -l) == "$want" ]] ||
      { echo "$node: want bob on $want workers:"; cat "$tmp/bob.$node" "$tmp/plain.err"; return 1; }
  done
}
check "bob's project-wide key logs in with plain ssh to every worker of both nodes" project_key_logs_in

gcloud_key_in_project() {
  echo "carol:$(cut -d' ' -f1,2 "$HOME/.ssh/google_compute_engine.pub") carol" >>"$tmp/bob.keys"
  gc add2 compute project-info add-metadata --metadata-from-file ssh-keys="$tmp/bob.keys" || return 1
  gc_ok add2 || return 1
  gc ssh_carol "${vm[@]}" ssh carol@one "${z[@]}" --strict-host-key-checking=yes --command='id -un'
  gc_prints ssh_carol '^carol$' && gc_prints ssh_carol 'SSH key found in project metadata' err || return 1
  gc meta2 "${vm[@]}" describe one "${z[@]}" --format=json
  gc_jq meta2 '.metadata["ssh-keys"] | contains("carol:") | not'
}
check "with gcloud's key in the project, tpu-vm ssh carol@one says so and leaves the node alone" \
  gcloud_key_in_project

gc remove compute project-info remove-metadata --keys=ssh-keys
key_gone() {
  gc_ok remove || return 1
  plain_ssh pod bob "$tmp/bob" true >"$tmp/gone" || return 1
  [[ $(awk '$2 == 255' "$tmp/gone" | wc -l) == 4 && $(grep -c 'Permission denied' "$tmp/plain.err") == 4 ]] ||
    { cat "$tmp/gone" "$tmp/plain.err"; return 1; }
}
check "project-info remove-metadata --keys=ssh-keys: bob logs in nowhere" key_gone

check "emulator stop leaves no process, namespace, sshd or link of this run" stop_clean
echo "1..$n"
((failed == 0))
