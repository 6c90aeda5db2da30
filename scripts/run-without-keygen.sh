#!/bin/bash
# Runs a command with a PATH that has every program of the usual one but ssh, ssh-keygen
# and sshd, and with HOME pointing nowhere: what it passes needs neither OpenSSH nor a
# home of its own (issue 11: control's tests keep the fleet key, the SSH files and the
# forwards in memory, control/testing/fake_seams.h).
set -euo pipefail
bin=$(mktemp -d)
trap 'rm -rf "$bin"' EXIT
for d in /usr/local/sbin /usr/local/bin /usr/sbin /usr/bin /sbin /bin; do
  [ -d "$d" ] || continue
  for p in "$d"/*; do
    name=${p##*/}
    case $name in ssh | ssh-keygen | sshd) continue ;; esac
    [ -x "$p" ] && [ ! -e "$bin/$name" ] && ln -s "$p" "$bin/$name"
  done
done
if PATH=$bin command -v ssh-keygen >/dev/null; then
  echo "ssh-keygen is still on PATH" >&2
  exit 1
fi
# Not exec: the trap removes $bin when the command ends.
rc=0
PATH=$bin HOME=/nonexistent/home "$@" || rc=$?
exit "$rc"
