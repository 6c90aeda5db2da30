# Shared by the scripts that drive Google's gcloud against the emulator (issue 15);
# sourced after test/e2e_lib.sh. gcloud is a real peer here, never a fake: these
# scripts skip (exit 77, with the reason) where it is not installed, as on CI's fresh
# Debian. gcloud never sees a real configuration or credential: each run has its own
# throwaway CLOUDSDK_CONFIG, and its token is the emulator's.
#
# A script's order:
#   source "$(dirname "$0")/e2e_lib.sh"; source "$(dirname "$0")/gcloud_lib.sh"
#   bin=$(realpath "$1"); gcloud_require; e2e_require jq curl …; e2e_home NAME
#   trap 'gcloud_end; e2e_end' EXIT; trap 'exit 143' TERM INT HUP
#   check_emulator_starts; gcloud_env
#   gc create compute tpus tpu-vm create n1 --zone="$zone" …   # gcloud ARGS, kept
#   check "create prints the node" gc_ok create
#   check "describe says READY" gc_jq describe '.state == "READY"'
#   check "list shows it" gc_prints list '^n1 +us-central2-b'

# gcloud_require: exits 77 (skipped) with the reason unless gcloud is installed (and
# runs: a broken install is a skip too, with what it said).
gcloud_require() {
  if ! command -v gcloud >/dev/null; then
    echo "SKIP: gcloud (the Google Cloud SDK) is not installed: the gcloud tests need Google's own CLI"
    exit 77
  fi
  local v cfg rc=0
  cfg=$(mktemp -d)  # a throwaway config, removed at once
  v=$(CLOUDSDK_CONFIG=$cfg timeout 60 gcloud version 2>&1) || rc=$?
  rm -rf "$cfg"
  if ((rc != 0)); then
    echo "SKIP: gcloud is installed but \`gcloud version\` fails: $(head -c 300 <<<"$v")"
    exit 77
  fi
}

# gcloud_env [PROJECT]: after check_emulator_starts (which sets $ep): a throwaway
# CLOUDSDK_CONFIG in $tmp, the endpoint overrides of the Cloud TPU API and of the
# Compute Engine API pointed at this run's emulator, its token file as gcloud's access
# token, the project ($project unless given) and no prompts, surveys, update checks or
# usage reports. The zone is not set: commands pass --zone="$zone" as a user's script
# would.
gcloud_env() {
  export CLOUDSDK_CONFIG=$tmp/gcloud-config
  mkdir -p "$CLOUDSDK_CONFIG"
  export CLOUDSDK_API_ENDPOINT_OVERRIDES_TPU=$ep
  export CLOUDSDK_API_ENDPOINT_OVERRIDES_COMPUTE=${ep}compute/v1/
  export CLOUDSDK_AUTH_ACCESS_TOKEN_FILE=$TPUFLEET_EMULATOR_DIR/token
  export CLOUDSDK_CORE_PROJECT=${1:-$project}
  export CLOUDSDK_CORE_DISABLE_PROMPTS=1 CLOUDSDK_SURVEY_DISABLE_PROMPTS=1
  export CLOUDSDK_COMPONENT_MANAGER_DISABLE_UPDATE_CHECK=1
  export CLOUDSDK_CORE_DISABLE_USAGE_REPORTING=1
  unset CLOUDSDK_COMPUTE_ZONE CLOUDSDK_COMPUTE_REGION CLOUDSDK_CORE_ACCOUNT
  gc_pid=""
}

# gc NAME ARGS...: `gcloud ARGS...` (in the background, as tf, so that a signal to the
# script runs its traps at once; at most ${gc_timeout:-300} s) with stdout, stderr and
# the exit status in $tmp/NAME.{out,err,rc}. `shows NAME` prints them (e2e_lib.sh),
# `rc_is NAME STATUS` checks the status.
gc() {
  local name=$1
  shift
  timeout "${gc_timeout:-300}" gcloud "$@" >"$tmp/$name.out" 2>"$tmp/$name.err" &
  gc_pid=$!
  wait "$gc_pid"
  echo $? >"$tmp/$name.rc"
  gc_pid=""
  return 0
}

# gcloud_end: ends the gcloud a signal interrupted (gc's, if it still runs); call it in
# the exit trap before e2e_end.
gcloud_end() {
  [[ -n ${gc_pid:-} ]] && kill -TERM "$gc_pid" 2>/dev/null
  gc_pid=""
  return 0
}

# gc_ok NAME: the gcloud run NAME exited 0 (else shows it).
gc_ok() { rc_is "$1" 0 || { shows "$1"; return 1; }; }

# gc_fails NAME PATTERN: the run NAME exited non-zero and its stderr matches the
# extended regular expression PATTERN (gcloud's one-line ERROR: of the API's message).
gc_fails() {
  if rc_is "$1" 0 || ! grep -Eq -- "$2" "$tmp/$1.err"; then
    shows "$1"
    return 1
  fi
}

# gc_jq NAME EXPR: the run NAME exited 0 and `jq -e EXPR` is true of its stdout (run it
# with --format=json).
gc_jq() {
  gc_ok "$1" || return 1
  jq -e "$2" "$tmp/$1.out" >/dev/null || {
    echo "jq -e '$2' is not true of:"
    shows "$1"
    return 1
  }
}

# gc_prints NAME PATTERN [FILE]: the run NAME exited 0 and a line of its stdout (of its
# stderr with FILE=err: gcloud tells progress and "Created ..." there) matches the
# extended regular expression PATTERN.
gc_prints() {
  gc_ok "$1" || return 1
  grep -Eq -- "$2" "$tmp/$1.${3:-out}" || {
    echo "no line matches /$2/ in $1.${3:-out}:"
    shows "$1"
    return 1
  }
}
