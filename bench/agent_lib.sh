# shellcheck shell=bash
# Shared by the benches that run the node agent on the emulator's workers (bench/agent.sh,
# jobs.sh, top.sh, serve.sh, serve_api.sh, dashboard.sh), sourced: their start (root, the
# agent built next to tpufleet, a private temp dir holding HOME, the state and the
# emulator), their end (the fleet, the gang watchers of this run's jobs, the holder and
# the emulator stopped; the temp dir removed), the inotify limit their agents need, and
# serve started over TLS.

# bench_start NAME BIN: sets $bench, $bin and $tmp; exits 0 (skipped) when not root.
bench_start() {
  bench=$1
  bin=$(realpath "$2")
  if [[ $(id -u) -ne 0 ]]; then
    echo "$bench bench: skipped (needs root)"
    exit 0
  fi
  if [[ ! -x $(dirname "$bin")/tpufleet-agent ]]; then
    echo "$bench bench: no tpufleet-agent next to $bin: build it first" >&2
    exit 1
  fi
  tmp=$(mktemp -d "/tmp/tpufleet-$bench-bench.XXXXXX")
  export HOME=$tmp/home TPUFLEET_STATE_DIR=$tmp/state TPUFLEET_EMULATOR_DIR=$tmp/emulator
  unset USER LOGNAME  # the fleet's login is then the default one
  mkdir -p "$HOME"
  ulimit -n "$(ulimit -Hn)"  # hundreds of workers' connections
}

say() { echo "$bench bench: $*" >&2; }

# shellcheck source=scripts/job_watchers.sh
source "$(dirname "${BASH_SOURCE[0]}")/../scripts/job_watchers.sh"
# The gang watchers `run` started for this bench's jobs.
our_watchers() { job_watchers "$TPUFLEET_STATE_DIR"; }

# The end, for the exit trap; goes on past any failure.
bench_end() {
  set +e
  local p
  timeout 300 "$bin" down --all --yes >/dev/null 2>&1
  for p in $(our_watchers); do kill "$p" 2>/dev/null; done
  timeout 20 "$bin" holder stop >/dev/null 2>&1
  timeout 300 "$bin" emulator stop >/dev/null 2>&1
  rm -rf "$tmp"
}

# Every worker's agent (serve) holds an inotify instance, and the emulator's workers all
# share this kernel and its root: its default limit (fs.inotify.max_user_instances = 128
# per user) is soon used up, and serve then looks at its jobs every 0.5 s instead.
# bench_inotify_raise WORKERS raises it for the run (to 2 per worker and 512 more), so
# that every agent works as on a TPU VM, which has a kernel of its own;
# bench_inotify_restore (for the exit trap) sets it back.
inotify=/proc/sys/fs/inotify/max_user_instances
inotify_was=$(cat "$inotify")
bench_inotify_raise() {
  if ((inotify_was < 2 * $1 + 512)); then
    say "fs.inotify.max_user_instances $inotify_was -> $((2 * $1 + 512)) for the run"
    echo $((2 * $1 + 512)) >"$inotify"
  fi
}
bench_inotify_restore() {
  if [[ $(cat "$inotify") != "$inotify_was" ]]; then echo "$inotify_was" >"$inotify"; fi
}

# bench_serve SPEC LOG: `tpufleet serve SPEC` over TLS on a free loopback port, its log in
# LOG; sets $serve_pid and $serve_port once serve has logged its certificate (a minute at
# most; else says why and returns 1).
bench_serve() {
  serve_port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
  "$bin" serve "$1" --listen "127.0.0.1:$serve_port" 2>"$2" &
  # shellcheck disable=SC2034  # the caller's, to stop serve and read its CPU
  serve_pid=$!
  for _ in $(seq 1 60); do
    grep -q "clients pin it" "$2" && return 0
    sleep 1
  done
  say "serve did not start:"
  tail -5 "$2" >&2
  return 1
}
