#!/usr/bin/env bash
# scripts/demo.sh's clean-up and its waits (issue 11, a new user's fix 8; issue 12), with
# a stand-in for tpufleet that logs each call: the clean-up runs every step even when
# `down` fails (the emulator is stopped, its temporary directory removed), and ends the
# `run` the demo kills and the gang watcher `run` leaves behind, even when the demo fails
# before the kill; a job that prints no step and a preemption that never shows end the
# demo with a message after their deadlines.
# Usage: demo_trap_test.sh path/to/scripts/demo.sh. Exit 77 when not root (the demo's
# emulator part runs only as root).
set -euo pipefail
demo=$(realpath "$1")
if [[ $(id -u) -ne 0 ]]; then
  echo "SKIP: the demo's emulator part, and so its clean-up, runs only as root"
  exit 77
fi
tmp=$(mktemp -d)
# The processes of the demo run whose STUB_LOG is $1 (any run's when empty): those with it
# in their environment.
stub_procs() {
  local p
  for p in /proc/[0-9]*; do
    if { tr '\0' '\n' <"$p/environ"; } 2>/dev/null | grep -qx "STUB_LOG=${1:-$tmp/.*}"; then
      echo "${p#/proc/}"
    fi
  done
}
trap 'stub_procs | xargs -r kill -KILL 2>/dev/null; rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
# The stand-in: logs its arguments and where the demo keeps its files; fails `validate`
# of the broken spec (as the demo expects), `down`, and whatever $FAIL_ON names. Its
# `run` (without --detach) leaves a gang watcher in a session of its own, as tpufleet's
# does, prints two steps of every worker (none with $STUB_SILENT) and follows forever;
# its `logs -f` follows until stopped.
cat >"$tmp/tpufleet" <<'STUB'
#!/usr/bin/env bash
echo "$* | $TPUFLEET_EMULATOR_DIR" >>"$STUB_LOG"
case "$*" in
  "validate examples/broken/"*|down*) exit 1 ;;
  "run demo-pod "*)
    setsid bash -c 'exec -a "tpufleet jobs --watch jstub" sleep 300' </dev/null >/dev/null 2>&1 &
    if [[ -z ${STUB_SILENT:-} ]]; then
      for w in 0 1 2 3 0 1 2 3; do echo "demo-pod/w$w | step 1"; done
    fi
    exec sleep 300 ;;
  "logs "*" -f"*) exec sleep 30 ;;
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
  local p left=""
  for p in $(stub_procs "$STUB_LOG"); do
    left+=" $p($(tr '\0' ' ' <"/proc/$p/cmdline" 2>/dev/null))"
  done
  [[ -z $left ]] || fail "$1: processes of the demo are left:$left"
}

# STUB_LOG is in the demo's environment only, so that stub_procs finds its processes and
# none of this script's.
STUB_LOG=$tmp/a.log
if STUB_LOG=$STUB_LOG FAIL_ON="up examples/emulator-fleet.yaml --dry-run" \
  bash "$demo" "$tmp/tpufleet" >/dev/null 2>&1; then
  fail "the demo passed though up failed"
fi
check_cleanup "a failing up"

STUB_LOG=$tmp/b.log
set +e
STUB_LOG=$STUB_LOG TPUFLEET_DEMO_PREEMPT_WAIT=1 timeout 60 bash "$demo" "$tmp/tpufleet" \
  >/dev/null 2>"$tmp/b.err"
rc=$?
set -e
[[ $rc == 1 ]] && grep -q "did not turn PREEMPTED within 1s" "$tmp/b.err" ||
  fail "a preemption that never shows: rc=$rc $(cat "$tmp/b.err")"
check_cleanup "no PREEMPTED"
grep -q "^run demo-pod --name train -- tpu-standin" "$STUB_LOG" &&
  grep -q "^top demo-pod --once" "$STUB_LOG" && grep -q "^cancel train-2" "$STUB_LOG" ||
  fail "the job steps did not run: $(cat "$STUB_LOG")"

STUB_LOG=$tmp/c.log
set +e
STUB_LOG=$STUB_LOG STUB_SILENT=1 TPUFLEET_DEMO_JOB_WAIT=1 timeout 60 bash "$demo" "$tmp/tpufleet" \
  >/dev/null 2>"$tmp/c.err"
rc=$?
set -e
[[ $rc == 1 ]] && grep -q "printed no step on every worker within 1s" "$tmp/c.err" ||
  fail "a job that prints no step: rc=$rc $(cat "$tmp/c.err")"
check_cleanup "no step: the run still following and its watcher"
echo "PASS"
