#!/usr/bin/env bash
# End to end, issue 17's dashboard in a real browser: an emulated fleet `dash` owned by
# ada, a spot v4-16 `pod` (2 workers), kept by `tpufleet serve` over TLS; a job runs the
# TPU stand-in on both workers (it prints a step line a second and serves runtime
# metrics to the agents). Then Debian's chromium, headless, driven by puppeteer-core
# (test/browser/dashboard.js), logs in with serve's token and must see the pod READY,
# the spend billed to ada, a new line arrive in the job's live log, a plot drawn from
# the agents' samples, and the preemption `emulator inject preempt pod` makes appear
# among the events. Each page's screenshot is kept in the test's output directory
# (OUTDIR, default build/test-output), and the checks say where. Beside it a real
# Prometheus scrapes serve's /metrics (TLS pinned to serve's certificate, serve's token)
# and sees the pod READY, the fleet's spend and the preemption.
# Everything (serve, chromium, the fleet, the emulator, $tmp) is removed on exit, even on
# failure.
# Prints "ok N - ..." or "not ok N - ..." per check and exits 1 if any failed.
# Usage: dashboard_e2e.sh path/to/tpufleet [OUTDIR]. Exit 77 (skipped) when not root,
# when chromium, node or test/browser's node_modules (scripts/setup-deps.sh) are
# missing, or when no tpufleet-agent was built next to tpufleet.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
source "$here/e2e_lib.sh"
# shellcheck source=scripts/job_watchers.sh
source "$here/../scripts/job_watchers.sh"
bin=$(realpath "$1")
outdir=$(realpath -m "${2:-$(dirname "$bin")/../../test-output}")
e2e_require jq curl ssh ssh-keygen timeout ip pgrep python3 node chromium prometheus
e2e_require_agent "$bin"
if [[ ! -d $here/browser/node_modules/puppeteer-core ]]; then
  echo "SKIP: test/browser/node_modules has no puppeteer-core (scripts/setup-deps.sh runs npm ci)"
  exit 77
fi
e2e_home dash

# chromium is this run's when its command line names $tmp (its profile is there).
end_browsers() {
  local p
  for p in $(pgrep -f "chromium.*$tmp/" 2>/dev/null); do
    kill -KILL "$p" 2>/dev/null
  done
}
serve_pid=""
trap 'end_browsers; prometheus_end; stop_serve; for w in $(job_watchers "$state"); do kill "$w" 2>/dev/null; done; tf down --all --yes >/dev/null 2>&1; e2e_end' EXIT
trap 'exit 143' TERM INT HUP

track_hosts_begin
check_emulator_starts
cat >"$tmp/fleet.yaml" <<EOF
fleet: dash
provider: emulator
owner: ada
budget: {usd_per_day: 5000}
nodes:
  - name: pod
    type: v4-16
    zones: [$zone]
    capacity: spot
EOF
up_fleet() { up_spec "$tmp/fleet.yaml"; }
check "up brings up the spot v4-16 pod" up_fleet
remember_hosts

start_serve() { serve_tls "$tmp/fleet.yaml" serve.log --pass 2; }
check "serve keeps the fleet, over TLS" start_serve
url=${url:-https://127.0.0.1:1}

starts_job() {
  tf_run run run --detach pod --name standin -- \
    sh -c 'exec tpu-standin --duty-cycle $((50 + 20 * TPU_WORKER_ID)) --step-ms 1000'
  rc_is run 0 || { shows run; return 1; }
}
check "run --detach starts the stand-in on both workers" starts_job

served_page() {
  curl -sk --max-time 10 -D "$tmp/page.headers" "$url/" >"$tmp/page.html" &&
    grep -q '<script src="/ui/dashboard.js" defer></script>' "$tmp/page.html" &&
    grep -qi "^content-security-policy: default-src 'none'" "$tmp/page.headers" ||
    { cat "$tmp/page.headers"; head -c 500 "$tmp/page.html"; return 1; }
}
check "GET / answers the dashboard's page with its content security policy" served_page

# Prometheus scrapes serve's /metrics as an operator would set it up: over TLS with
# serve's certificate as the only one it trusts, serve's token from its file.
{
  echo "global: {scrape_interval: 1s, scrape_timeout: 1s, evaluation_interval: 1s}"
  echo "scrape_configs:"
  echo "  - job_name: tpufleet-serve"
  echo "    scheme: https"
  echo "    authorization: {credentials_file: '$state/serve/token'}"
  echo "    tls_config: {ca_file: '$state/serve/tls.crt'}"
  echo "    static_configs:"
  echo "      - targets: ['${url#https://}']"
} >"$tmp/prometheus.yml"
starts_prometheus() { prometheus_start "$tmp/prometheus.yml"; }
check "Prometheus starts with serve as its target" starts_prometheus
serve_scraped() {
  prom_query nodes 'tpufleet_nodes{fleet="dash",state="READY"}' &&
    [[ $(jq -r '.data.result[0].value[1]' "$tmp/nodes.json") == 1 ]] &&
    prom_query spend 'tpufleet_spend_usd{fleet="dash"} > 0' &&
    [[ $(jq '.data.result | length' "$tmp/spend.json") == 1 ]]
}
scrapes_serve() {
  wait_for 60 serve_scraped ||
    { curl -s "$prom/api/v1/targets" | jq '.data.activeTargets[] | {scrapeUrl, health, lastError}'; return 1; }
}
check "Prometheus scrapes serve's /metrics: dash's pod READY, its spend today above 0" scrapes_serve

# The browser, its profile in $tmp; the preemption is the emulator's, run from it when the
# page is ready for it. Each of its steps becomes a check here.
browse() {
  TMPDIR=$tmp HOME=$tmp/home timeout 600 node "$here/browser/dashboard.js" "$url" \
    "$state/serve/token" "$outdir" ada "'$bin' emulator inject preempt pod" \
    >"$tmp/browser.txt" 2>"$tmp/browser.err"
  echo $? >"$tmp/browser.rc"
}
browse
while IFS= read -r line; do
  case $line in
    "ok - "*) check "browser: ${line#ok - }" true ;;
    "not ok - "*) check "browser: ${line#not ok - }" false ;;
    "# "*) note "${line#\# }" ;;
  esac
done <"$tmp/browser.txt"
all_steps() {
  [[ $(cat "$tmp/browser.rc") == 0 && $(grep -c '^ok - ' "$tmp/browser.txt") == 7 ]] ||
    { cat "$tmp/browser.txt"; tail -20 "$tmp/browser.err"; return 1; }
}
check "the browser ran all 7 steps and exited 0" all_steps
screenshots() {
  local page
  for page in login nodes spend log plot events; do
    [[ -s $outdir/dashboard-$page.png ]] || { echo "no $outdir/dashboard-$page.png"; return 1; }
  done
}
check "a screenshot of each page is in $outdir" screenshots

preemption_scraped() {
  prom_query preempted 'tpufleet_preemptions_total >= 1' &&
    [[ $(jq '.data.result | length' "$tmp/preempted.json") == 1 ]]
}
check "Prometheus sees the preemption in tpufleet_preemptions_total" wait_for 60 preemption_scraped
check "Prometheus ends" prometheus_end

check "serve stops" stop_serve
no_browser_left() { ! pgrep -f "chromium.*$tmp/" >/dev/null; }
check "no chromium of this run is left" no_browser_left
# The holder while the workers still answer (its connections close at once); the job's
# watcher before it, as it would start it again.
for w in $(job_watchers "$state"); do kill "$w" 2>/dev/null; done
check "holder stop ends the connection holder (run and the served commands used it)" holder_stops
check "down --all" down_all
check "the emulator stops and leaves no namespace, sshd or link behind" stop_clean

echo "1..$n"
((failed == 0))
