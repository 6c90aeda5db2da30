# shellcheck shell=bash
# The fleet spec the emulator benches keep (bench/fleet.sh, serve_api.sh), sourced: COUNT
# single-host nodes (v5litepod-4) in one zone, so that each bench measures the same fleet.

# single_host_spec FILE FLEET COUNT [SETUP]: writes the spec to FILE; SETUP, when given,
# is the nodes' setup command (one line).
single_host_spec() {
  {
    echo "fleet: $2"
    echo "provider: emulator"
    echo "nodes:"
    echo "  - name: n"
    echo "    type: v5litepod-4"
    echo "    count: $3"
    echo "    zones: [us-west4-a]"
    if [[ -n ${4:-} ]]; then echo "    setup: $4"; fi
  } >"$1"
}
