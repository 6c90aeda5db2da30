# Shared by the end-to-end scripts (sourced first; they then call e2e_require and
# e2e_home): the start every emulator script makes, TAP-like checks, notes, tpufleet run
# so that a signal to the script reaches its traps, and the emulator's API.

# e2e_require TOOL...: exits 77 (skipped) with the reason unless this runs as root and
# every TOOL is installed.
e2e_require() {
  local tool
  if [[ $(id -u) -ne 0 ]]; then
    echo "SKIP: the emulator's workers are network namespaces with a real sshd; run as root"
    exit 77
  fi
  for tool in "$@"; do
    if ! command -v "$tool" >/dev/null; then
      echo "SKIP: $tool is not installed (scripts/setup-deps.sh installs the test tools)"
      exit 77
    fi
  done
}

# e2e_require_agent BIN: skips (exit 77) unless a tpufleet-agent was built next to BIN.
e2e_require_agent() {
  if [[ ! -x $(dirname "$1")/tpufleet-agent ]]; then
    echo "SKIP: no tpufleet-agent next to $1: the node agent is not built"
    exit 77
  fi
}

# e2e_home NAME: a fresh $tmp (/tmp/tpufleet-NAME-e2e.XXXXXX) that holds this run's HOME,
# state dirs and emulator dir; sets $state, $project and $zone. The fleet's login is
# $USER when that is a valid name (root is not): unset, as are the caller's cloud
# credentials and catalog, so the defaults apply.
e2e_home() {
  tmp=$(mktemp -d "/tmp/tpufleet-$1-e2e.XXXXXX")
  export HOME=$tmp/home XDG_STATE_HOME=$tmp/xdg TPUFLEET_STATE_DIR=$tmp/state
  export TPUFLEET_EMULATOR_DIR=$tmp/emulator
  unset USER LOGNAME GOOGLE_APPLICATION_CREDENTIALS CLOUDSDK_AUTH_ACCESS_TOKEN_FILE TPUFLEET_CATALOG
  mkdir -p "$HOME"
  state=$TPUFLEET_STATE_DIR
  project=tpufleet-emulator
  zone=us-central2-b
  tf_pid=""
}

# e2e_end: the last of every script's exit trap: ends the tpufleet it runs, the holder
# and the emulator, and removes $tmp.
e2e_end() {
  end_ours "$tf_pid" TERM  # timeout(1) passes it on to tpufleet
  timeout 20 "$bin" holder stop >/dev/null 2>&1
  timeout 120 "$bin" emulator stop >/dev/null 2>&1
  rm -rf "$tmp"
}

# Ends a tpufleet this script started and that still runs (pid checked, not reused): its
# command line names $bin, or it runs a program beside $bin (`tpufleet serve` execs
# tpufleet-serve, whose command line does not name $bin).
end_ours() {
  [[ -n $1 ]] || return 1
  { tr '\0' ' ' 2>/dev/null <"/proc/$1/cmdline" | grep -qF "$bin" ||
    [[ $(readlink "/proc/$1/exe" 2>/dev/null) == "$(dirname "$bin")"/* ]]; } &&
    kill "-$2" "$1" 2>/dev/null
}

# serve_tls SPEC LOG [ARGS…]: `tpufleet serve SPEC ARGS…` over TLS in the background
# ($serve_pid), on a loopback port chosen at the first call and kept, so that a serve
# started again answers at the same $url. Once it listens, $url and $fp (its
# certificate's fingerprint) are read from its log, $tmp/LOG.
serve_tls() {
  local spec=$1 log=$2
  shift 2
  [[ -n ${serve_port:-} ]] ||
    serve_port=$(free_port)
  : >"$tmp/$log"  # now, not in the background: the last serve's lines must not count
  "$bin" serve "$spec" --listen "127.0.0.1:$serve_port" "$@" >/dev/null 2>"$tmp/$log" &
  serve_pid=$!
  listening() { grep -q "clients pin it" "$tmp/$log"; }
  wait_for 30 listening || { cat "$tmp/$log"; return 1; }
  url=$(grep -o 'serving the API on https://127.0.0.1:[0-9]*' "$tmp/$log" | grep -o 'https://.*')
  fp=$(grep -o 'TLS certificate SHA256:[A-Za-z0-9+/]*' "$tmp/$log" | cut -d' ' -f3)
  [[ -n $url && -n $fp ]] || { cat "$tmp/$log"; return 1; }
}

# stop_serve: ends the `tpufleet serve` whose pid is $serve_pid, if any (TERM, then KILL
# after 15 s), returning its exit status.
stop_serve() {
  local pid=$serve_pid
  [[ -n $pid ]] || return 0
  end_ours "$pid" TERM
  wait_for 15 eval '! kill -0 "$pid" 2>/dev/null' || end_ours "$pid" KILL
  serve_pid=""
  wait "$pid"
}

# person_token NAME: a token of NAME's as `tpufleet invite` issues it (after serve_tls:
# the invite names $url), kept 0600 in $tmp/NAME.token for TPUFLEET_TOKEN_FILE.
person_token() {
  tf_run "invite-$1" invite "$1" --server-url "$url" --out "$tmp/$1.tpufleet-invite"
  rc_is "invite-$1" 0 || { shows "invite-$1"; return 1; }
  (umask 077 && jq -r .token "$tmp/$1.tpufleet-invite" >"$tmp/$1.token")
}
# serve_e2e_traps: the traps of a script that runs `tpufleet serve` (serve_tls): on exit,
# serve is stopped and the fleet deleted before e2e_end; TERM, INT and HUP exit, so
# that a ctest timeout still cleans up.
serve_e2e_traps() {
  serve_pid=""
  trap 'stop_serve; tf down --all --yes >/dev/null 2>&1; e2e_end' EXIT
  trap 'exit 143' TERM INT HUP
}
# serve_and_fleet_end: a last check's: serve stops, then down deletes the fleet.
serve_and_fleet_end() { stop_serve && down_all; }

n=0
failed=0
# check DESCRIPTION COMMAND...: runs COMMAND in this shell; what it prints is shown only
# when it fails.
check() {
  local desc=$1
  shift
  n=$((n + 1))
  if "$@" >"$tmp/why" 2>&1; then
    echo "ok $n - $desc"
  else
    failed=$((failed + 1))
    echo "not ok $n - $desc"
    head -c 4000 "$tmp/why" | sed 's/^/#   /'
  fi
}
exec 3>&1  # notes reach the log even from inside a check
note() { echo "# $*" >&3; }

# tpufleet, in the background so that a signal to this script runs its traps at once.
tf() {
  timeout 180 "$bin" "$@" &
  tf_pid=$!
  wait "$tf_pid"
}

# tf_run NAME ARGS...: `tpufleet ARGS...` (as tf) with stdout, stderr and the exit status
# in $tmp/NAME.{out,err,rc}; shows NAME prints them, for a failed check.
tf_run() {
  local name=$1
  shift
  tf "$@" >"$tmp/$name.out" 2>"$tmp/$name.err"
  echo $? >"$tmp/$name.rc"
  return 0
}
shows() {
  echo "exit $(cat "$tmp/$1.rc"); stdout:"
  head -c 3000 "$tmp/$1.out"
  echo "stderr:"
  head -c 3000 "$tmp/$1.err"
}
# holder_stops [SECONDS]: `tpufleet holder stop` ends this run's connection holder
# within SECONDS (10), and no other starts in its place. Any tpufleet of this state that
# still runs (serve, a job's watcher) starts a holder again when it next needs one: end
# those first.
holder_stops() {
  local before after
  before=$(pgrep -f "holder serve --socket $state/" | tr '\n' ' ')
  tf holder stop >"$tmp/holder.txt" 2>&1 || { cat "$tmp/holder.txt"; return 1; }
  wait_for "${1:-10}" eval '! pgrep -f "holder serve --socket $state/" >/dev/null' && return 0
  after=$(pgrep -f "holder serve --socket $state/" | tr '\n' ' ')
  echo "holders before the stop: ${before:-none}; still running: $after"
  local p
  for p in $after; do
    ps -o pid=,etimes=,args= -p "$p"
  done
  return 1
}
rc_is() { [[ $(cat "$tmp/$1.rc") == "$2" ]]; }  # rc_is NAME STATUS, of a run kept in $tmp
# down_all: `tpufleet down --all --yes`; what it printed, when it fails.
# up_spec SPEC [TIMEOUT]: `tpufleet up SPEC`, its output shown only when it fails.
up_spec() { tf up "$1" --timeout "${2:-3m}" >"$tmp/up.txt" 2>&1 || { cat "$tmp/up.txt"; return 1; }; }
down_all() { tf down --all --yes >"$tmp/down.txt" 2>&1 || { cat "$tmp/down.txt"; return 1; }; }
# wait_for SECONDS COMMAND...: polls COMMAND every 0.1 s until it succeeds.
wait_for() {
  local deadline=$((SECONDS + $1))
  shift
  until "$@"; do
    ((SECONDS < deadline)) || return 1
    sleep 0.1
  done
}

# near A B TOLERANCE: |A - B| <= TOLERANCE, decimals (a measured number against the told).
near() { awk -v a="$1" -v b="$2" -v t="$3" 'BEGIN { d = a - b; if (d < 0) d = -d; exit !(d <= t) }'; }

# free_port: a free TCP port on 127.0.0.1.
free_port() {
  python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# prometheus_start CONFIG: Debian's Prometheus ($prometheus, default `prometheus`) with
# CONFIG, its data in $tmp/tsdb and its log in $tmp/prometheus.log, in the background
# ($prom_pid), its API at $prom on a free loopback port; fails unless it is ready within
# 60 s. prometheus_end ends it (its pid checked: its command line names $tmp), and
# prom_query NAME PROMQL keeps its answer in $tmp/NAME.json, failing unless a success.
prom_pid=""
prometheus_start() {
  local port
  port=$(free_port)
  prom="http://127.0.0.1:$port"
  "${prometheus:-prometheus}" --config.file="$1" --storage.tsdb.path="$tmp/tsdb" \
    --web.listen-address="127.0.0.1:$port" >"$tmp/prometheus.log" 2>&1 &
  prom_pid=$!
  wait_for 60 eval 'curl -sf --max-time 2 "$prom/-/ready" >/dev/null' ||
    { tail -30 "$tmp/prometheus.log"; return 1; }
}
prometheus_end() {
  [[ -n $prom_pid ]] || return 0
  if tr '\0' ' ' 2>/dev/null <"/proc/$prom_pid/cmdline" | grep -qF "$tmp/"; then
    kill -TERM "$prom_pid" 2>/dev/null
    wait_for 20 eval '! kill -0 "$prom_pid" 2>/dev/null' || kill -KILL "$prom_pid" 2>/dev/null
  fi
  wait "$prom_pid" 2>/dev/null
  prom_pid=""
}
prom_query() {
  curl -s --max-time 10 -G --data-urlencode "query=$2" "$prom/api/v1/query" >"$tmp/$1.json" &&
    [[ $(jq -r .status "$tmp/$1.json") == success ]] || { cat "$tmp/$1.json"; return 1; }
}

# curl with the owner's token of the emulator in $TPUFLEET_EMULATOR_DIR: it answers
# nothing without it (issue 10). Read at each call, since each start makes a new one;
# the header comes from a file descriptor, so the token is in no process's argv.
ecurl() {
  curl -H @<(printf 'Authorization: Bearer %s\n' "$(<"$TPUFLEET_EMULATOR_DIR/token")") "$@"
}

api() { ecurl -s --max-time 20 "$ep$1"; }  # api PATH: the emulator's answer

# Starts this run's emulator, as a check, and sets $ep to its endpoint (to a dead one
# when it did not start, so that the checks after it fail rather than the script).
check_emulator_starts() {
  emulator_starts() {
    tf emulator start >"$tmp/start.txt" || { cat "$tmp/start.txt"; return 1; }
    ep=$(jq -r .endpoint "$TPUFLEET_EMULATOR_DIR/daemon.json") && [[ $ep == http://127.0.0.1:* ]]
  }
  check "emulator start writes its endpoint to daemon.json" emulator_starts
  ep=${ep:-http://127.0.0.1:1/}
}

# ---- What a run's emulator made, so that its end can check all of it is gone: the
# workers' network namespaces (by inode), the sshd processes in them (pid and start
# time, as pids are reused) and the links that appeared while it ran. Call
# track_hosts_begin before the emulator starts, remember_hosts whenever it has made
# workers, and stop_clean [PATTERN] (other processes of the run, for pgrep) at the end.

worker_inits() { pgrep -f "^tpufleet-emulator-worker --disk=$TPUFLEET_EMULATOR_DIR/"; }
# "PID STARTTIME" of a process (field 22 of /proc/PID/stat, after the parenthesised name).
pid_id() { local st; st=$(cat "/proc/$1/stat" 2>/dev/null) && echo "$1 $(cut -d' ' -f20 <<<"${st##*) }")"; }
tpf_links() { ip -o link show | grep -o ' tpf[0-9a-z]*' | tr -d ' ' | sort -u; }
# Whether a live emulator holds slot $1 (src/emulator/hosts/host_network.cc's lock).
slot_held() { local f=/run/tpufleet-emulator/slot$1.lock; [[ -e $f ]] && ! flock -n "$f" true; }

track_hosts_begin() {
  root_netns=$(readlink /proc/self/ns/net)
  : >"$tmp/netns" && : >"$tmp/sshd" && : >"$tmp/links"
  tpf_links >"$tmp/links.before"
}

remember_hosts() {
  local p ns
  for p in $(worker_inits); do
    ns=$(readlink "/proc/$p/ns/net" 2>/dev/null) || continue
    [[ $ns != "$root_netns" ]] && echo "$ns" >>"$tmp/netns"
  done
  sort -u -o "$tmp/netns" "$tmp/netns"
  for p in $(pgrep -x sshd); do
    ns=$(readlink "/proc/$p/ns/net" 2>/dev/null) || continue
    grep -qxF "$ns" "$tmp/netns" && pid_id "$p" >>"$tmp/sshd"
  done
  sort -u -o "$tmp/sshd" "$tmp/sshd"
  tpf_links | comm -23 - "$tmp/links.before" >>"$tmp/links"
  sort -u -o "$tmp/links" "$tmp/links"
}

stop_clean() {
  local p ns left="" id pattern="$tmp${1:+|$1}"
  [[ -s $tmp/netns && -s $tmp/sshd ]] || { echo "no worker namespaces or sshd were recorded"; return 1; }
  tf emulator stop >/dev/null || return 1
  sleep 0.2
  # Namespace inodes are recycled: another emulator on this machine (a bench, another
  # test) may hold one of ours by now. Its namespaces are those of its worker inits.
  : >"$tmp/netns.others"
  for p in $(pgrep -f '^tpufleet-emulator-worker --disk='); do
    readlink "/proc/$p/ns/net" >>"$tmp/netns.others" 2>/dev/null
  done
  for p in /proc/[0-9]*; do
    ns=$(readlink "$p/ns/net" 2>/dev/null) || continue
    grep -qxF "$ns" "$tmp/netns" && ! grep -qxF "$ns" "$tmp/netns.others" &&
      left+=" ${p#/proc/}($(tr '\0' ' ' <"$p/cmdline" | cut -c1-60))"
  done
  [[ -z $left ]] || { echo "processes still in the workers' namespaces:$left"; return 1; }
  while read -r id; do
    # Not one whose namespace is another emulator's now (recorded when its inode, freed
    # by one of ours, was already reused).
    ns=$(readlink "/proc/${id%% *}/ns/net" 2>/dev/null)
    [[ $(pid_id "${id%% *}") == "$id" ]] && ! grep -qxF "$ns" "$tmp/netns.others" &&
      left+=" sshd:${id%% *}"
  done <"$tmp/sshd"
  [[ -z $left ]] || { echo "sshd left:$left"; return 1; }
  left=$(pgrep -af "$pattern" | grep -v "^$$ ")
  [[ -z $left ]] || { echo "processes left: $left"; return 1; }
  # A link of a slot another live emulator holds now is that one's (a slot's claimer
  # first deletes what a dead owner left in it): only the others count.
  local link slot
  for link in $(tpf_links | comm -12 - "$tmp/links"); do
    slot=${link#tpfbr}
    [[ $slot != "$link" ]] || { slot=${link#tpf}; slot=${slot%%v*}; }
    slot_held "$slot" || left+=" $link"
  done
  [[ -z $left ]] || { echo "links left:$left"; return 1; }
  [[ ! -e $TPUFLEET_EMULATOR_DIR ]] || { echo "state dir left"; return 1; }
}
