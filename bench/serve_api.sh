#!/usr/bin/env bash
# The team server's API under load (issue 16): `tpufleet serve` keeping one emulated fleet
# (NODES single-host nodes, each running a job, each worker a real host with its agent),
# and CLIENTS clients at once, each running `tpufleet --server https://… COMMAND --json`
# in a loop for SECONDS, first `status`, then `jobs`: over TLS, the certificate pinned,
# the token from a 0600 file. Per command:
#   requests   completed runs (and how many failed)
#   throughput runs per second, all clients together
#   latency    p50 / p95 / p99 / max of one run as its client sees it: the CLI process's
#              whole life (start, TLS handshake, the command run by serve over its state,
#              the output back), so what a collaborator waits for
# plus serve's CPU (user+sys, /proc) over each window and the load at its end; on
# PostgreSQL also the database server's CPU over the window (the postmaster, the
# backends it reaped and those still running).
#
# STORES: the stores measured, one after the other in this run, the same fleet made
# again on each (default "sqlite postgresql"): sqlite is the state dir's state.db;
# postgresql is a throwaway PostgreSQL server (Debian's, initdb in a temp dir, run as
# the postgres user on a unix socket there, as the store tests' and e2e.serve_leader's),
# which every tpufleet of that part (up, run, serve) uses through TPUFLEET_STORE.
#
# Needs root (the emulator's workers are network namespaces); without it, it skips.
# Usage: [STORES="sqlite postgresql"] bench/serve_api.sh path/to/tpufleet [CLIENTS] [SECONDS] [NODES]
#   CLIENTS  clients at once, default 50
#   SECONDS  length of each command's window, default 30
#   NODES    single-host nodes kept (v5litepod-4), default 4
set -euo pipefail

# shellcheck source=bench/agent_lib.sh
source "$(dirname "$0")/agent_lib.sh"
bench_start serve-api "$1"
clients=${2:-50}
window=${3:-30}
nodes=${4:-4}
stores=${STORES:-sqlite postgresql}
for store in $stores; do
  case $store in
    sqlite | postgresql) ;;
    *) say "STORES holds sqlite and postgresql, not $store"; exit 2 ;;
  esac
done
pgbin=$(find /usr/lib/postgresql/*/bin -maxdepth 0 2>/dev/null | sort -V | tail -1)
if [[ " $stores " == *" postgresql "* ]] && { [[ -z $pgbin || ! -x $pgbin/initdb ]] ||
  ! id postgres >/dev/null 2>&1; }; then
  say "PostgreSQL's server (/usr/lib/postgresql/*/bin) or its postgres user is missing (apt-get install postgresql)"
  exit 1
fi
serve_pid=""
pg_pid=""
pgdir=""
cleanup() {
  set +e
  [[ -n $serve_pid ]] && kill "$serve_pid" 2>/dev/null && wait "$serve_pid" 2>/dev/null
  bench_end  # before the PostgreSQL server: down --all reads the store
  if [[ -n $pg_pid ]]; then
    kill -QUIT "$pg_pid" 2>/dev/null
    wait "$pg_pid" 2>/dev/null
  fi
  [[ -n $pgdir ]] && rm -rf "$pgdir"
  bench_inotify_restore
}
trap cleanup EXIT
trap 'exit 130' INT TERM
bench_inotify_raise "$nodes"

# pg_start: the throwaway PostgreSQL server and its database "fleet"; exports
# TPUFLEET_STORE for every tpufleet after it.
pg_start() {
  pgdir=$(mktemp -d /tmp/tpufleet-serve-api-pg.XXXXXX)
  chown postgres: "$pgdir"
  as_pg() { setpriv --reuid=postgres --regid=postgres --clear-groups -- "$pgbin/$1" "${@:2}"; }
  as_pg initdb -D "$pgdir/data" -U postgres --auth=trust -E UTF8 --locale=C --no-sync \
    >"$pgdir/initdb.log" 2>&1 || { cat "$pgdir/initdb.log" >&2; exit 1; }
  setpriv --reuid=postgres --regid=postgres --clear-groups -- "$pgbin/postgres" \
    -D "$pgdir/data" -k "$pgdir" -c listen_addresses= -c max_connections=200 >"$tmp/pg.log" 2>&1 &
  pg_pid=$!
  for _ in $(seq 1 60); do
    as_pg pg_isready -q -h "$pgdir" && break
    sleep 0.5
  done
  as_pg createdb -h "$pgdir" fleet || { tail -5 "$tmp/pg.log" >&2; exit 1; }
  export TPUFLEET_STORE="postgresql:///fleet?host=$pgdir&user=postgres"
}

say "starting the emulator"
"$bin" emulator start >/dev/null
spec=$tmp/fleet.yaml
# shellcheck source=bench/spec_lib.sh
source "$(dirname "$0")/spec_lib.sh"
single_host_spec "$spec" api "$nodes"

# fleet_up: the fleet of $nodes nodes on the current store, and a job on each.
fleet_up() {
  say "up of $nodes nodes, and a job on each"
  "$bin" up "$spec" --timeout 30m >"$tmp/up.txt" 2>&1 || { tail -20 "$tmp/up.txt" >&2; exit 1; }
  local i
  for i in $(seq 0 $((nodes - 1))); do
    "$bin" run --detach "n-$i" --name "load-$i" --no-accelerator -- sleep 3600 >"$tmp/run.txt" 2>&1 ||
      { say "run on n-$i failed:"; tail -5 "$tmp/run.txt" >&2; exit 1; }
  done
}

# serve_start: serve on the current store, its certificate pinned.
serve_start() {
  local fp
  bench_serve "$spec" "$tmp/serve.log" || exit 1
  fp=$(grep -o 'TLS certificate SHA256:[A-Za-z0-9+/]*' "$tmp/serve.log" | cut -d' ' -f3)
  export TPUFLEET_SERVER=https://127.0.0.1:$serve_port TPUFLEET_TOKEN_FILE=$TPUFLEET_STATE_DIR/serve/token
  "$bin" --server-fingerprint "$fp" status --json >/dev/null  # pinned, ahead of the load
}

serve_stop() {
  kill "$serve_pid" 2>/dev/null || true
  wait "$serve_pid" 2>/dev/null || true
  serve_pid=""
  unset TPUFLEET_SERVER
}

cpu_seconds() {  # utime + stime of serve (every thread), in seconds
  awk -v hz="$(getconf CLK_TCK)" '{ sub(/^.*\) /, ""); print ($12 + $13) / hz }' "/proc/$serve_pid/stat"
}
# The PostgreSQL server's CPU so far, in seconds: the postmaster's own and its reaped
# children's (utime, stime, cutime, cstime), plus its live children's; 0 on SQLite.
db_cpu_seconds() {
  if [[ -z $pg_pid ]]; then echo 0; return; fi
  local kids
  kids=$(pgrep -P "$pg_pid" | sed 's|.*|/proc/&/stat|')
  # shellcheck disable=SC2086  # one path per child
  cat "/proc/$pg_pid/stat" $kids 2>/dev/null | awk -v hz="$(getconf CLK_TCK)" -v pm="$pg_pid" '
    { pid = $1; sub(/^.*\) /, ""); t += $12 + $13; if (pid == pm) t += $14 + $15 }
    END { print t / hz }'
}

# client N COMMAND: runs COMMAND in a loop until $end; one line per run: "MICROS RC".
client() {
  local t0 t1 rc
  while [[ ${EPOCHREALTIME/./} -lt $end ]]; do
    t0=${EPOCHREALTIME/./}
    rc=0
    "$bin" "$2" --json >/dev/null 2>>"$tmp/err.$1" || rc=$?
    t1=${EPOCHREALTIME/./}
    echo "$((t1 - t0)) $rc"
  done >"$tmp/lat.$1"
}

# measure COMMAND: one window of $clients clients; prints a table row.
measure() {
  local cmd=$1 c0 c1 d0 d1 t0 t1 i pids=()
  rm -f "$tmp"/lat.* "$tmp"/err.*
  c0=$(cpu_seconds)
  d0=$(db_cpu_seconds)
  t0=$(date +%s.%N)
  end=$(( ${EPOCHREALTIME/./} + window * 1000000 ))
  for i in $(seq 1 "$clients"); do
    client "$i" "$cmd" &
    pids+=($!)
  done
  wait "${pids[@]}"
  t1=$(date +%s.%N)
  c1=$(cpu_seconds)
  d1=$(db_cpu_seconds)
  cat "$tmp"/lat.* | sort -n | awk -v store="$store" -v cmd="$cmd" -v t0="$t0" -v t1="$t1" \
    -v c0="$c0" -v c1="$c1" -v d0="$d0" -v d1="$d1" \
    -v load="$(cut -d' ' -f1 /proc/loadavg)" -v c="$clients" '
    { lat[NR] = $1 / 1000; if ($2 != 0) bad++ }
    END {
      n = NR; if (n == 0) { print "| " store " | " cmd " | no run completed |"; exit }
      t = t1 - t0; cpu = c1 - c0; db = d1 - d0
      i50 = int(n * 0.50); i95 = int(n * 0.95); i99 = int(n * 0.99)
      if (i50 < 1) i50 = 1
      if (i95 < 1) i95 = 1
      if (i99 < 1) i99 = 1
      dbcell = store == "sqlite" ? "—" : sprintf("%.1f s", db)
      printf "| %s | %s | %d | %d | %d | %.1f | %.0f / %.0f / %.0f / %.0f ms | %.1f s (%.0f %% of a core) | %s | %s |\n",
        store, cmd, c, n, bad, n / t, lat[i50], lat[i95], lat[i99], lat[n], cpu, 100 * cpu / t, dbcell, load
    }'
  if compgen -G "$tmp/err.*" >/dev/null && [[ -n $(cat "$tmp"/err.*) ]]; then
    say "$cmd: first errors: $(cat "$tmp"/err.* | sort | uniq -c | sort -rn | head -3 | tr '\n' ' ')"
  fi
}

# Each store's part: the fleet made on it, served, measured, taken down.
rows=$tmp/rows.md
for store in $stores; do
  if [[ $store == postgresql ]]; then pg_start; fi
  fleet_up
  serve_start
  for cmd in status jobs; do
    say "$store: $clients clients running $cmd for ${window}s"
    measure "$cmd" >>"$rows"
  done
  serve_stop
  say "$store: down"
  timeout 300 "$bin" down --all --yes >/dev/null 2>&1 || say "$store: down failed"
done

echo "## The team server's API: $clients clients, $nodes nodes ($(nproc) cores, ${window} s windows, $(date -u '+%Y-%m-%d %H:%M') UTC)"
echo
echo "| store | command | clients | runs | failed | runs/s | latency p50 / p95 / p99 / max | serve CPU | database CPU | load |"
echo "|---|---|---|---|---|---|---|---|---|---|"
cat "$rows"
