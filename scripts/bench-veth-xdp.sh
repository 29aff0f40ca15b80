#!/usr/bin/env bash
# What an XDP program on the receiving veth costs one TCP flow, per family (issue 30): two
# namespaces joined by one veth pair and nothing else, iperf3 (1 stream) over IPv4 and over IPv6 in
# turn, first with nothing attached, then with the least XDP program there is on the receiving end
# (andromeda-forward --xdp-pass: XDP_PASS in generic mode, the mode andromedad's prefilter runs in
# on a veth underlay). No Andromeda code is on the path: it measures what this kernel's generic XDP
# does to each family on this machine (docs/ipv6.md, "What bounds IPv6's TCP ratio"). A third case
# keeps the empty program and adds RPS on the receiving end over every CPU (what andromedad sets on
# its tenant ports, [node] tenant_rps): each flow then goes through one CPU's backlog in the order
# it was sent, and the loss the second case shows is gone (docs/fastpath.md, "A tenant's flow in
# order").
#   --runs N      runs, each measuring every case (default 5); medians with min/max
#   --seconds S   length of each iperf3 run (default 5)
#   --out FILE    JSON result (default bench/results/veth-xdp-family.json)
#   --build DIR   the build directory holding andromeda-forward (default build/)
#   --pin CPUS    run both iperf3 ends on these CPUs only (taskset -c CPUS, e.g. 0): the veth's
#                 backlog and the flow's softirq work then stay on them too
# Needs root and iperf3; prints SKIP and exits 0 without them. Its namespaces are avx-<pid>-a and
# avx-<pid>-b, removed on exit (also on INT/TERM).
set -euo pipefail
cd "$(dirname "$0")/.."

RUNS=5
SECONDS_PER_RUN=5
OUT=bench/results/veth-xdp-family.json
BUILD=build
PIN=
while [ $# -gt 0 ]; do
  case "$1" in
    --runs) RUNS=$2; shift ;;
    --seconds) SECONDS_PER_RUN=$2; shift ;;
    --out) OUT=$2; shift ;;
    --build) BUILD=$2; shift ;;
    --pin) PIN=$2; shift ;;
    -h|--help) sed -n '2,19p' "$0"; exit 0 ;;
    *) echo "bench-veth-xdp.sh: unknown option '$1' (try --help)" >&2; exit 2 ;;
  esac
  shift
done
case "$RUNS$SECONDS_PER_RUN" in *[!0-9]*|'') echo "bench-veth-xdp.sh: --runs and --seconds take whole numbers" >&2; exit 2 ;; esac

if [ "$(id -u)" != 0 ]; then
  echo "SKIP: bench-veth-xdp.sh needs root (network namespaces, XDP)"
  exit 0
fi
TASKSET=()
if [ -n "$PIN" ]; then
  TASKSET=(taskset -c "$PIN")
  "${TASKSET[@]}" true 2>/dev/null || { echo "bench-veth-xdp.sh: --pin $PIN: not a CPU list taskset takes here" >&2; exit 2; }
fi
if ! command -v iperf3 >/dev/null; then
  echo "SKIP: bench-veth-xdp.sh needs iperf3 (scripts/install-deps.sh)"
  exit 0
fi
if [ ! -f "$BUILD/build.ninja" ]; then
  cmake -S . -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release > "$BUILD.configure.log" 2>&1 || { cat "$BUILD.configure.log"; exit 1; }
fi
ninja -C "$BUILD" -j2 andromeda-forward >/dev/null
FORWARD=$BUILD/bench/e2e/andromeda-forward

RESULTS=$(mktemp)
A=avx-$$-a
B=avx-$$-b
FORWARD_PID=
SERVER_PID=
cleanup() {
  set +e
  stop_forward
  if [ -n "$SERVER_PID" ]; then kill "$SERVER_PID" 2>/dev/null; wait "$SERVER_PID" 2>/dev/null; fi
  ip netns del "$A" 2>/dev/null
  ip netns del "$B" 2>/dev/null
  [ -n "${RESULTS:-}" ] && rm -f "$RESULTS" "$RESULTS.forward"
  return 0
}
# The empty XDP program on B's eth0, for as long as andromeda-forward runs (it detaches on exit).
start_forward() {
  ip netns exec "$B" "$FORWARD" --xdp-pass eth0 > "$RESULTS.forward" 2>&1 &
  FORWARD_PID=$!
  for _ in $(seq 50); do grep -q '^ready' "$RESULTS.forward" 2>/dev/null && return 0; sleep 0.1; done
  cat "$RESULTS.forward" >&2
  return 1
}
stop_forward() {
  if [ -n "$FORWARD_PID" ]; then kill "$FORWARD_PID" 2>/dev/null; wait "$FORWARD_PID" 2>/dev/null; fi
  FORWARD_PID=
  return 0
}
# RPS on B's eth0 (its one RX queue): ip netns exec mounts a sysfs of B's own for the command.
# rps_cpus takes comma-separated 32-bit hex words, the most significant first ("f,ffffffff" for
# 36 CPUs); one shell integer would overflow past 62.
cpu_mask() {
  local n=$1 out='' word
  while [ "$n" -gt 0 ]; do
    if [ "$n" -ge 32 ]; then word=ffffffff; n=$(( n - 32 )); else word=$(printf '%x' $(( (1 << n) - 1 ))); n=0; fi
    out=$word${out:+,$out}
  done
  echo "$out"
}
ALL_CPUS=$(cpu_mask "$(nproc --all)")
set_rps() { ip netns exec "$B" sh -c "echo $1 > /sys/class/net/eth0/queues/rx-0/rps_cpus"; }
trap cleanup EXIT
trap 'exit 130' INT TERM

ip netns add "$A"
ip netns add "$B"
ip link add "avx$$a" netns "$A" type veth peer name "avx$$b" netns "$B"
ip -n "$A" link set "avx$$a" name eth0
ip -n "$B" link set "avx$$b" name eth0
for ns in "$A" "$B"; do
  ip netns exec "$ns" sysctl -q -w net.ipv6.conf.all.disable_ipv6=0 net.ipv6.conf.default.disable_ipv6=0 \
    net.ipv6.conf.eth0.disable_ipv6=0 >/dev/null
  ip -n "$ns" link set lo up
  ip -n "$ns" link set eth0 up
done
ip -n "$A" addr add 10.99.0.1/24 dev eth0
ip -n "$B" addr add 10.99.0.2/24 dev eth0
ip -n "$A" addr add fd99::1/64 dev eth0 nodad
ip -n "$B" addr add fd99::2/64 dev eth0 nodad
ip netns exec "$B" "${TASKSET[@]}" iperf3 -s >/dev/null 2>&1 &
SERVER_PID=$!
for _ in $(seq 50); do
  ip netns exec "$A" ping -c 1 -W 1 10.99.0.2 >/dev/null 2>&1 && ip netns exec "$A" ping -6 -c 1 -W 1 fd99::2 >/dev/null 2>&1 && break
  sleep 0.2
done

# One iperf3 run: prints "<run> <case> <family> <Gbit/s> <retransmits>".
measure() {
  local run=$1 case=$2 family=$3 dst=$4 json
  for _ in 1 2 3; do  # the server may still be closing the previous run
    if json=$(ip netns exec "$A" "${TASKSET[@]}" iperf3 -J -t "$SECONDS_PER_RUN" -c "$dst" 2>/dev/null); then
      python3 -c 'import json,sys; e=json.load(sys.stdin)["end"]; print(*sys.argv[1:4], e["sum_received"]["bits_per_second"]/1e9, e["sum_sent"]["retransmits"])' \
        "$run" "$case" "$family" <<<"$json"
      return 0
    fi
    sleep 1
  done
  echo "bench-veth-xdp.sh: iperf3 to $dst failed three times" >&2
  return 1
}
# Each run measures every case, so that the machine's slower and faster moments fall on all of them.
for i in $(seq "$RUNS"); do
  for case in none xdp-generic xdp-generic-rps; do
    [ "$case" != none ] && start_forward
    set_rps "$([ "$case" = xdp-generic-rps ] && echo "$ALL_CPUS" || echo 0)"
    measure "$i" "$case" ipv4 10.99.0.2 >> "$RESULTS"
    measure "$i" "$case" ipv6 fd99::2 >> "$RESULTS"
    stop_forward
    echo "bench-veth-xdp.sh: run $i/$RUNS, $case: $(tail -2 "$RESULTS" | awk '{printf "%s %.2f Gbit/s  ", $3, $4}')" >&2
  done
done
mkdir -p "$(dirname "$OUT")"
python3 - "$RESULTS" "$OUT" "$(uname -r)" "$RUNS" "$SECONDS_PER_RUN" "$PIN" <<'PY'
import json, statistics, sys
rows = [l.split() for l in open(sys.argv[1]) if l.strip()]
cases, by_run = {}, {}
for run, case, family, gbps, retrans in rows:
    c = cases.setdefault((case, family), {"gbps": [], "retransmits": []})
    c["gbps"].append(float(gbps))
    c["retransmits"].append(int(retrans))
    by_run[(run, case, family)] = float(gbps)
out = {"kernel": sys.argv[3], "runs": int(sys.argv[4]), "seconds": int(sys.argv[5]), "pinned_to": sys.argv[6] or None, "tcp": []}
for (case, family), c in sorted(cases.items()):
    out["tcp"].append({"xdp": case, "family": family, "gbps_median": round(statistics.median(c["gbps"]), 2),
                       "gbps_min": round(min(c["gbps"]), 2), "gbps_max": round(max(c["gbps"]), 2), "gbps": c["gbps"],
                       "retransmits": c["retransmits"]})
# IPv6 against IPv4 within each run (the two measured back to back), then the median of those:
# the machine's slow spells, which the medians of the rates alone let through, cancel out.
out["ipv6_over_ipv4"] = {}
for case in ("none", "xdp-generic", "xdp-generic-rps"):
    ratios = [by_run[(r, case, "ipv6")] / by_run[(r, case, "ipv4")] for r in sorted({k[0] for k in by_run}, key=int)]
    out["ipv6_over_ipv4"][case] = {"median": round(statistics.median(ratios), 2), "per_run": [round(x, 2) for x in ratios]}
json.dump(out, open(sys.argv[2], "w"), indent=2)
for r in out["tcp"]:
    print(f'{r["xdp"]:12s} {r["family"]}: {r["gbps_median"]:6.2f} Gbit/s ({r["gbps_min"]:.2f}-{r["gbps_max"]:.2f})')
for case, r in out["ipv6_over_ipv4"].items():
    print(f'IPv6 / IPv4, {case}: {r["median"]} (per run: {", ".join(map(str, r["per_run"]))})')
PY
