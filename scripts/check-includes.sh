#!/usr/bin/env bash
# Checks every project #include against the module dependency table of STYLE.md, and that
# no HTTP or SQLite library header appears in a header above util/store. CMake link lists
# alone would not stop a stray include. Usage: scripts/check-includes.sh [SRC_DIR]
set -euo pipefail
src=${1:-$(dirname "$0")/../src}
declare -A allowed=(
  [util]=""                [core]="util"              [api]="core util"
  [ssh]="core util"        [store]="core util"        [provider]="core util ssh"
  [control]="core api provider ssh store util"        [server]="control api core util"
  [agent]="api core util"  [emulator]="core util"     [cli]="control api core util"
)
bad=0
while IFS= read -r file; do
  rel=${file#"$src"/}
  mod=${rel%%/*}
  [[ $mod == app ]] && continue   # app wires everything together; nothing includes app
  if [[ -z ${allowed[$mod]+set} ]]; then
    echo "$rel: module '$mod' is not in the dependency table (scripts/check-includes.sh)"; bad=1; continue
  fi
  while IFS=: read -r line inc; do
    dep=${inc%%/*}
    [[ $dep == "$mod" ]] && continue
    if [[ " ${allowed[$mod]} " != *" $dep "* ]]; then
      echo "$rel:$line: $mod may not include \"$inc\" (allowed: ${allowed[$mod]:-nothing})"; bad=1
    fi
  done < <(grep -noE '^#include "[^"]+"' "$file" | sed -E 's/:#include "/:/; s/"$//')
  if [[ $file == *.h && $mod != util && $mod != store ]] &&
     grep -qE '^#include <(httplib\.h|sqlite3\.h|curl/|libpq-fe\.h)' "$file"; then
    echo "$rel: an HTTP or SQLite library header in a header above util/store"; bad=1
  fi
done < <(find "$src" -name '*.h' -o -name '*.cc' | sort)
if ((bad)); then exit 1; fi
echo "include rules: ok ($(find "$src" -name '*.h' -o -name '*.cc' | wc -l) files)"
