#!/bin/bash
# Refuses process-wide mutable state in src/ (issue 11, "no globals"): a namespace-scope
# std::atomic, mutex or random engine, a function-local `static` one (the same thing,
# made on first use), or a volatile sig_atomic_t flag. State belongs to an object with a
# lifetime (the App, a command's run); constants (constexpr, const) are fine.
#
# Usage: check-globals.sh SRC_DIR. Exit 1 naming each offending line.
set -u
src=${1:?usage: check-globals.sh SRC_DIR}

# What is allowed, and why (path:pattern). Keep this list short.
allowed=(
  # The log level: read by every Log call from any thread, taken from TPUFLEET_LOG on
  # first use (tests set it); one atomic int every module would otherwise be handed.
  'util/log.cc:static std::atomic<int> level'
)

# A function-local static, a namespace-scope variable (unindented, as clang-format puts
# it), or a signal flag.
kinds='(atomic|mutex|shared_mutex|mt19937|mt19937_64|minstd_rand|default_random_engine)'
pattern="^\\s*static\\s+(std::)?${kinds}\\b|^(std::)?${kinds}(<[^>]*>)?\\s+\\w+\\s*(\\{|=|;)|sig_atomic_t"

status=0
while IFS= read -r hit; do
  ok=0
  for a in "${allowed[@]}"; do
    file=${a%%:*}
    text=${a#*:}
    if [[ $hit == *"$file:"* && $hit == *"$text"* ]]; then
      ok=1
    fi
  done
  if [[ $ok == 0 ]]; then
    echo "process-wide state (give it an owner; see scripts/check-globals.sh): $hit"
    status=1
  fi
done < <(cd "$src" && grep -rnE "$pattern" --include='*.cc' --include='*.h' . | sed 's|^\./||')
exit $status
