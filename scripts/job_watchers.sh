# Sourced by the demo, test/jobs_e2e.sh and bench/agent_lib.sh.
# job_watchers STATE_DIR: the pids of the gang watchers (`tpufleet jobs --watch ID`, each
# in a session of its own) that `run` started for the tpufleet whose state dir is
# STATE_DIR, found by the TPUFLEET_STATE_DIR in their environment.
job_watchers() {
  local p
  for p in $(pgrep -f "jobs --watch j"); do
    tr '\0' '\n' <"/proc/$p/environ" 2>/dev/null | grep -qxF "TPUFLEET_STATE_DIR=$1" && echo "$p"
  done
}
