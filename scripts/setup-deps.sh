#!/usr/bin/env bash
# Installs every build and test dependency of tpufleet from Debian's packages.
# Idempotent: when everything is already installed it changes nothing and asks no
# package server; otherwise it runs `apt-get update` first, then installs what is missing.
set -euo pipefail

packages=(
  # build
  g++ cmake ninja-build make pkg-config
  # libraries
  libyaml-cpp-dev nlohmann-json3-dev
  # tests and fuzzing (libFuzzer ships in libclang-rt-14-dev)
  googletest libgtest-dev libgmock-dev clang libclang-rt-14-dev
  # benchmarks
  hyperfine
)

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed'; then
    missing+=("$p")
  fi
done
if ((${#missing[@]} == 0)); then
  exit 0
fi

sudo=()
if [[ $(id -u) -ne 0 ]]; then
  command -v sudo >/dev/null || { echo "setup-deps: need root (or sudo) to install: ${missing[*]}" >&2; exit 1; }
  sudo=(sudo)
fi
echo "setup-deps: installing ${missing[*]}" >&2
"${sudo[@]}" apt-get update -qq
DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
