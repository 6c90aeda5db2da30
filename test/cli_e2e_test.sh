#!/usr/bin/env bash
# End-to-end checks of the built tpufleet binary: what a user sees on stdout and stderr,
# and the exit status. JSON structure is checked in-process by src/cli/cli_test.cc; here
# only a few lines of it (nlohmann's dump(2) puts one key on each line).
#
# Usage: test/cli_e2e_test.sh PATH/TO/tpufleet PROJECT_SOURCE_DIR
# Prints each check; stops at the first mismatch with what was expected and what came.
# shellcheck disable=SC2016  # the expected outputs hold literal dollar signs
set -euo pipefail

if [[ $# -ne 2 ]]; then
  echo "usage: $0 PATH/TO/tpufleet PROJECT_SOURCE_DIR" >&2
  exit 2
fi
bin=$1
src=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# No user catalog override: a HOME without ~/.config/tpufleet, no $TPUFLEET_CATALOG.
export HOME="$tmp/home"
unset TPUFLEET_CATALOG XDG_CONFIG_HOME TPUFLEET_LOG

checks=0
desc=""

# check DESCRIPTION: names the checks that follow.
check() {
  desc=$1
  checks=$((checks + 1))
  echo "check: $desc"
}

# run ARGS...: runs tpufleet; stdout, stderr and the exit status land in $tmp/out,
# $tmp/err and $code.
run() {
  last_cmd="tpufleet $*"
  set +e
  "$bin" "$@" >"$tmp/out" 2>"$tmp/err"
  code=$?
  set -e
}

# run_env VAR=VALUE... -- ARGS...: run with extra environment variables.
run_env() {
  local vars=()
  while [[ $1 != -- ]]; do
    vars+=("$1")
    shift
  done
  shift
  last_cmd="${vars[*]} tpufleet $*"
  set +e
  env "${vars[@]}" "$bin" "$@" >"$tmp/out" 2>"$tmp/err"
  code=$?
  set -e
}

fail() {
  echo "FAIL: $desc"
  echo "  command: $last_cmd"
  echo "  $1"
  echo "--- stdout ---"
  cat "$tmp/out"
  echo "--- stderr ---"
  cat "$tmp/err"
  echo "--------------"
  exit 1
}

# stream NAME: the file holding stdout ("out") or stderr ("err").
stream() { echo "$tmp/$1"; }

expect_code() {
  [[ $code == "$1" ]] || fail "exit status $code, expected $1"
}

# expect_eq out|err TEXT: the whole stream is TEXT (plus a final newline).
expect_eq() {
  if ! diff -u --label expected --label actual <(printf '%s\n' "$2") "$(stream "$1")" \
      >"$tmp/diff"; then
    echo "FAIL: $desc"
    echo "  command: $last_cmd"
    echo "  std$1 differs (- expected, + actual):"
    cat "$tmp/diff"
    exit 1
  fi
}

# expect_empty out|err
expect_empty() {
  [[ ! -s $(stream "$1") ]] || fail "expected nothing on std$1"
}

# expect_has out|err TEXT: some line contains TEXT.
expect_has() {
  grep -qF -- "$2" "$(stream "$1")" || fail "expected std$1 to contain: $2"
}

# expect_lacks out|err TEXT: no line contains TEXT.
expect_lacks() {
  ! grep -qF -- "$2" "$(stream "$1")" || fail "expected std$1 not to contain: $2"
}

# expect_line out|err REGEX: some whole line matches the extended REGEX.
expect_line() {
  grep -qEx -- "$2" "$(stream "$1")" || fail "expected a line of std$1 matching: $2"
}

# expect_nth_line out|err N REGEX: line N (from 1) matches REGEX.
expect_nth_line() {
  local line
  line=$(sed -n "$2p" "$(stream "$1")")
  [[ $line =~ ^$3$ ]] || fail "expected line $2 of std$1 to match: $3; it is: $line"
}

[[ -x $bin ]] || { echo "FAIL: $bin is not an executable"; exit 1; }

# ---- The accelerator facts of the issue, as `catalog TYPE` prints them.

facts=(
  # type          chips per-worker workers
  "v4-32          16    4          4"
  "v5litepod-16   16    4          4"
  "v5litepod-8    8     8          1"
  "v5p-8          4     4          1"
  "v6e-256        256   4          64"
  "v3-8           4     4          1"
)
for f in "${facts[@]}"; do
  read -r type chips per workers <<<"$f"
  vms=$([[ $workers == 1 ]] && echo VM || echo VMs)
  check "catalog $type: $chips chips on $workers worker $vms"
  run catalog "$type"
  expect_code 0
  expect_empty err
  expect_nth_line out 1 "$type  \(.*\)"
  expect_line out "  chips +$chips \($per per worker\)"
  expect_line out "  workers +$workers $vms"

  check "catalog $type --json: \"chips\": $chips, \"workers\": $workers"
  run catalog "$type" --json
  expect_code 0
  expect_line out "  \"type\": \"$type\","
  expect_line out "  \"chips\": $chips,"
  expect_line out "  \"workers\": $workers,"
  expect_line out "  \"chips_per_worker\": $per,"
done

check "the everyday CLI loads none of the emulator's libraries (cpp-httplib stays in tpufleet-emulator)"
if command -v ldd >/dev/null; then
  last_cmd="ldd $bin"
  ldd "$bin" >"$tmp/out" 2>"$tmp/err" || true
  ! grep -q "httplib" "$tmp/out" || fail "tpufleet links cpp-httplib"
  grep -q "libc" "$tmp/out" || fail "ldd named no libraries"
else
  echo "skip: no ldd on this machine"
fi

check "catalog v4-32: topology, host, price and spot"
run catalog v4-32
expect_code 0
expect_nth_line out 1 "v4-32  \(TPU v4, API type V4, topology 2x2x4\)"
expect_line out "  host +407 GiB RAM, 240 vCPUs per worker \(ct4p-hightpu-4t\); 1628 GiB RAM in all"
expect_line out "  on demand +\\\$51\.52 per hour \(16 chips x \\\$3\.22 per chip-hour in us-central2\)"
expect_line out "  spot +\\\$14\.74 \(71% off\) per hour"

check "catalog v6e-256: topology 16x16"
run catalog v6e-256
expect_nth_line out 1 "v6e-256  \(TPU v6e \(Trillium\), API type V6E, topology 16x16\)"

check "catalog v5e-8 resolves the alias to v5litepod-8"
run catalog v5e-8
expect_code 0
expect_nth_line out 1 "v5litepod-8  \(TPU v5e, API type V5LITE_POD, topology 2x4\)"

check "catalog v3-8 and v3-32 have different hosts"
run catalog v3-8
expect_line out "  host +340 GiB RAM, 96 vCPUs per worker \(ct3-hightpu-4t\); 340 GiB RAM in all"
run catalog v3-32
expect_line out "  host +340 GiB RAM, 48 vCPUs per worker \(ct3p-hightpu-4t\); 1360 GiB RAM in all"

check "catalog lists every family"
run catalog
expect_code 0
expect_empty err
for family in v2 v3 v4 "v5litepod (v5e)" v5p v6e; do
  expect_line out "${family//[()]/.} +.*"
done

# ---- Names that are not types.

check "catalog v4-33: the nearest sizes and the valid ones, exit 2"
run catalog v4-33
expect_code 2
expect_empty out
expect_eq err 'tpufleet: "v4-33" is not a v4 slice size (nearest: v4-32, v4-64); the number counts TensorCores and must be one of 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096'

for bad in v7-8 tpu-v4-8 "" v4; do
  check "catalog '$bad': unknown type, exit 2"
  run catalog "$bad"
  expect_code 2
  expect_empty out
  expect_has err "tpufleet: unknown accelerator type \"$bad\""
  expect_has err "types are named v2-N, v3-N, v4-N, v5litepod-N, v5p-N, v6e-N"
done
check "catalog v7-8 suggests real types"
run catalog v7-8
expect_has err "(did you mean v2-8, v3-8 or v4-8?)"

# ---- Commands, flags and help.

check "no arguments: help on stderr, exit 2"
run
expect_code 2
expect_empty out
expect_has err "Usage: tpufleet COMMAND [ARGS] [--json] [--catalog FILE]"

check "help lists every command"
run help
expect_code 0
expect_empty err
commands=(catalog estimate plan validate)
for c in "${commands[@]}" help; do
  expect_line out "  $c +[A-Z].*"
done

for c in "${commands[@]}"; do
  check "$c --help: usage on stdout, exit 0"
  run "$c" --help
  expect_code 0
  expect_empty err
  expect_nth_line out 1 "Usage: tpufleet $c( .*)?"
  expect_line out "  --json +.*"
done

check "misspelled command: did you mean, exit 2"
run catlog
expect_code 2
expect_empty out
expect_eq err "tpufleet: unknown command 'catlog' (did you mean catalog?)
Run 'tpufleet help' for the list of commands."

check "misspelled flag: did you mean --hours, exit 2"
run estimate v4-8 --hour 3
expect_code 2
expect_empty out
expect_eq err "tpufleet: unknown flag '--hour' for 'estimate' (did you mean --hours?)
Run 'tpufleet estimate --help' for usage."

# ---- estimate, worked by hand.

check "estimate v4-32 --hours 10: 16 chips x \$3.22 x 10 h = \$515.20"
run estimate v4-32 --hours 10
expect_code 0
expect_empty err
expect_eq out '1 x v4-32 (16 chips) for 10 h in us-central2:
  on demand  $515.20  ($51.52/h = 16 chips x $3.22 per chip-hour)'

check "estimate --count 3: 3 x \$515.20 = \$1,545.60"
run estimate v4-32 --hours 10 --count 3
expect_code 0
expect_has out '  on demand  $1,545.60  ($154.56/h = 48 chips x $3.22 per chip-hour)'

check "estimate v6e-8 --spot: \$518.40 on demand, spot \$104.49 to \$233.28"
# 8 x 2.70 x 24 = 518.40; x 0.5442/2.70 = 104.49 (79.8% off); x 0.45 = 233.28 (55% off).
run estimate v6e-8 --hours 24 --spot
expect_code 0
expect_eq out '1 x v6e-8 (8 chips) for 24 h in us-central1:
  on demand  $518.40  ($21.60/h = 8 chips x $2.70 per chip-hour)
  spot       $104.49 to $233.28 (55% to 80% off, by region)'

check "estimate --zone europe-west4-a prices v6e at \$2.97: 8 x 2.97 x 24 = \$570.24"
run estimate v6e-8 --hours 24 --zone europe-west4-a
expect_code 0
expect_nth_line out 1 '1 x v6e-8 \(8 chips\) for 24 h in europe-west4:'
expect_has out '  on demand  $570.24  ($23.76/h = 8 chips x $2.97 per chip-hour)'

check "estimate in a zone without the family: the family's zones, exit 2"
run estimate v4-8 --hours 1 --zone us-central1-a
expect_code 2
expect_empty out
expect_eq err "tpufleet: zone us-central1-a does not offer v4 (did you mean us-central2-b?); v4 is offered in us-central2-b"

check "estimate with a bad type: exit 2"
run estimate v4-33 --hours 1
expect_code 2
expect_has err "(nearest: v4-32, v4-64)"

check "estimate --count 1e10 is refused, not wrapped around"
run estimate v4-8 --hours 1 --count 1e10
expect_code 2
expect_eq err "tpufleet: --count expects a whole number up to 100000"

check "estimate --hours 876000 (the most it takes) prints a number, not a crash"
run estimate v4-8 --hours 876000
expect_code 0
expect_has out '  on demand  $11,282,880.00'

check "issue 11: estimate --hours 1e308 is a usage error, not \$inf"
run estimate v4-8 --hours 1e308
expect_code 2
expect_eq err "tpufleet: --hours expects a number of at most 876000, got '1e308'"

# ---- plan, worked by hand. --shardable: a replica may be split over devices, as
# plan did (in chips) before issue 11.

check "plan --hbm-gib 32 --host-ram-gib 250 --shardable: v3-8, v5litepod-8, v6e-4 first"
run plan --hbm-gib 32 --host-ram-gib 250 --shardable
expect_code 0
expect_empty err
expect_nth_line out 1 "Needs 32 GiB HBM per replica x 1 replica, 250 GiB host RAM per worker\."
expect_nth_line out 3 "TYPE +CHIPS +DEVICES +WORKERS +LAYOUT +REPLICAS FIT +HOST RAM/WORKER +\\\$/HOUR"
expect_nth_line out 4 "v3-8 +4 +8 x 16 GiB +1 +1 replica on 2 devices \(sharded\) +4 +340 GiB +\\\$8\.00"
expect_nth_line out 5 "v5litepod-8 +8 +8 x 16 GiB +1 +1 replica on 2 devices \(sharded\) +4 +384 GiB +\\\$9\.60"
expect_nth_line out 6 "v6e-4 +4 +4 x 32 GiB +1 +1 replica per device +4 +720 GiB +\\\$10\.80"
expect_lacks out "v5litepod-4 "
expect_lacks out "v5litepod-16 "
expect_lacks out "v6e-1 "
expect_line out "  v2: host RAM: the catalog has no host RAM figure for v2 workers, so the fit cannot be checked"

check "plan --replicas 8: v4-16 fits, v4-8 does not"
run plan --hbm-gib 32 --replicas 8 --shardable
expect_code 0
expect_line out "v4-16 +8 +8 x 32 GiB +2 +1 replica per device +8 +407 GiB +\\\$25\.76"
expect_lacks out "v4-8 "

check "issue 11: GenCast (29.8 GiB, cannot shard) is not offered v2 or v3"
run plan --hbm-gib 29.8
expect_code 0
expect_nth_line out 4 "v6e-1 +1 +1 x 32 GiB +1 +1 replica per device +1 +176 GiB +\\\$2\.70"
expect_lacks out "v3-8 "
expect_lacks out "v2-8 "
expect_line out "  v3: HBM: one replica needs 29\.8 GiB and a v3 device \(one TensorCore; 2 per chip\) has 16 GiB, as JAX sees it; .*"

check "plan for a model too large for every family: exit 1, every family HBM"
run plan --hbm-gib 2000000 --shardable
expect_code 1
expect_line out "No type fits\."
for family in v2 v3 v4 v5litepod v5p v6e tpu7x; do
  expect_line out "  $family: HBM: needs .*"
done

check "plan --json with no fit: [] and exit 1"
run plan --hbm-gib 2000000 --shardable --json
expect_code 1
expect_eq out "[]"

check "plan --max-usd-per-hour 5: dearer families rejected for price"
run plan --hbm-gib 32 --max-usd-per-hour 5 --shardable
expect_code 0
expect_line out "v6e-1 +.*\\\$2\.70"
expect_line out "v5litepod-4 +.*\\\$4\.80"
expect_line out "  v3: price: the cheapest fit, v3-8, costs \\\$8\.00/h, above the limit of \\\$5\.00/h"

# ---- --json on every command that prints data.

for args in "catalog" "catalog v4-8" "estimate v4-8 --hours 1" "plan --hbm-gib 16"; do
  check "$args --json: JSON on stdout, exit 0"
  # shellcheck disable=SC2086  # split on purpose
  run $args --json
  expect_code 0
  expect_empty err
  expect_nth_line out 1 "[[{]"
done

# ---- Catalog overrides.

cat >"$tmp/cheap.yaml" <<'EOF'
# v4 at a negotiated price; everything else about v4 stays built in.
families:
  v4:
    prices:
      - {region: us-central2, on_demand: 2.50, source: "our contract"}
EOF

check "--catalog FILE overrides the v4 price: 16 x \$2.50 x 10 h = \$400.00"
run estimate v4-32 --hours 10 --catalog "$tmp/cheap.yaml"
expect_code 0
expect_has out '  on demand  $400.00  ($40.00/h = 16 chips x $2.50 per chip-hour)'
run catalog v4-32 --catalog "$tmp/cheap.yaml"
expect_line out "  chips +16 \(4 per worker\)"
expect_line out "  host +407 GiB RAM, .*"

check "\$TPUFLEET_CATALOG overrides the v4 price"
run_env TPUFLEET_CATALOG="$tmp/cheap.yaml" -- estimate v4-32 --hours 10
expect_code 0
expect_has out '$400.00'

check "\$HOME/.config/tpufleet/catalog.yaml overrides the v4 price"
mkdir -p "$HOME/.config/tpufleet"
cp "$tmp/cheap.yaml" "$HOME/.config/tpufleet/catalog.yaml"
run estimate v4-32 --hours 10
expect_code 0
expect_has out '$400.00'
rm "$HOME/.config/tpufleet/catalog.yaml"

cat >"$tmp/v7x.yaml" <<'EOF'
# A made-up family, complete.
families:
  v7x:
    generation: TPU v7x (test)
    api_type: V7X
    suffix: chips
    chips_per_worker: 4
    max_single_host_chips: 4
    sizes: [4, 8, 16]
    topologies: {4: 2x2x1, 8: 2x2x2, 16: 2x2x4}
    hbm_gib_per_chip: 192
    hosts:
      - {chips_per_worker: 4, machine_type: tpu7x-standard-4t, vcpus: 224, ram_gib: 960}
    runtime_versions: [v2-alpha-tpu7x]
    zones: [us-central1-c]
    prices:
      - {region: us-central1, on_demand: 5.00, spot: 2.00, source: test}
EOF

check "--catalog adds a new family"
run catalog v7x-16 --catalog "$tmp/v7x.yaml"
expect_code 0
expect_line out "  chips +16 \(4 per worker\)"
expect_line out "  workers +4 VMs"

cat >"$tmp/partial.yaml" <<'EOF'
families:
  v7x:
    api_type: V7X
EOF

check "a new family missing a field: file, line, field, exit 1"
run catalog --catalog "$tmp/partial.yaml"
expect_code 1
expect_empty out
expect_eq err "tpufleet: error: $tmp/partial.yaml:3:5: families.v7x: family v7x has no sizes; a new family must give it"

printf 'families:\n  v4:\n    prices: [\n      {region: x\n' >"$tmp/broken.yaml"

check "a malformed override: file:line:col, exit 1"
run catalog v4-8 --catalog "$tmp/broken.yaml"
expect_code 1
expect_empty out
expect_line err "tpufleet: error: $tmp/broken\.yaml:[0-9]+:[0-9]+: not valid YAML: .*"

check "a missing --catalog file: its path, exit 1"
run catalog v4-8 --catalog "$tmp/no-such.yaml"
expect_code 1
expect_empty out
expect_eq err "tpufleet: error: reading the catalog override: $tmp/no-such.yaml: No such file or directory"

check "data/catalog.yaml is the built-in catalog"
run catalog
cp "$tmp/out" "$tmp/builtin.txt"
run catalog --catalog "$src/data/catalog.yaml"
expect_code 0
diff -u "$tmp/builtin.txt" "$tmp/out" >"$tmp/diff" || fail "laying data/catalog.yaml over the built-in catalog changed it: $(cat "$tmp/diff")"

# ---- Fleet specs: `validate` on the example and the broken examples, run from the source
# folder so the paths in messages read as a user would type them.
cd "$src"

check "validate examples/fleet.yaml: what up would ask for, and the cost"
run validate examples/fleet.yaml
expect_code 0
expect_empty err
expect_has out "examples/fleet.yaml is valid: fleet nlp-lab on gcp-tpu, project nlp-lab-tpu"
expect_has out "1 x v6e-16 (16 chips, 4 workers)"
expect_has out "spot, queued (gives up after 6h)"
expect_has out "us-east5-b, us-east5-a (tried in this order)"
expect_has out "eval-0, eval-1"
expect_has out 'On demand the fleet costs $62.40 an hour, $1,497.60 a day'

check "validate --json: the nodes, zones in order, and the hourly cost"
run validate examples/fleet.yaml --json
expect_code 0
expect_has out '"fleet": "nlp-lab"'
expect_has out '"usd_per_hour": 62.4'
tr -d ' \n' <"$tmp/out" >"$tmp/flat"
grep -qF '"zones":["us-east5-b","us-east5-a"]' "$tmp/flat" || fail "zones not in order: $(cat "$tmp/flat")"
grep -qF '"names":["eval-0","eval-1"]' "$tmp/flat" || fail "eval names missing: $(cat "$tmp/flat")"
grep -qF '"warnings":[]' "$tmp/flat" || fail "unexpected warnings: $(cat "$tmp/flat")"

# broken_spec FILE MESSAGE: validate fails with one message, starting at the right place.
broken_spec() {
  check "validate $1: one message pointing at the line"
  run validate "$1"
  expect_code 1
  expect_empty out
  expect_has err "tpufleet: error: $2"
  [[ $(wc -l <"$tmp/err") -eq 1 ]] || fail "expected one line on stderr, got: $(cat "$tmp/err")"
}
broken_spec examples/broken/bad-indentation.yaml "examples/broken/bad-indentation.yaml:7:4: not valid YAML"
broken_spec examples/broken/unknown-field.yaml \
  "examples/broken/unknown-field.yaml:8:5: nodes[0].zone: unknown field (did you mean zones?)"
broken_spec examples/broken/wrong-type.yaml \
  'examples/broken/wrong-type.yaml:7:11: nodes[0].type: unknown accelerator type "v4_32" (did you mean v4-32'
broken_spec examples/broken/zone-without-type.yaml \
  "examples/broken/zone-without-type.yaml:7:13: nodes[0].zones[0]: zone us-central1-a does not offer v4 (did you mean us-central2-b?)"

check "validate: a missing file is a failure naming it; no argument is a usage error"
run validate nope.yaml
expect_code 1
expect_eq err "tpufleet: error: reading the fleet spec: nope.yaml: No such file or directory"
run validate
expect_code 2

check "validate: a budget smaller than the on-demand day gets a warning, not a failure"
printf 'fleet: demo\nproject: demo-project\nbudget: {usd_per_day: 10}\nnodes:\n  - name: a\n    type: v4-8\n' >"$tmp/budget.yaml"
run validate "$tmp/budget.yaml"
expect_code 0
expect_has err 'tpufleet: warning: at on-demand prices the fleet costs $309.12 a day, more than its budget of $10.00 a day'

check "validate: an unknown runtime version fails, and a catalog override can add it"
printf 'fleet: demo\nproject: demo-project\nnodes:\n  - name: a\n    type: v4-8\n    runtime_version: tpu-vm-v4-new\n' >"$tmp/rt.yaml"
run validate "$tmp/rt.yaml"
expect_code 1
expect_has err "is not known for v4"
printf 'families:\n  v4:\n    runtime_versions: [tpu-ubuntu2204-base, tpu-vm-v4-new]\n' >"$tmp/rt-catalog.yaml"
run validate "$tmp/rt.yaml" --catalog "$tmp/rt-catalog.yaml"
expect_code 0

check "issue 11: a TRC email's zone (us-central1-f for v3-8) says where v3 is offered now"
printf 'fleet: trc\nproject: trc-project\nnodes:\n  - name: a\n    type: v3-8\n    zones: [us-central1-f]\n' >"$tmp/trc.yaml"
run validate "$tmp/trc.yaml"
expect_code 1
expect_has err "trc.yaml:6:13: nodes[0].zones[0]: zone us-central1-f no longer offers v3 (older guides and TPU Research Cloud emails still name it); v3 is offered now in us-central1-a, us-central1-b, europe-west4-a"

source "$(dirname "$0")/cli_e2e_issue10.sh"  # issue 10: bounded reads, state dirs not ours

echo "PASS: $checks checks"
