#!/usr/bin/env bash
# scripts/check-includes.sh against small trees: what it must refuse (an include across
# the map, a third-party header in a header of a module that does not own the library,
# emulator/hosts reaching into the emulator) and what it must let through.
# Usage: check_includes_test.sh path/to/scripts/check-includes.sh
set -euo pipefail
lint=$1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
tree() {  # tree NAME FILE=LINE...: a src tree of one-line files
  local root=$tmp/$1
  shift
  for spec in "$@"; do
    mkdir -p "$root/$(dirname "${spec%%=*}")"
    echo "${spec#*=}" >"$root/${spec%%=*}"
  done
  echo "$root"
}
refused() {  # refused WHAT TREE: the lint fails and names WHAT
  if bash "$lint" "$2" >"$tmp/out" 2>&1; then fail "accepted: $(cat "$tmp/out")"; fi
  grep -qF "$1" "$tmp/out" || fail "no '$1' in: $(cat "$tmp/out")"
}
ok=$(tree ok 'core/a.h=#include <yaml-cpp/yaml.h>' 'ssh/b.h=#include <libssh2.h>' \
  'store/c.h=#include <sqlite3.h>' 'cli/d.cc=#include <nlohmann/json.hpp>' \
  'cli/testing/e.h=#include <nlohmann/json.hpp>' 'emulator/hosts/f.h=#include "emulator/worker_hosts.h"' \
  'emulator/g.cc=#include "emulator/hosts/f.h"' 'app/h.cc=#include "emulator/g.h"')
bash "$lint" "$ok" >/dev/null || fail "refused a tree that keeps the rules: $(bash "$lint" "$ok")"
refused 'cli/x.h:1: <nlohmann/json.hpp> in a header of cli' "$(tree json 'cli/x.h=#include <nlohmann/json.hpp>')"
refused 'control/x.h:1: <libssh2.h> in a header of control' "$(tree ssh2 'control/x.h=#include <libssh2.h>')"
refused 'provider/x.h:1: <yaml-cpp/yaml.h>' "$(tree yaml 'provider/x.h=#include <yaml-cpp/yaml.h>')"
refused 'core/x.h:1: <sqlite3.h>' "$(tree sql 'core/x.h=#include <sqlite3.h>')"
refused 'cli/x.h:1: <httplib.h>' "$(tree http 'cli/x.h=#include <httplib.h>')"
refused 'ssh/x.h:1: <curl/curl.h>' "$(tree curl 'ssh/x.h=#include <curl/curl.h>')"
refused 'emulator/hosts may not include "emulator/api_server.h"' \
  "$(tree hosts 'emulator/hosts/x.cc=#include "emulator/api_server.h"')"
refused 'emulator may not include "cli/command.h"' "$(tree emu 'emulator/x.cc=#include "cli/command.h"')"
refused 'core may not include "store/x.h"' "$(tree core 'core/x.cc=#include "store/x.h"')"
echo "PASS"
