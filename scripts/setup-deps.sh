#!/usr/bin/env bash
# Installs every build and test dependency of tpufleet from Debian's packages.
# Idempotent: when everything is already installed it changes nothing and asks no
# package server; otherwise it runs `apt-get update` first, then installs what is missing.
# Then the emulator's fidelity tests get Google's Node.js clients and the browser test
# puppeteer-core from the npm registry (`npm ci --prefix test/fidelity` and
# test/browser), again only when they are missing or the lock changed.
#
# Usage: scripts/setup-deps.sh [--bench]
#   --bench  also the peers bench/fanout.sh measures tpufleet against: pdsh (and pdcp),
#            parallel-ssh (pssh), ClusterShell (clush) and Ansible (ansible-core)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)

bench=0
for arg in "$@"; do
  case $arg in
    --bench) bench=1 ;;
    *) echo "usage: $0 [--bench]" >&2; exit 2 ;;
  esac
done

packages=(
  # build
  g++ cmake ninja-build make pkg-config
  # libraries
  libyaml-cpp-dev nlohmann-json3-dev libcurl4-openssl-dev libsqlite3-dev libcpp-httplib-dev libssl-dev libssh2-1-dev
  # the state store on PostgreSQL (src/store/postgres_store.cc: libpq), and the server
  # the store tests start for themselves (src/store/testing/postgres_server.h: initdb,
  # postgres, createdb, psql, pg_isready)
  libpq-dev postgresql
  # libtpu's runtime metrics service (src/tpu_metrics): gRPC and protobuf, the compiler
  # and gRPC's plugin; the static agent links gRPC's archives, which need c-ares', RE2's
  # and zlib's too (their .a files are in these -dev packages)
  libgrpc++-dev libprotobuf-dev protobuf-compiler protobuf-compiler-grpc libc-ares-dev libre2-dev zlib1g-dev
  # tests and fuzzing (libFuzzer ships in libclang-rt-14-dev)
  googletest libgtest-dev libgmock-dev clang libclang-rt-14-dev
  # benchmarks
  hyperfine
  # the emulator's worker hosts: network namespaces, veths, a real sshd per worker, the
  # guest agent's useradd, sudo for the default user, and ssh/curl for their tests
  iproute2 openssh-server openssh-client passwd sudo procps curl
  # the node agent's metadata guard (src/agent/host/metadata_guard.cc) runs nft on the
  # workers, and its tests in a network namespace of their own; without nft it falls back
  # to iptables (metadata_guard_iptables.cc, tested with nft hidden)
  nftables iptables
  # the fleet end-to-end test reads the CLI's and the API's JSON
  jq
  # e2e.serve_ssh gives serve a wrong host key by editing its store with SQLite's shell;
  # e2e.exec measures tpufleet's own CPU with GNU time (skipped without either)
  sqlite3 time
  # the team server's tests read its certificate and make another with OpenSSL's tool
  # (server_test, e2e.serve_remote)
  openssl
  # the monitoring tests: a real Prometheus scrapes the agents; bench/ reads a worker's
  # TPU metrics the way tpu-info does (Python and grpcio, for /usr/bin/python3)
  prometheus python3-grpcio python3-protobuf
  # cp's relay hop runs python3 on the workers (the emulator's workers use this /usr)
  python3
  # the emulator's fidelity tests: Node.js (this machine's nodejs package ships npm)
  nodejs
  # the dashboard's browser test (test/dashboard_e2e.sh) drives it headless
  chromium
)
if ((bench)); then
  # bench/fanout.sh's peers (Debian's builds; pdcp needs pdsh on the workers too, which
  # the emulator's workers get since they overlay the machine's /usr)
  packages+=(pdsh pssh clustershell ansible-core)
fi

# npm ci for test/DIR when node_modules is missing or package-lock.json changed (its
# hash is kept in node_modules/.tpufleet-lock-sha256): Google's clients for the
# emulator's fidelity tests (test/fidelity), puppeteer-core for the dashboard's browser
# test (test/browser; it drives Debian's chromium, downloading no browser).
install_node_modules() {
  local dir=$root/test/$1 want
  local stamp=$dir/node_modules/.tpufleet-lock-sha256
  [[ -f $dir/package-lock.json ]] || return 0
  if ! command -v npm >/dev/null; then
    echo "setup-deps: npm not found; the tests of test/$1 will be skipped" >&2
    return 0
  fi
  want=$(sha256sum "$dir/package-lock.json" | cut -d' ' -f1)
  if [[ -d $dir/node_modules && -f $stamp && $(cat "$stamp") == "$want" ]]; then
    return 0
  fi
  echo "setup-deps: npm ci --prefix test/$1" >&2
  npm ci --prefix "$dir" --no-audit --no-fund --ignore-scripts --loglevel=error >/dev/null
  echo "$want" >"$stamp"
}
install_node_packages() {
  install_node_modules fidelity
  install_node_modules browser
}

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed'; then
    missing+=("$p")
  fi
done
if ((${#missing[@]} == 0)); then
  install_node_packages
  exit 0
fi

sudo=()
if [[ $(id -u) -ne 0 ]]; then
  command -v sudo >/dev/null || { echo "setup-deps: need root (or sudo) to install: ${missing[*]}" >&2; exit 1; }
  sudo=(sudo)
fi
echo "setup-deps: installing ${missing[*]}" >&2
# Installing openssh-server (or prometheus) would start the machine's own sshd (or
# Prometheus) through invoke-rc.d. The emulator runs one sshd per worker inside its
# namespaces and wants none on the machine, and the tests start their own Prometheus, so
# a policy-rc.d that forbids starting services stands in for the install (only when the
# machine has none of its own) and any sshd the package started anyway is stopped.
policy=/usr/sbin/policy-rc.d
made_policy=0
if [[ ! -e $policy ]]; then
  printf '#!/bin/sh\nexit 101\n' | "${sudo[@]}" tee "$policy" >/dev/null
  "${sudo[@]}" chmod 755 "$policy"
  made_policy=1
fi
cleanup_policy() { if ((made_policy)); then "${sudo[@]}" rm -f "$policy"; fi; }
trap cleanup_policy EXIT
"${sudo[@]}" apt-get update -qq
DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
if [[ " ${missing[*]} " == *" openssh-server "* ]]; then
  # Just installed, so any machine sshd running now was started by the install.
  if [[ -f /run/sshd.pid ]]; then
    "${sudo[@]}" kill "$(cat /run/sshd.pid)" 2>/dev/null || true
  fi
  if command -v systemctl >/dev/null && [[ -d /run/systemd/system ]]; then
    "${sudo[@]}" systemctl disable --now ssh.service ssh.socket >/dev/null 2>&1 || true
  fi
fi
install_node_packages
