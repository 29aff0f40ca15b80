#!/usr/bin/env bash
# The end-to-end comparison (issue 8): Andromeda (two andromedad) against the Linux kernel's
# VXLAN (bridge + vxlan device per host) on the same namespace topology, in the same run:
# UDP packets per second at 64 and 1500 bytes, TCP throughput (iperf3, 1 and 4 streams), UDP
# request/response latency at 10k requests/s, and the datapath's CPU time per packet.
#   --quick       1 run, 3-second measurements (about 90 s in all)
#   --out FILE    JSON result (default bench/results/e2e.json)
#   --runs N      runs in full mode (default 3; medians with min/max)
#   --build DIR   the build directory to use (default build/, configured Release if new)
#   --ceiling     also measure the topology's ceiling: plain tc redirects over the fast path's
#                 hops, without and with an empty XDP program on the underlays (docs/performance.md);
#                 with --ipv6, for IPv6 tenants (docs/ipv6.md)
#   --north-south instead, the north-south scenario (issue 28): a tenant reaching an "outside"
#                 namespace through its VPC's NAT gateway, the kernel (VXLAN + bridge, nftables
#                 `snat to`) against two andromedad, fast path on and off: TCP 1 and 4 streams,
#                 ping RTT, UDP request/response, new TCP connections per second
#                 (default --out bench/results/e2e-north-south.json; needs nftables' nft)
#   --security-groups  instead, security groups (issue 29): the same VPC without a policy and with
#                 a group of 10, 100 and 1000 rules, beside the kernel's VXLAN: packets per second,
#                 TCP, and new TCP connections per second (default --out
#                 bench/results/e2e-security-groups.json)
#   --ipv6        instead, IPv6 tenants (issue 30): the VPC dual-stack, its tenants by SLAAC,
#                 beside the kernel's VXLAN carrying the same IPv6 tenants: TCP 1 and 4 streams
#                 and ping RTT over IPv6 (default --out bench/results/e2e-ipv6.json)
#   --ipv6-underlay  the underlay IPv6 (fd00:1::/64; with --ipv6, IPv6 tenants over it):
#                 Andromeda's fast path and its pipeline beside the kernel's VXLAN over IPv6:
#                 TCP 1 and 4 streams and ping RTT (default --out
#                 bench/results/e2e-ipv6-underlay.json, or e2e-ipv6-over-ipv6-underlay.json
#                 with --ipv6)
#   --ping-interval S  seconds between pings (default 0.005: the CPUs idle between echoes;
#                 0: back to back, the datapaths' own work with everything awake)
# Ratios: "ratios_*" divide the medians over runs; "paired_ratios_*" take each run's own ratio
# (the datapaths measured back to back) and give the median of those, with their range: the
# figure to quote where the machine drifts between runs, as an idle ping's RTT does here.
# Needs root (namespaces, XDP, AF_XDP); prints SKIP and exits 0 without it. Every namespace is
# andro-<pid>-*, removed on exit (also on INT/TERM) by the harness; see bench/e2e/.
set -euo pipefail
cd "$(dirname "$0")/.."

ARGS=()
OUT=
BUILD=build
while [ $# -gt 0 ]; do
  case "$1" in
    --quick) ARGS+=(--quick) ;;
    --out) OUT=$2; shift ;;
    --runs) ARGS+=(--runs "$2"); shift ;;
    --build) BUILD=$2; shift ;;
    --ceiling) CEILING=1 ;;
    --north-south) ARGS+=(--only ns-kernel,ns-andromeda,ns-andromeda-slow); NORTH_SOUTH=1 ;;
    --security-groups)
      ARGS+=(--only andromeda,andromeda-policy-10,andromeda-policy,andromeda-policy-1000,kernel-vxlan --tests pps,tcp,crr)
      SECURITY_GROUPS=1 ;;
    --ipv6) IPV6=1 ;;
    --ipv6-underlay) IPV6_UNDERLAY=1 ;;
    --ping-interval) ARGS+=(--ping-interval "$2"); shift ;;
    -h|--help) sed -n '2,36p' "$0"; exit 0 ;;
    *) echo "bench-e2e.sh: unknown option '$1' (try --help)" >&2; exit 2 ;;
  esac
  shift
done

CEILING_IMPLS=${CEILING:+,ceiling,ceiling-xdp}
# Over an IPv6 underlay the ceiling, which encapsulates nothing, would measure the IPv4-underlay
# topology's again, so --ceiling adds nothing there.
if [ -n "${IPV6_UNDERLAY:-}" ]; then
  ARGS+=(--ipv6-underlay --only andromeda,andromeda-slow,kernel-vxlan --tests tcp,ping)
  if [ -n "${IPV6:-}" ]; then ARGS+=(--ipv6); fi
elif [ -n "${IPV6:-}" ]; then
  ARGS+=(--ipv6 --only "andromeda,andromeda-slow,kernel-vxlan$CEILING_IMPLS" --tests tcp,ping)
elif [ -n "${CEILING:-}" ] && [ -z "${NORTH_SOUTH:-}${SECURITY_GROUPS:-}" ]; then
  ARGS+=(--only "andromeda,andromeda-slow,kernel-vxlan$CEILING_IMPLS")
fi

if [ -z "$OUT" ]; then
  if [ -n "${IPV6_UNDERLAY:-}" ] && [ -n "${IPV6:-}" ]; then OUT=bench/results/e2e-ipv6-over-ipv6-underlay.json
  elif [ -n "${IPV6_UNDERLAY:-}" ]; then OUT=bench/results/e2e-ipv6-underlay.json
  elif [ -n "${NORTH_SOUTH:-}" ]; then OUT=bench/results/e2e-north-south.json
  elif [ -n "${SECURITY_GROUPS:-}" ]; then OUT=bench/results/e2e-security-groups.json
  elif [ -n "${IPV6:-}" ]; then OUT=bench/results/e2e-ipv6.json
  else OUT=bench/results/e2e.json; fi
fi

if [ "$(id -u)" != 0 ]; then
  echo "SKIP: bench-e2e.sh needs root (network namespaces, XDP, AF_XDP)"
  exit 0
fi
if ! ip netns list >/dev/null 2>&1 || ! command -v iperf3 >/dev/null; then
  echo "SKIP: bench-e2e.sh needs iproute2 network namespaces and iperf3"
  exit 0
fi
if [ -n "${NORTH_SOUTH:-}" ] && ! command -v nft >/dev/null; then
  echo "SKIP: bench-e2e.sh --north-south needs nftables' nft for the kernel's NAT (scripts/install-deps.sh)"
  exit 0
fi

if [ ! -f "$BUILD/build.ninja" ]; then
  cmake -S . -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release > "$BUILD.configure.log" 2>&1 || { cat "$BUILD.configure.log"; exit 1; }
fi
ninja -C "$BUILD" -j2 andromeda-e2e >/dev/null

# The harness owns the namespaces (andro-<pid>-*) and removes them on exit and on signals;
# this trap only forwards INT/TERM to it.
HARNESS_PID=
cleanup() { [ -n "$HARNESS_PID" ] && kill -TERM "$HARNESS_PID" 2>/dev/null; wait 2>/dev/null || true; }
trap cleanup EXIT INT TERM
mkdir -p "$(dirname "$OUT")"
"$BUILD/bench/e2e/andromeda-e2e" "${ARGS[@]}" --out "$OUT" >/dev/null &
HARNESS_PID=$!
RC=0
wait "$HARNESS_PID" || RC=$?
HARNESS_PID=
exit $RC
