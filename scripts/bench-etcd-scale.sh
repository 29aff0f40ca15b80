#!/usr/bin/env bash
# The fleet fabric at scale (issue 16): a 3-member etcd cluster in the underlay namespace,
# 100,000 endpoints, 20 andromedad (each in its own namespace, XDP attached) watching it. Measures
# each daemon's initial sync, the latency of 1,000 single changes from etcd's commit to the entry
# in every daemon's BPF map (p50, p99, max), a burst of 10,000 changes, and each daemon's memory.
#   scripts/bench-etcd-scale.sh [--daemons N] [--endpoints N] [--changes N] [--burst N] [--out FILE]
# Defaults as above; JSON to bench/results/etcd_scale.json. Needs root and Debian's etcd-server;
# builds build/ (RelWithDebInfo) if needed. docs/performance.md has the figures and what bounds them.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ "$(id -u)" -ne 0 ]; then echo "SKIP: needs root (namespaces, XDP)"; exit 0; fi
BUILD=${BUILD:-build}
if [ ! -f "$BUILD/build.ninja" ]; then
  cmake -S . -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo > /dev/null
fi
ninja -C "$BUILD" andromeda-etcd-scale andromedad > /dev/null
mkdir -p bench/results
args=("$@")
have_out=0
for a in "${args[@]}"; do [ "$a" = "--out" ] && have_out=1; done
[ $have_out -eq 1 ] || args+=(--out bench/results/etcd_scale.json)
exec "$BUILD/bench/e2e/andromeda-etcd-scale" "${args[@]}"
