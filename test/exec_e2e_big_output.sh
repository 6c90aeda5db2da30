# Sourced by exec_e2e_test.sh once its fleet of four v4-32 nodes is up (its helpers,
# $tmp and $bin are this file's): check j, issue 10's worker printing without end.
#   j. a worker printing 200 MB without a newline: every byte arrives, in 64 KiB pieces,
#      and the CLI and the holder each stay under 64 MiB resident, through the holder
#      and in process; --group and --json keep 1 MiB of it and say so.

# ---------------------------------------------------------------------------------
note "j. a worker printing 200 MB without a newline (issue 10)"
big=200000000
big_cmd="head -c $big /dev/zero | tr '\\0' x"
# big_exec NAME [VAR=VALUE...] -- EXEC-FLAGS...: exec ex-0:0 of the big command under
# /usr/bin/time, its stdout counted (lines, bytes, the longest line: wc, linear however
# long the line) not stored; the max resident size in KiB in $tmp/NAME.rss, the CPU
# seconds in $tmp/NAME.cpu.
big_exec() {
  local name=$1 start=$SECONDS rc
  shift
  local -a envs=()
  while [[ $1 != -- ]]; do envs+=("$1"); shift; done
  shift
  env "${envs[@]}" /usr/bin/time -v -o "$tmp/$name.time" timeout 240 "$bin" exec ex-0:0 "$@" \
    -- sh -c "$big_cmd" 2>"$tmp/$name.err" |
    wc -lcL >"$tmp/$name.count" &
  tf_pid=$!
  wait "$tf_pid"
  rc=$(awk -F': ' '/Exit status/ { print $2 }' "$tmp/$name.time")
  echo "${rc:-?}" >"$tmp/$name.rc"
  echo $((SECONDS - start)) >"$tmp/$name.secs"
  awk -F': ' '/Maximum resident/ { print $2 }' "$tmp/$name.time" >"$tmp/$name.rss"
  awk -F': ' '/User time/ { u = $2 } /System time/ { s = $2 } END { print u + s }' \
    "$tmp/$name.time" >"$tmp/$name.cpu"
  note "$name: exit $(cat "$tmp/$name.rc")" \
    "after $(cat "$tmp/$name.secs")s, CLI max RSS $(($(cat "$tmp/$name.rss") / 1024)) MiB," \
    "CPU $(cat "$tmp/$name.cpu")s"
}
kib_under() { [[ $(cat "$1") =~ ^[0-9]+$ ]] && (($(cat "$1") < $2 * 1024)); }
big_shows() {
  echo "exit $(cat "$tmp/$1.rc"), counted $(cat "$tmp/$1.count"), RSS $(cat "$tmp/$1.rss") KiB"
  head -c 1500 "$tmp/$1.err"
}
# The holder's peak resident size (KiB) and the most output it held for a client.
holder_peak() {
  local pid
  tf holder status --json >"$tmp/holder.json" 2>&1 || { cat "$tmp/holder.json"; return 1; }
  pid=$(jq -r .pid "$tmp/holder.json") && [[ $pid =~ ^[0-9]+$ ]] ||
    { cat "$tmp/holder.json"; return 1; }
  awk '/^VmHWM/ { print $2 }' "/proc/$pid/status" >"$tmp/holder.rss"
  note "holder (pid $pid): max RSS $(($(cat "$tmp/holder.rss") / 1024)) MiB, CPU" \
    "$(awk '{ print ($14 + $15) / 100 }' "/proc/$pid/stat")s in all, $(jq -c . "$tmp/holder.json")"
}
# 200 MB in 64 KiB pieces: 3052 lines of 65536 x's (plus the prefix $1), one of 49,664.
big_pieces_ok() {
  local prefix=${#1} lines bytes longest
  read -r lines bytes longest <"$tmp/$2.count"
  ((lines == (big + 65535) / 65536 && longest == 65536 + prefix &&
    bytes == big + lines * (prefix + 1)))
}
big_prefixed() {
  big_exec big --
  rc_is big 0 || { big_shows big; return 1; }
  big_pieces_ok "[ex-0/w0] " big || { big_shows big; return 1; }
  kib_under "$tmp/big.rss" 64 || { big_shows big; return 1; }
  holder_peak || return 1
  kib_under "$tmp/holder.rss" 64 ||
    { echo "holder max RSS $(cat "$tmp/holder.rss") KiB"; return 1; }
  (($(jq .peak_backlog_bytes "$tmp/holder.json") <= (1024 + 256 + 4) * 1024)) ||
    { cat "$tmp/holder.json"; return 1; }
}
check "200 MB without a newline (holder): all of it, in 64 KiB lines; CLI and holder < 64 MiB RSS" \
  big_prefixed
big_in_process() {
  big_exec big-cold TPUFLEET_HOLDER=off --
  rc_is big-cold 0 || { big_shows big-cold; return 1; }
  big_pieces_ok "[ex-0/w0] " big-cold || { big_shows big-cold; return 1; }
  kib_under "$tmp/big-cold.rss" 64 || { big_shows big-cold; return 1; }
}
check "the same with TPUFLEET_HOLDER=off (in process): all of it, CLI < 64 MiB RSS" big_in_process
big_group() {
  big_exec big-group -- --group
  rc_is big-group 0 || { big_shows big-group; return 1; }
  # The block: the rule, the title and the rule, 1 MiB of x's, the note of what was cut.
  local lines bytes longest
  read -r lines bytes longest <"$tmp/big-group.count"
  ((lines == 5 && longest == 1048576)) || { big_shows big-group; return 1; }
  grep -qxF "tpufleet: output cut: --group keeps 1 MiB of each worker and 64 MiB in all;\
 ex-0/w0 printed more ($((big - 1048576)) bytes left out); run exec without --group to see\
 everything" "$tmp/big-group.err" || { big_shows big-group; return 1; }
  kib_under "$tmp/big-group.rss" 64 || { big_shows big-group; return 1; }
}
check "--group: 1 MiB of it in the block, a line saying how much was left out; < 64 MiB" \
  big_group
big_json() {
  local name=big-json
  /usr/bin/time -v -o "$tmp/$name.time" timeout 240 "$bin" exec ex-0:0 --json \
    -- sh -c "$big_cmd" >"$tmp/$name.out" 2>"$tmp/$name.err" &
  tf_pid=$!
  wait "$tf_pid" || { cat "$tmp/$name.err"; return 1; }
  awk -F': ' '/Maximum resident/ { print $2 }' "$tmp/$name.time" >"$tmp/$name.rss"
  jq -e --argjson cut $((big - 1048576)) '.truncated == true and .ok == true and
      (.workers[0] | .truncated == true and (.stdout | length) == 1048576 and
       .dropped_bytes.stdout == $cut and .dropped_bytes.stderr == 0)' "$tmp/$name.out" >/dev/null ||
    { head -c 300 "$tmp/$name.out"; cat "$tmp/$name.err"; return 1; }
  grep -qF -- '--json keeps 1 MiB of each stream' "$tmp/$name.err" ||
    { cat "$tmp/$name.err"; return 1; }
  kib_under "$tmp/$name.rss" 64 || { echo "RSS $(cat "$tmp/$name.rss") KiB"; return 1; }
}
check "--json: 1 MiB of stdout, truncated true and the bytes dropped; < 64 MiB" big_json
