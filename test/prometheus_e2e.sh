#!/usr/bin/env bash
# End to end: a real Prometheus (Debian's) scrapes the node agents of an emulated pod
# (issue 13). A v4-16 (2 workers) whose spec says `monitoring: {prometheus_port: N}`
# is brought up, so that `up` installs every worker's agent serving /metrics on port N;
# a job runs the stand-in on both workers, each told a different duty cycle (worker r:
# 40 + 20 r %). Prometheus, started by this script with a config it writes (the
# workers' addresses from `status --json`, scraped every second), must see every target
# up, and its query API must answer `tpufleet_chip_duty_cycle_percent` for each chip
# with what that worker's stand-in was told, labelled with the chip, its device and
# the job; HBM used likewise.
# Prometheus, the emulator and everything else of the run are removed on any exit.
# Prints "ok N - ..." or "not ok N - ..." per check and exits 1 if any failed.
# Usage: prometheus_e2e.sh path/to/tpufleet [path/to/prometheus]. Exit 77 (skipped) when
# not root, when a tool it needs (prometheus among them) is missing, or when no
# tpufleet-agent was built next to tpufleet.
set -uo pipefail
source "$(dirname "$0")/e2e_lib.sh"
bin=$(realpath "$1")
prometheus=${2:-prometheus}
e2e_require jq curl ssh ssh-keygen nsenter timeout ip pgrep python3 "$prometheus"
e2e_require_agent "$bin"
e2e_home prom
cleanup() {
  prometheus_end
  e2e_end
}
trap cleanup EXIT
trap 'exit 143' TERM INT HUP  # so that a ctest timeout still cleans up

# The port the agents serve /metrics on, inside each worker's own network namespace.
readonly metrics_port=19431
# How long Prometheus may take to find every target up (it scrapes every second).
readonly targets_wait=60

track_hosts_begin

# ---------------------------------------------------------------------------------
note "a v4-16 whose spec asks for the agents' Prometheus endpoint, and a job on it"
check_emulator_starts
cat >"$tmp/fleet.yaml" <<EOF
fleet: pm
provider: emulator
monitoring:
  prometheus_port: $metrics_port
nodes:
  - name: pm
    type: v4-16
    zones: [$zone]
EOF
up_fleet() { up_spec "$tmp/fleet.yaml"; }
check "up brings up the v4-16 with monitoring.prometheus_port $metrics_port" up_fleet
remember_hosts
unit_has_port() {
  tf exec pm -- grep -q "^ExecStart=/usr/local/bin/tpufleet-agent serve .*--prometheus .*$metrics_port" \
    /etc/systemd/system/tpufleet-agent.service
}
check "every worker's agent unit serves Prometheus on port $metrics_port" unit_has_port
targets=()
addresses() {
  tf status --json pm >"$tmp/status.json" 2>"$tmp/status.err" || { cat "$tmp/status.err"; return 1; }
  mapfile -t targets < <(jq -r --arg p "$metrics_port" \
    '.nodes[] | select(.node == "pm") | .workers | sort_by(.index)[] | "\(.address):\($p)"' \
    "$tmp/status.json")
  [[ ${#targets[@]} == 2 ]] || { cat "$tmp/status.json"; return 1; }
}
check "status --json gives both workers' addresses" addresses

# Worker r's stand-in is told 40 + 20 r %: each chip's number says which worker it is.
told_duty() { echo $((40 + 20 * $1)); }
starts_job() {
  tf_run run run --detach pm --name scraped -- \
    sh -c 'exec tpu-standin --duty-cycle $((40 + 20 * TPU_WORKER_ID)) --step-ms 1000'
  rc_is run 0 || { shows run; return 1; }
  job=$(head -1 "$tmp/run.out")
}
check "run --detach starts the stand-in on both workers" starts_job
job=${job:-none}
steps() {
  tf logs "$job" 2>/dev/null | tr -d '\r' >"$tmp/logs.txt"
  grep -q "^pm/w0 | step .* duty_cycle=40.0% hbm=16.0/32.0GiB" "$tmp/logs.txt" &&
    grep -q "^pm/w1 | step .* duty_cycle=60.0% hbm=16.0/32.0GiB" "$tmp/logs.txt"
}
check "the stand-ins report 40 % and 60 %, 16 of 32 GiB (their logs)" wait_for 60 steps
serves_text() {
  local t
  for t in "${targets[@]}"; do
    curl -s --max-time 10 -D "$tmp/headers" "http://$t/metrics" >"$tmp/metrics.txt" || { echo "$t: no answer"; return 1; }
    grep -qi '^content-type: text/plain; version=0.0.4' "$tmp/headers" || { cat "$tmp/headers"; return 1; }
    grep -q '^# TYPE tpufleet_chip_duty_cycle_percent gauge' "$tmp/metrics.txt" ||
      { head -c 3000 "$tmp/metrics.txt"; return 1; }
  done
}
check "each agent answers GET /metrics in the text format, duty cycle a gauge" wait_for 30 serves_text

# ---------------------------------------------------------------------------------
note "Prometheus scrapes them"
{
  echo "global: {scrape_interval: 1s, scrape_timeout: 1s, evaluation_interval: 1s}"
  echo "scrape_configs:"
  echo "  - job_name: tpufleet"
  echo "    static_configs:"
  echo "      - targets: [$(printf "'%s'," "${targets[@]}" | sed 's/,$//')]"
} >"$tmp/prometheus.yml"
starts_prometheus() { prometheus_start "$tmp/prometheus.yml"; }
check "Prometheus starts with the workers as its targets" starts_prometheus
targets_up() {
  curl -s --max-time 10 "$prom/api/v1/targets" >"$tmp/targets.json" || return 1
  [[ $(jq '[.data.activeTargets[] | select(.health == "up")] | length' "$tmp/targets.json") == 2 ]]
}
all_up() {
  wait_for "$targets_wait" targets_up ||
    { jq '.data.activeTargets[] | {scrapeUrl, health, lastError}' "$tmp/targets.json"; return 1; }
}
check "within ${targets_wait}s Prometheus finds both targets up" all_up

# Scrapes hold a sample from the moment the job's metrics are read: wait for every chip.
all_chips() {
  prom_query all tpufleet_chip_duty_cycle_percent &&
    [[ $(jq '.data.result | length' "$tmp/all.json") == 8 ]]
}
check "Prometheus holds a duty cycle series for each of the 8 chips" wait_for 30 all_chips
one_chip() {
  local w t got
  for w in 0 1; do
    t=${targets[$w]}
    prom_query chip "tpufleet_chip_duty_cycle_percent{instance=\"$t\",chip=\"1\"}" || return 1
    [[ $(jq '.data.result | length' "$tmp/chip.json") == 1 ]] || { cat "$tmp/chip.json"; return 1; }
    got=$(jq -r '.data.result[0].value[1]' "$tmp/chip.json")
    near "$got" "$(told_duty $w)" 0.5 || { echo "worker $w chip 1: $got, told $(told_duty $w)"; return 1; }
    # The labels: the chip's device, and the job holding it.
    jq -e --arg job "$job" '.data.result[0].metric | .device == "/dev/accel1" and
        .job_id == $job' "$tmp/chip.json" >/dev/null ||
      { cat "$tmp/chip.json"; return 1; }
  done
}
check "a query for chip 1 of each worker answers the duty cycle its stand-in was told" one_chip
every_chip() {
  local w
  for w in 0 1; do
    jq -e --arg t "${targets[$w]}" --argjson want "$(told_duty "$w")" \
      '[.data.result[] | select(.metric.instance == $t) | .value[1] | tonumber] |
       length == 4 and all(. >= $want - 0.5 and . <= $want + 0.5)' "$tmp/all.json" >/dev/null ||
      { echo "worker $w, told $(told_duty "$w")"; cat "$tmp/all.json"; return 1; }
  done
}
check "every chip of each worker has its worker's duty cycle" every_chip
hbm() {
  prom_query hbm 'tpufleet_chip_hbm_used_bytes' || return 1
  jq -e '.data.result | length == 8 and all(.value[1] | tonumber == 16 * 1073741824)' \
    "$tmp/hbm.json" >/dev/null || { cat "$tmp/hbm.json"; return 1; }
  prom_query total 'sum(tpufleet_chip_hbm_total_bytes)' || return 1
  jq -e '.data.result[0].value[1] | tonumber == 8 * 32 * 1073741824' "$tmp/total.json" >/dev/null ||
    { cat "$tmp/total.json"; return 1; }
}
check "HBM: 16 GiB used of 32 on each chip, through Prometheus" hbm

# ---------------------------------------------------------------------------------
tf cancel "$job" >/dev/null 2>&1
prometheus_ends() {
  prometheus_end
  ! pgrep -f "$tmp/prometheus.yml" >/dev/null
}
check "Prometheus ends" prometheus_ends
down_all() { tf down --all --yes >"$tmp/down.txt" 2>&1 || { cat "$tmp/down.txt"; return 1; }; }
check "down --all" down_all
timeout 20 "$bin" holder stop >/dev/null 2>&1  # the connection holder of exec and run
check "emulator stop leaves no process, namespace, sshd or link of this run" stop_clean
echo "1..$n"
((failed == 0))
