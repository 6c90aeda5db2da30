# Shared by the end-to-end scripts (sourced after they set $bin and $tmp): TAP-like
# checks, notes, and tpufleet run so that a signal to the script reaches its traps.

# Ends a tpufleet this script started and that still runs (pid checked, not reused).
end_ours() {
  [[ -n $1 ]] && tr '\0' ' ' 2>/dev/null <"/proc/$1/cmdline" | grep -qF "$bin" && kill "-$2" "$1" 2>/dev/null
}

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

# curl with the owner's token of the emulator in $TPUFLEET_EMULATOR_DIR: it answers
# nothing without it (issue 10). Read at each call, since each start makes a new one;
# the header comes from a file descriptor, so the token is in no process's argv.
ecurl() {
  curl -H @<(printf 'Authorization: Bearer %s\n' "$(<"$TPUFLEET_EMULATOR_DIR/token")") "$@"
}
