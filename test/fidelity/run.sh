#!/usr/bin/env bash
# Fidelity harness: starts emulator_fidelity_server (the emulator's HTTP server with fake
# worker hosts) on a free loopback port, then runs fidelity.test.js — Google's own Node.js
# clients — against it, and stops the server by closing its stdin.
# Usage: test/fidelity/run.sh SERVER_BINARY
# Exits 77 (ctest: skipped) when node or the npm packages are not installed.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
server=${1:?usage: run.sh SERVER_BINARY}

if ! command -v node >/dev/null; then
  echo "fidelity: skipped: node is not installed"
  exit 77
fi
if [[ ! -d $here/node_modules/@google-cloud/tpu || ! -d $here/node_modules/googleapis ]]; then
  echo "fidelity: skipped: the Node.js clients are not installed (scripts/setup-deps.sh runs npm ci --prefix test/fidelity)"
  exit 77
fi

work=$(mktemp -d)
pid=
cleanup() {
  exec 3>&- 2>/dev/null || true
  if [[ -n $pid ]] && kill -0 "$pid" 2>/dev/null; then
    kill "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
  fi
  rm -rf "$work"
}
trap cleanup EXIT

mkfifo "$work/stdin"
"$server" --token-out "$work/token" --sa-key-out "$work/sa.json" <"$work/stdin" >"$work/stdout" 2>"$work/stderr" &
pid=$!
exec 3>"$work/stdin"  # the server's stdin: closing fd 3 stops it

port=
for _ in $(seq 100); do
  port=$(sed -n 's/^LISTENING \([0-9][0-9]*\)$/\1/p' "$work/stdout")
  [[ -n $port ]] && break
  if ! kill -0 "$pid" 2>/dev/null; then
    break
  fi
  sleep 0.1
done
if [[ -z $port ]]; then
  echo "fidelity: the server did not start:" >&2
  cat "$work/stderr" >&2
  exit 1
fi

status=0
TPUFLEET_EMULATOR_ENDPOINT=127.0.0.1:$port TPUFLEET_FIDELITY_SA_KEY=$work/sa.json \
  TPUFLEET_EMULATOR_TOKEN_FILE=$work/token \
  node --test --test-reporter=spec "$here/fidelity.test.js" "$here/disks.test.js" || status=$?

exec 3>&-
if ! wait "$pid" && ((status == 0)); then
  status=1
fi
pid=
if [[ -s $work/stderr ]]; then
  echo "--- emulator stderr ---"
  cat "$work/stderr"
fi
exit "$status"
