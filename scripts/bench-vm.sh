#!/usr/bin/env bash
# Issue 31's benchmarks: a virtual machine as a tenant (bench/e2e/vm_bench.cpp, docs/vm-tenants.md).
# In one run, on the same namespace topology, Andromeda (two andromedad, the VM on a tap port)
# beside the kernel's bridge + VXLAN carrying the same VM:
#   - TCP from the VM (QEMU, busybox nc from /dev/zero) to a tenant on the other host, with the
#     guest's virtio-net offloads on and off: Gbit/s and the host's CPU per Gbit/s;
#   - DHCP lease time from Andromeda's gateway beside busybox udhcpd;
#   - DNS queries per second through the gateway: a VPC name it answers, a name it forwards,
#     and the upstream resolver queried directly.
#   --quick       1 run, 3-second TCP measurements (about 2 minutes)
#   --runs N      runs (default 3; medians with min/max)
#   --out FILE    JSON result (default bench/results/vm.json)
#   --build DIR   the build directory to use (default build/, configured Release if new)
# Needs root, qemu-system-x86_64 and busybox (scripts/install-deps.sh); prints SKIP and exits 0
# without them. The guest runs under TCG on machines without a usable KVM, which bounds its TCP
# (docs/vm-tenants.md says how to read the figures).
set -euo pipefail
cd "$(dirname "$0")/.."

ARGS=()
OUT=bench/results/vm.json
BUILD=build
while [ $# -gt 0 ]; do
  case "$1" in
    --quick) ARGS+=(--runs 1 --seconds 3 --leases 5 --dns-seconds 1) ;;
    --runs) ARGS+=(--runs "$2"); shift ;;
    --out) OUT=$2; shift ;;
    --build) BUILD=$2; shift ;;
    -h|--help) sed -n '2,17p' "$0"; exit 0 ;;
    *) echo "bench-vm.sh: unknown option '$1' (try --help)" >&2; exit 2 ;;
  esac
  shift
done

if [ "$(id -u)" != 0 ]; then
  echo "SKIP: bench-vm.sh needs root (network namespaces, taps, XDP)"
  exit 0
fi
if [ ! -f "$BUILD/build.ninja" ]; then
  cmake -S . -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release > "$BUILD.configure.log" 2>&1 || { cat "$BUILD.configure.log"; exit 1; }
fi
ninja -C "$BUILD" -j2 andromeda-vm-bench >/dev/null

# The harness owns the namespaces (andro-<pid>-*) and QEMU, and removes them on exit and on
# signals; this trap only forwards INT/TERM to it.
HARNESS_PID=
cleanup() { [ -n "$HARNESS_PID" ] && kill -TERM "$HARNESS_PID" 2>/dev/null; wait 2>/dev/null || true; }
trap cleanup EXIT INT TERM
mkdir -p "$(dirname "$OUT")"
"$BUILD/bench/e2e/andromeda-vm-bench" "${ARGS[@]}" --out "$OUT" >/dev/null &
HARNESS_PID=$!
RC=0
wait "$HARNESS_PID" || RC=$?
HARNESS_PID=
[ "$RC" -eq 0 ] && python3 - "$OUT" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
print("TCP from the VM (Gbit/s, host CPU-seconds per Gbit):")
for r in d["tcp"]:
    print(f"  {r['impl']:14} offloads {r['offloads']:3}  {r['gbps']:.3f} ({r['gbps_min']:.3f}-{r['gbps_max']:.3f})"
          f"  cpu/Gbit {r['cpu_seconds_per_gbit']:.2f}  guest {r['guest_cpus']:.2f} CPUs")
for r in d["dhcp"]:
    print(f"DHCP lease  {r['impl']:16} {r['lease_ms']:.1f} ms (p90 {r['lease_ms_p90']:.1f})")
for r in d["dns"]:
    print(f"DNS {r['kind']:9} {r['impl']:15} {r['qps']:.0f} queries/s  p50 {r['p50_us']:.0f} us  p99 {r['p99_us']:.0f} us  lost {r['lost']:.0f}")
print("ratios:", json.dumps(d["ratios"]))
PY
exit $RC
