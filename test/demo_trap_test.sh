#!/usr/bin/env bash
# scripts/demo.sh's clean-up and its wait for PREEMPTED (issue 11, a new user's fix 8),
# with a stand-in for tpufleet that logs each call: the clean-up runs every step even
# when `down` fails (the emulator is stopped, its temporary directory removed), and a
# preemption that never shows ends the demo with a message after its deadline.
# Usage: demo_trap_test.sh path/to/scripts/demo.sh. Exit 77 when not root (the demo's
# emulator part runs only as root).
set -euo pipefail
demo=$(realpath "$1")
if [[ $(id -u) -ne 0 ]]; then
  echo "SKIP: the demo's emulator part, and so its clean-up, runs only as root"
  exit 77
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
# The stand-in: logs its arguments and where the demo keeps its files; fails `validate`
# of the broken spec (as the demo expects), `down`, and whatever $FAIL_ON names.
cat >"$tmp/tpufleet" <<'STUB'
#!/usr/bin/env bash
echo "$* | $TPUFLEET_EMULATOR_DIR" >>"$STUB_LOG"
case "$*" in
  "validate examples/broken/"*|down*) exit 1 ;;
esac
[[ -n ${FAIL_ON:-} && "$*" == $FAIL_ON* ]] && exit 1
exit 0
STUB
chmod +x "$tmp/tpufleet"

check_cleanup() {  # check_cleanup CASE: the clean-up ran in full after down failed
  grep -q "^down --all --yes" "$STUB_LOG" || fail "$1: no down: $(cat "$STUB_LOG")"
  grep -q "^emulator stop" "$STUB_LOG" || fail "$1: a failed down left the emulator running: $(cat "$STUB_LOG")"
  grep -q "^holder stop" "$STUB_LOG" || fail "$1: no holder stop: $(cat "$STUB_LOG")"
  local dir
  dir=$(sed -n 's/^emulator stop | //p' "$STUB_LOG" | head -1)
  [[ -n $dir && ! -e $(dirname "$dir") ]] || fail "$1: the demo's temporary directory is left: $dir"
}

export STUB_LOG=$tmp/a.log
if FAIL_ON="up examples/emulator-fleet.yaml --dry-run" bash "$demo" "$tmp/tpufleet" >/dev/null 2>&1; then
  fail "the demo passed though up failed"
fi
check_cleanup "a failing up"

export STUB_LOG=$tmp/b.log
set +e
TPUFLEET_DEMO_PREEMPT_WAIT=1 timeout 60 bash "$demo" "$tmp/tpufleet" >/dev/null 2>"$tmp/b.err"
rc=$?
set -e
[[ $rc == 1 ]] && grep -q "did not turn PREEMPTED within 1s" "$tmp/b.err" ||
  fail "a preemption that never shows: rc=$rc $(cat "$tmp/b.err")"
check_cleanup "no PREEMPTED"
echo "PASS"
