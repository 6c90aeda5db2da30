#!/usr/bin/env bash
# Checks every project #include against the module dependency table of
# docs/ARCHITECTURE.md, and that a third-party library's header appears in the headers
# (*.h) of the module that owns that library only, so no library type leaks through
# another module's interface. CMake link lists alone would not stop a stray include.
# Usage: scripts/check-includes.sh [SRC_DIR]
set -euo pipefail
src=${1:-$(dirname "$0")/../src}
# A module is a top-level folder of src/, or a sub-folder with a row of its own.
declare -A allowed=(
  [util]=""                [core]="util"              [api]="core util"
  [ssh]="core util"        [store]="core util"        [provider]="core util ssh"
  [control]="core api provider ssh store util"
  # `tpufleet serve`'s HTTP API: what the reconciler shows (reconcile/serve_view.h) and
  # what the store keeps (events, jobs), read through store.h.
  [server]="control api core util httpd reconcile store"
  # serve's reconciler: control's steps and seams, driven from one loop.
  [reconcile]="control core api provider ssh store util"
  # What the local HTTP servers share (the emulator's, serve's): bounded requests.
  [httpd]="util"
  [agent]="api core util agent/host agent/sampler agent/export tpu_metrics"
  [cli]="control api core util remote"
  # The CLI's side of a team server (`--server URL`): pinned certificate, token, one
  # command sent over util's HTTP client.
  [remote]="api util"
  [agent/host]="api core util"
  # What the agent samples of its worker (/proc, its jobs, the chips' metrics).
  [agent/sampler]="core util agent/host tpu_metrics"
  # What the agent shows outside its protocol (Prometheus' text, its HTTP server).
  [agent/export]="core util"
  [emulator]="api core util emulator/hosts httpd"
  # The worker hosts implement the one seam where the server meets them, and nothing else
  # of the emulator: a row entry may name a single header.
  [emulator/hosts]="util emulator/worker_hosts.h"
  # The stand-in program runs on a worker: it reads the chips' ids from the hosts' table,
  # and serves their runtime metrics as libtpu does.
  [emulator/standin]="util emulator/hosts/accelerators.h tpu_metrics"
  # libtpu's runtime metrics service: the agent's client, the stand-in's server.
  [tpu_metrics]="util"
)
# Third-party headers (an #include <…> prefix) and the modules whose headers may name
# them: util's HTTP client and JWTs (curl, loaded with dlopen; OpenSSL), core's YAML
# reader, store's SQLite, ssh's libssh2 engine, the emulator's HTTP server, and JSON where
# a module's job is a JSON wire format (util, api, the gcp-tpu provider, the emulator's
# API), and gRPC and protobuf (libtpu's metrics service). Test helpers (testing/) may
# include anything their module's tests link.
declare -A owners=(
  ["curl/"]="util"         ["openssl/"]="util"         ["yaml-cpp/"]="core"
  ["sqlite3.h"]="store"    ["libpq-fe.h"]="store"      ["libssh2"]="ssh"
  ["httplib.h"]="emulator server httpd"
  ["nlohmann/"]="util api provider emulator"
  ["grpc"]="tpu_metrics"   ["google/protobuf/"]="tpu_metrics"
)
module_of() {  # src-relative path -> its module (the longest row that contains it)
  local rel=$1 first=${1%%/*} rest=${1#*/}
  local second=${rest%%/*}
  if [[ $rest == */* && -n ${allowed[$first/$second]+set} ]]; then
    echo "$first/$second"
  else
    echo "$first"
  fi
}
bad=0
while IFS= read -r file; do
  rel=${file#"$src"/}
  mod=$(module_of "$rel")
  [[ $mod == app ]] && continue   # app wires everything together; nothing includes app
  if [[ -z ${allowed[$mod]+set} ]]; then
    echo "$rel: module '$mod' is not in the dependency table (scripts/check-includes.sh)"; bad=1; continue
  fi
  while IFS=: read -r line inc; do
    dep=$(module_of "$inc")
    [[ $dep == "$mod" ]] && continue
    if [[ " ${allowed[$mod]} " != *" $dep "* && " ${allowed[$mod]} " != *" $inc "* ]]; then
      echo "$rel:$line: $mod may not include \"$inc\" (allowed: ${allowed[$mod]:-nothing})"; bad=1
    fi
  done < <(grep -noE '^#include "[^"]+"' "$file" | sed -E 's/:#include "/:/; s/"$//')
  [[ $file == *.h && $rel != */testing/* ]] || continue
  while IFS=: read -r line inc; do
    for lib in "${!owners[@]}"; do
      if [[ $inc == "$lib"* && " ${owners[$lib]} " != *" $mod "* ]]; then
        echo "$rel:$line: <$inc> in a header of $mod; only ${owners[$lib]} may (include it in the .cc)"
        bad=1
      fi
    done
  done < <(grep -noE '^#include <[^>]+>' "$file" | sed -E 's/:#include </:/; s/>$//')
done < <(find "$src" -name '*.h' -o -name '*.cc' | sort)
if ((bad)); then exit 1; fi
echo "include rules: ok ($(find "$src" -name '*.h' -o -name '*.cc' | wc -l) files)"
