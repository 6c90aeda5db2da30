#!/usr/bin/env bash
# Runs libFuzzer targets one after another, each for a bounded time, and says which
# failed and with what input. `make fuzz` and CI (.ci/run) call it.
#
# Usage: fuzz/run.sh BUILD_DIR SECONDS NAME...
#   BUILD_DIR/fuzz/NAME_fuzzer runs for SECONDS with the checked-in seeds of
#   fuzz/corpus/NAME (only read) and the dictionary fuzz/NAME.dict. Everything it
#   writes stays under BUILD_DIR/fuzz: the inputs it finds in corpus-run/NAME (kept for
#   the next run), what it prints in NAME.log, and an input that crashed, leaked, hung
#   or ran out of memory in artifacts/NAME/. On a failure the log's end, the input
#   (base64) and the command that replays it are printed.
# Exits 1 when any fuzzer failed; the last line is "fuzz: N passed, N failed".
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)

# One input may take this long before it counts as a hang (the targets take
# milliseconds; the margin covers a loaded CI machine).
readonly kInputTimeoutSeconds=30
# Memory a fuzzer may use before an input counts as running out (libFuzzer's default).
readonly kRssLimitMb=2048
# How much of a failing input is printed: a minimized reproducer is far smaller.
readonly kShownInputBytes=4096
# How much of a failed fuzzer's log is printed.
readonly kShownLogLines=60

if (($# < 3)); then
  echo "usage: $0 BUILD_DIR SECONDS NAME..." >&2
  exit 2
fi
build=$(cd "$1" && pwd)
seconds=$2
shift 2

passed=0
failed=0
for name in "$@"; do
  binary=$build/fuzz/${name}_fuzzer
  seeds=$root/fuzz/corpus/$name
  dict=$root/fuzz/$name.dict
  run=$build/fuzz/corpus-run/$name
  artifacts=$build/fuzz/artifacts/$name
  log=$build/fuzz/$name.log
  for need in "$binary" "$seeds" "$dict"; do
    [[ -e $need ]] || { echo "fuzz: $need is missing" >&2; exit 2; }
  done
  mkdir -p "$run" "$artifacts"
  rm -f "$artifacts"/*
  status=0
  "$binary" -max_total_time="$seconds" -timeout="$kInputTimeoutSeconds" \
    -rss_limit_mb="$kRssLimitMb" -print_final_stats=1 -dict="$dict" \
    -artifact_prefix="$artifacts/" "$run" "$seeds" >"$log" 2>&1 || status=$?
  runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -n 1)
  if ((status == 0)); then
    echo "fuzz: ${name}_fuzzer: ok, ${runs:-?} inputs in ${seconds} s (log: $log)"
    passed=$((passed + 1))
    continue
  fi
  failed=$((failed + 1))
  echo "fuzz: ${name}_fuzzer FAILED (exit $status); the end of $log:"
  tail -n "$kShownLogLines" "$log" | sed 's/^/  | /'
  for input in "$artifacts"/*; do
    [[ -f $input ]] || continue
    echo "fuzz: the input ($(stat -c %s "$input") bytes, base64; replay: $binary $input):"
    head -c "$kShownInputBytes" "$input" | base64 | sed 's/^/  /'
  done
done
echo "fuzz: $passed passed, $failed failed"
((failed == 0))
