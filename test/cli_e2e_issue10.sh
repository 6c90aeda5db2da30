# Sourced by cli_e2e_test.sh (its helpers: check, run_env, expect_*; $bin, $tmp): the
# issue 10 checks of bounded reads and of state directories that are not ours.
# shellcheck shell=bash

# ---- Issue 10: bounded reads, and a state directory that is not ours ----

# run_bounded SECONDS ARGS...: run, killed after SECONDS and held to 2 GB of address
# space, so a tpufleet that reads without end fails the check instead of the machine.
run_bounded() {
  local limit=$1
  shift
  last_cmd="timeout $limit tpufleet $*"
  set +e
  (ulimit -v 2000000 && timeout "$limit" "$bin" "$@") >"$tmp/out" 2>"$tmp/err"
  code=$?
  set -e
}

check "validate /dev/zero: stops at the 1 MiB limit at once, with one message"
run_bounded 20 validate /dev/zero
expect_code 1
expect_eq err "tpufleet: error: reading the fleet spec: /dev/zero is a character device that gave more than 1 MiB, the most that is read"

check "validate a 4 GiB file: refused by its size, before reading it"
truncate -s 4G "$tmp/huge.yaml"
run_bounded 20 validate "$tmp/huge.yaml"
expect_code 1
expect_eq err "tpufleet: error: reading the fleet spec: $tmp/huge.yaml: the file is 4 GiB; at most 1 MiB is read"
rm -f "$tmp/huge.yaml"

check "a spec through a pipe still works"
run_bounded 20 validate <(cat examples/fleet.yaml)
expect_code 0

check "a state directory others may write is refused, naming its mode"
mkdir -m 700 "$tmp/open-state"
chmod 777 "$tmp/open-state"
run_env TPUFLEET_STATE_DIR="$tmp/open-state" -- status
expect_code 1
expect_has err "tpufleet: error: state directory: $tmp/open-state has mode 0777: its group or others may write it; tpufleet keeps its key and state only in a directory of its own user that no one else may write: remove it, or set TPUFLEET_STATE_DIR to one of yours"
[[ ! -e "$tmp/open-state/state.db" ]] || fail "a state.db was made in it"

check "TPUFLEET_SSH_INCLUDE takes auto, force or off"
run_env TPUFLEET_STATE_DIR="$tmp/state-ok" TPUFLEET_SSH_INCLUDE=always -- status
expect_code 1
expect_eq err 'tpufleet: error: TPUFLEET_SSH_INCLUDE must be auto, force or off, not "always"'

if [[ $(id -u) -eq 0 ]] && command -v runuser >/dev/null && id nobody >/dev/null 2>&1; then
  check "a state directory nobody made before root used it is refused (as the review did it)"
  chmod 711 "$tmp"  # nobody may pass through, to the shared directory below
  mkdir -m 1777 "$tmp/shared"
  runuser -u nobody -- mkdir -m 755 "$tmp/shared/tpufleet"
  run_env TPUFLEET_STATE_DIR="$tmp/shared/tpufleet" -- status
  expect_code 1
  expect_has err "tpufleet: error: state directory: $tmp/shared/tpufleet belongs to nobody (uid $(id -u nobody)), not to root (uid 0), who runs tpufleet;"
  [[ -z $(ls -A "$tmp/shared/tpufleet") ]] || fail "tpufleet wrote into nobody's directory: $(ls -A "$tmp/shared/tpufleet")"

  if command -v python3 >/dev/null; then
    check "a holder socket nobody listens on in that directory is refused, and hears nothing"
    # The forged holder greets as the real one does and prints how many bytes it got.
    runuser -u nobody -- timeout 10 python3 -c '
import socket, sys
s = socket.socket(socket.AF_UNIX)
s.bind(sys.argv[1])
s.listen(1)
print("listening", flush=True)
c, _ = s.accept()
c.sendall(b"TPUFLEET-HOLDER 1\n")
c.settimeout(3)
print("got", len(c.recv(1 << 16)), flush=True)
' "$tmp/shared/tpufleet/holder.sock" >"$tmp/forged.txt" 2>&1 &
    forged=$!
    for _ in $(seq 50); do grep -q listening "$tmp/forged.txt" && break; sleep 0.1; done
    run_env TPUFLEET_STATE_DIR="$tmp/shared/tpufleet" -- holder status
    kill "$forged" 2>/dev/null || true
    wait "$forged" 2>/dev/null || true
    expect_code 1
    expect_has err "tpufleet: error: refusing the connection holder at $tmp/shared/tpufleet/holder.sock: $tmp/shared/tpufleet belongs to nobody"
    ! grep -q "got [1-9]" "$tmp/forged.txt" || fail "the forged holder heard the request: $(cat "$tmp/forged.txt")"
  else
    echo "skip: the forged holder (needs python3)"
  fi
  chmod 700 "$tmp"
else
  echo "skip: the state directory made by nobody (needs root, runuser and a user nobody)"
fi

