#!/usr/bin/env bash
# The soak benchmark (issue 32, "Proof"), run by hand: SECONDS (default 1800) of everything at
# once on two hosts, then a summary; exit status 1 when a check failed.
#
#   t10 ns: 10.0.0.10 ── host1 [node1]  eth1 192.168.1.1 ══ underlay veth ══ eth1 192.168.1.2  [gw] host2 ── t20 ns: 10.0.0.20
#   t30 ns: 10.0.0.30 ── host1 (an endpoint reloads add and remove)          eth2 203.0.113.2 ── outside ns: 203.0.113.1
#                                                                                     host2 ── t21 ns: 10.0.0.21 (the flooder)
#
# gw is VPC blue's NAT gateway (its uplink eth2, NAT address 203.0.113.10). Meanwhile:
#   - well-behaved tenants: pings every 10 ms t10 -> t20 (east-west), t10 -> outside and
#     t20 -> outside (through the NAT); iperf3 TCP t10 -> t20 and t10 -> outside, rate-limited;
#   - a reload of both daemons every RELOAD_EVERY s (5), adding and removing endpoint 10.0.0.30
#     by turns (andromedactl reload);
#   - node1's daemon killed (kill -9) and restarted every minute (halfway, in runs under 120 s);
#   - t21 floods UDP at full rate to 10.0.0.99, an address of the VPC no endpoint has.
# Checks: no ping of the well-behaved tenants lost; both iperf3 flows run to the end; every
# reload of a running daemon applied; each daemon's RSS and open descriptors, sampled every 5 s,
# flat within each process (from 10 s after its start, the last sample at most 16 MiB + 25 %
# RSS and 8 descriptors above the first); gw's counters account for what reached the flooder's
# port within 5 % (flood_account). node1's counters and memory start again with each restart;
# gw's daemon runs throughout, so its figures cover the whole run. At the end both daemons are
# stopped with SIGTERM: each must exit 0, and a sanitizer build's report fails the soak.
#
# Options: --build DIR (default build/; andromedad and andromedactl are built there if missing).
# Needs root; prints SKIP and exits 0 without it. Everything lives in namespaces
# andro-soak-<pid>-*, with node names s<pid>-*, removed on exit (also on INT/TERM); leftovers of
# a run killed outright are swept by the next.
set -euo pipefail
cd "$(dirname "$0")/.."

DURATION=1800
BUILD=build
while [ $# -gt 0 ]; do
  case "$1" in
    --build) BUILD=$2; shift ;;
    -h|--help) sed -n '2,27p' "$0"; exit 0 ;;
    [0-9]*) DURATION=$1 ;;
    *) echo "soak.sh: unknown option '$1' (try --help)" >&2; exit 2 ;;
  esac
  shift
done
if [ "$DURATION" -lt 20 ]; then echo "soak.sh: SECONDS must be at least 20" >&2; exit 2; fi

if [ "$(id -u)" != 0 ]; then
  echo "SKIP: soak.sh needs root (network namespaces, XDP, AF_XDP)"
  exit 0
fi
for tool in ip ping iperf3 nsenter python3; do
  command -v "$tool" >/dev/null || { echo "SKIP: soak.sh needs $tool (scripts/install-deps.sh)"; exit 0; }
done

RELOAD_EVERY=${RELOAD_EVERY:-5}
SAMPLE_EVERY=5
KILL_EVERY=60
[ "$DURATION" -lt 120 ] && KILL_EVERY=$((DURATION / 2))
PING_COUNT=$((DURATION * 100))
RSS_SLACK_KB=16384     # RSS bound: first sample + 16 MiB + 25 %
FD_SLACK=8
FLOOD_ACCOUNTED_PERCENT=5

ID=$$
PREFIX=andro-soak
NODE1=s$ID-node1 GW=s$ID-gw
WORK=/tmp/$PREFIX-$ID
DAEMON=$BUILD/userspace/daemon/andromedad
CTL=$BUILD/userspace/ctl/andromedactl
ns() { echo "$PREFIX-$ID-$1"; }
in_ns() { local n=$1; shift; nsenter --net="/run/netns/$(ns "$n")" "$@"; }
# In the background, nsenter itself (not a shell function, which would fork a subshell): it execs
# the command, so $! is the command's PID and stopping it stops the command.
log() { printf '[%5ds] %s\n' $(( $(date +%s) - ${STARTED:-$(date +%s)} )) "$*"; }

declare -A DAEMON_PID=() INCARNATION=()
BACKGROUND=()
NAMESPACES=(host1 host2 outside t10 t20 t21 t30)

STOP_RC=0
stop_pid() {  # pid: TERM, up to 20 s, then KILL; its exit status in STOP_RC
  local pid=$1
  STOP_RC=0
  kill -0 "$pid" 2>/dev/null || return 0
  kill -TERM "$pid" 2>/dev/null || true
  for _ in $(seq 200); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
  kill -KILL "$pid" 2>/dev/null || true
  wait "$pid" 2>/dev/null || STOP_RC=$?
}

cleanup() {
  local status=$?
  trap - EXIT INT TERM
  for pid in "${BACKGROUND[@]}"; do stop_pid "$pid"; done
  for node in "${!DAEMON_PID[@]}"; do stop_pid "${DAEMON_PID[$node]}"; done
  for n in "${NAMESPACES[@]}"; do [ -e "/run/netns/$(ns "$n")" ] && ip netns del "$(ns "$n")"; done
  if [ "$status" -eq 0 ]; then rm -rf "$WORK"; else echo "soak.sh: logs kept in $WORK" >&2; fi
  exit "$status"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# Runs killed outright: their namespaces, daemons and pins (by their dead PIDs only).
sweep_stale_runs() {
  local n pid dir
  for n in $(ip netns list | awk '{print $1}' | grep "^$PREFIX-[0-9]*-" || true); do
    pid=${n#"$PREFIX-"}; pid=${pid%%-*}
    kill -0 "$pid" 2>/dev/null && continue
    for p in $(ip netns pids "$n" 2>/dev/null); do kill -KILL "$p" 2>/dev/null || true; done
    ip netns del "$n" 2>/dev/null || true
  done
  for dir in /sys/fs/bpf/andromeda/s[0-9]*-node1 /sys/fs/bpf/andromeda/s[0-9]*-gw; do
    [ -d "$dir" ] || continue
    pid=${dir##*/s}; pid=${pid%%-*}
    kill -0 "$pid" 2>/dev/null || rm -rf "$dir"
  done
}

if [ ! -x "$DAEMON" ] || [ ! -x "$CTL" ]; then
  if [ ! -f "$BUILD/build.ninja" ]; then
    cmake -S . -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo > "$BUILD.configure.log" 2>&1 ||
      { cat "$BUILD.configure.log"; exit 1; }
  fi
  ninja -C "$BUILD" andromedad andromedactl >/dev/null
fi
sweep_stale_runs
mkdir -p "$WORK"

# --- topology ---------------------------------------------------------------------------------
for n in "${NAMESPACES[@]}"; do
  ip netns add "$(ns "$n")"
  in_ns "$n" ip link set lo up
  in_ns "$n" sysctl -qw net.ipv6.conf.all.disable_ipv6=1
done
ip link add eth1 netns "$(ns host1)" type veth peer name eth1 netns "$(ns host2)"
in_ns host1 ip addr add 192.168.1.1/24 dev eth1
in_ns host2 ip addr add 192.168.1.2/24 dev eth1
ip link add eth2 netns "$(ns host2)" type veth peer name eth0 netns "$(ns outside)"
in_ns host2 ip addr add 203.0.113.2/24 dev eth2
in_ns host2 ip addr add 203.0.113.10/32 dev eth2   # the NAT address: the kernel answers ARP for it
in_ns outside ip addr add 203.0.113.1/24 dev eth0
for pair in host1:eth1 host2:eth1 host2:eth2 outside:eth0; do in_ns "${pair%%:*}" ip link set "${pair#*:}" up; done
add_tenant() {  # host, last octet
  ip link add "tap-blue-$2" netns "$(ns "$1")" type veth peer name eth0 netns "$(ns "t$2")" address "02:00:00:00:00:$2"
  in_ns "$1" ip link set "tap-blue-$2" up
  in_ns "t$2" ip addr add "10.0.0.$2/24" dev eth0
  in_ns "t$2" ip link set eth0 up
  in_ns "t$2" ip route add default via 10.0.0.1
}
add_tenant host1 10
add_tenant host1 30
add_tenant host2 20
add_tenant host2 21

# --- configs: both nodes see the same fabric; "with30" adds endpoint 10.0.0.30 -------------------
write_config() {  # self name, self address, with30 (0/1), path
  local self=$1 address=$2 with30=$3 path=$4 octet node
  {
    printf '[node]\nname = "%s"\nunderlay = "eth1"\naddress = "%s"\n' "$self" "$address"
    [ "$self" = "$GW" ] && printf '[node.uplink]\ninterface = "eth2"\naddress = "203.0.113.2"\nnext_hop = "203.0.113.1"\n'
    printf '[[nodes]]\nname = "%s"\naddress = "192.168.1.1"\n' "$NODE1"
    printf '[[nodes]]\nname = "%s"\naddress = "192.168.1.2"\n' "$GW"
    printf '[[vpc]]\nname = "blue"\nvni = 100\ncidr = "10.0.0.0/24"\ngateway = "10.0.0.1"\n'
    printf '[vpc.nat]\ngateway_node = "%s"\naddress = "203.0.113.10"\nport_range = [20000, 59999]\n' "$GW"
    for octet in 10 20 21; do
      node=$GW; [ "$octet" = 10 ] && node=$NODE1
      printf '[[vpc.endpoint]]\nip = "10.0.0.%s"\nmac = "02:00:00:00:00:%s"\nnode = "%s"\nport = "tap-blue-%s"\n' \
        "$octet" "$octet" "$node" "$octet"
    done
    [ "$with30" = 1 ] && printf '[[vpc.endpoint]]\nip = "10.0.0.30"\nmac = "02:00:00:00:00:30"\nnode = "%s"\nport = "tap-blue-30"\n' "$NODE1"
    true
  } > "$path.tmp"
  mv "$path.tmp" "$path"
}
declare -A CONFIG=([$NODE1]=$WORK/node1.toml [$GW]=$WORK/gw.toml)
declare -A HOST=([$NODE1]=host1 [$GW]=host2)
declare -A ADDRESS=([$NODE1]=192.168.1.1 [$GW]=192.168.1.2)
WITH30=1
write_configs() { for node in "$NODE1" "$GW"; do write_config "$node" "${ADDRESS[$node]}" "$WITH30" "${CONFIG[$node]}"; done; }
write_configs

# Starts `node`'s daemon; true once it is ready, false (its log said why) when it exits first or
# is not ready within 30 s.
try_start_daemon() {
  local node=$1 n log
  n=$(( ${INCARNATION[$node]:-0} + 1 ))
  INCARNATION[$node]=$n
  log=$WORK/$node.$n.log
  # nsenter execs andromedad: $! is the daemon's PID.
  nsenter --net="/run/netns/$(ns "${HOST[$node]}")" "$DAEMON" -c "${CONFIG[$node]}" > "$log" 2>&1 &
  DAEMON_PID[$node]=$!
  for _ in $(seq 300); do
    grep -qs " ready: " "$log" && return 0
    kill -0 "${DAEMON_PID[$node]}" 2>/dev/null || return 1
    sleep 0.1
  done
  stop_pid "${DAEMON_PID[$node]}"
  return 1
}
# The same, up to 3 attempts a second apart: a failed start is counted (and fails the soak), the
# soak goes on. Exits when none succeeds.
START_FAILURES=()
start_daemon() {
  local node=$1 attempt
  for attempt in 1 2 3; do
    try_start_daemon "$node" && return 0
    START_FAILURES+=("$node #${INCARNATION[$node]}: $(grep -h "cannot start\|error" "$WORK/$node.${INCARNATION[$node]}.log" | tail -n 1)")
    log "start of $node failed (attempt $attempt): ${START_FAILURES[-1]}"
    sleep 1
  done
  echo "soak.sh: $node did not start; its last log:" >&2
  cat "$WORK/$node.${INCARNATION[$node]}.log" >&2
  exit 1
}

ctl() { local node=$1; shift; "$CTL" --node "$node" "$@"; }

# Where the flooder's frames went, from gw's `stats --json` before and after and the kernel's
# counters of the punt pair: every frame freed unsent is counted once by the layer that freed it
# (xdp, fastpath, decap, io: io's drop_handler is the pipeline's and NAT's drops, whose reasons
# their own layers break down), or lost on the way to the pipeline (the AF_XDP sockets' ring full
# or no fill buffer: io's xsk_rx_ring_full and xsk_rx_dropped; the punt pair's veth queue full).
# Prints the figures; exits 1 when they differ from what reached the port by more than $3 %.
flood_account() {  # registry, stats before, stats after, reached, punt pair drops, percent
  python3 - "$@" <<'PY'
import json, sys
registry, before, after = (json.load(open(f)) for f in sys.argv[1:4])
reached, pair_drops, percent = int(sys.argv[4]), int(sys.argv[5]), float(sys.argv[6])
def delta(counter):
    group, name = counter.split(".", 1)
    return int(after.get(group, {}).get(name, 0)) - int(before.get(group, {}).get(name, 0))
freed = {r["counter"]: delta(r["counter"]) for r in registry if r["layer"] in ("xdp", "fastpath", "decap", "io")}
why = {r["counter"]: delta(r["counter"]) for r in registry if r["layer"] not in ("xdp", "fastpath", "decap", "io")}
lost = delta("io.xsk_rx_ring_full") + delta("io.xsk_rx_dropped")
accounted = sum(freed.values()) + lost + pair_drops
top = lambda d: ", ".join(f"{c} +{n}" for c, n in sorted(d.items(), key=lambda x: -x[1]) if n > 0) or "none"
print(f"    counted: {sum(freed.values())} freed unsent ({top(freed)}; why: {top(why)}), "
      f"{lost} lost at the AF_XDP sockets, {pair_drops} at the punt pair: {accounted} of {reached} "
      f"({100.0 * accounted / max(reached, 1):.2f} %)")
sys.exit(0 if reached > 0 and abs(accounted - reached) * 100 <= reached * percent else 1)
PY
}
link_counter() {  # namespace, interface, rx|tx, packets|dropped
  in_ns "$1" ip -j -s link show "$2" | python3 -c "import json,sys; print(json.load(sys.stdin)[0]['stats64']['$3']['$4'])"
}

# --- start ------------------------------------------------------------------------------------
ctl "$NODE1" drops --json > "$WORK/registry.json"
start_daemon "$GW"
start_daemon "$NODE1"
for t in "t10 10.0.0.20" "t10 203.0.113.1" "t20 203.0.113.1" "t30 10.0.0.20" "t21 10.0.0.1"; do
  set -- $t
  for _ in $(seq 50); do in_ns "$1" ping -c 1 -W 1 "$2" >/dev/null 2>&1 && break; sleep 0.2; done
  in_ns "$1" ping -c 1 -W 1 "$2" >/dev/null || { echo "soak.sh: $1 cannot reach $2 before the soak" >&2; exit 1; }
done

STARTED=$(date +%s)
log "soak for ${DURATION} s: reload every ${RELOAD_EVERY} s, kill -9 of $NODE1 every ${KILL_EVERY} s, flooder t21"
nsenter --net="/run/netns/$(ns t20)" iperf3 -s > "$WORK/iperf3-server-t20.log" 2>&1 & BACKGROUND+=($!)
nsenter --net="/run/netns/$(ns outside)" iperf3 -s > "$WORK/iperf3-server-outside.log" 2>&1 & BACKGROUND+=($!)
sleep 0.5
declare -A PING_LOG=()
ping_bg() {  # tenant, destination
  local f=$WORK/ping-$1-$2.log
  nsenter --net="/run/netns/$(ns "$1")" ping -i 0.01 -c "$PING_COUNT" -W 2 -q "$2" > "$f" 2>&1 &
  PING_LOG[$!]=$f
  BACKGROUND+=($!)
}
ping_bg t10 10.0.0.20
ping_bg t10 203.0.113.1
ping_bg t20 203.0.113.1
PING_PIDS=("${!PING_LOG[@]}")
nsenter --net="/run/netns/$(ns t10)" iperf3 -c 10.0.0.20 -t "$DURATION" -b 100M -f m > "$WORK/iperf3-east-west.log" 2>&1 &
IPERF_EW=$!
nsenter --net="/run/netns/$(ns t10)" iperf3 -c 203.0.113.1 -t "$DURATION" -b 50M -f m > "$WORK/iperf3-nat.log" 2>&1 &
IPERF_NAT=$!
BACKGROUND+=("$IPERF_EW" "$IPERF_NAT")

# The flooder: 64-byte UDP datagrams to 10.0.0.99 as fast as one tenant can send them, to the
# distributed gateway's MAC (nothing answers ARP for an address no endpoint has).
gateway_mac=$(in_ns t21 ip -j neigh show 10.0.0.1 dev eth0 | python3 -c "import json,sys; print(json.load(sys.stdin)[0]['lladdr'])")
in_ns t21 ip neigh replace 10.0.0.99 lladdr "$gateway_mac" dev eth0 nud permanent
ctl "$GW" stats --json > "$WORK/gw-stats-before.json"
punt_pair=anp$(in_ns host2 ip -j link show tap-blue-21 | python3 -c "import json,sys; print(json.load(sys.stdin)[0]['ifindex'])")
flood_tx_before=$(link_counter t21 eth0 tx packets)
flood_rx_before=$(link_counter host2 tap-blue-21 rx packets)
pair_drops_before=$(link_counter host2 "$punt_pair" tx dropped)
nsenter --net="/run/netns/$(ns t21)" python3 -c '
import socket
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
payload, to = bytes(64), ("10.0.0.99", 9)
while True:
    try: s.sendto(payload, to)
    except OSError: pass
' & FLOODER=$!
BACKGROUND+=("$FLOODER")

# --- the soak loop ------------------------------------------------------------------------------
SAMPLES=$WORK/samples.tsv  # second, node, incarnation, rss kB, fds
reloads_ok=0 reloads_failed=0 reloads_skipped=0 kills=0 restart_ms_max=0
next_reload=$RELOAD_EVERY next_kill=$KILL_EVERY next_sample=0
sample() {
  local now=$1 node pid
  for node in "$NODE1" "$GW"; do
    pid=${DAEMON_PID[$node]}
    [ -r "/proc/$pid/status" ] || continue
    printf '%s\t%s\t%s\t%s\t%s\n' "$now" "$node" "${INCARNATION[$node]}" \
      "$(awk '/^VmRSS:/{print $2}' "/proc/$pid/status")" "$(ls "/proc/$pid/fd" | wc -l)" >> "$SAMPLES"
  done
}
pings_running() { for p in "${PING_PIDS[@]}"; do kill -0 "$p" 2>/dev/null && return 0; done; return 1; }
while pings_running; do
  now=$(( $(date +%s) - STARTED ))
  if [ "$now" -ge "$next_sample" ]; then sample "$now"; next_sample=$((now + SAMPLE_EVERY)); fi
  if [ "$now" -ge "$next_reload" ] && [ "$now" -lt "$DURATION" ]; then
    WITH30=$((1 - WITH30))
    write_configs
    for node in "$NODE1" "$GW"; do
      if out=$(ctl "$node" reload 2>&1); then
        reloads_ok=$((reloads_ok + 1))
      elif ! kill -0 "${DAEMON_PID[$node]}" 2>/dev/null; then
        reloads_skipped=$((reloads_skipped + 1))
      else
        reloads_failed=$((reloads_failed + 1))
        log "reload of $node failed: $out"
      fi
    done
    next_reload=$((now + RELOAD_EVERY))
  fi
  if [ "$now" -ge "$next_kill" ] && [ "$now" -lt "$((DURATION - 5))" ]; then
    killed_at=$(date +%s%N)
    kill -KILL "${DAEMON_PID[$NODE1]}"
    wait "${DAEMON_PID[$NODE1]}" 2>/dev/null || true
    start_daemon "$NODE1"
    ms=$(( ($(date +%s%N) - killed_at) / 1000000 ))
    [ "$ms" -gt "$restart_ms_max" ] && restart_ms_max=$ms
    kills=$((kills + 1))
    log "kill -9 $NODE1, restarted (#${INCARNATION[$NODE1]}) and ready in $ms ms"
    next_kill=$((now + KILL_EVERY))
  fi
  sleep 0.2
done
sample "$(( $(date +%s) - STARTED ))"

kill -TERM "$FLOODER" 2>/dev/null || true
wait "$FLOODER" 2>/dev/null || true
sleep 1.5  # the last punted frames drained and counted
flood_tx=$(( $(link_counter t21 eth0 tx packets) - flood_tx_before ))
flood_rx=$(( $(link_counter host2 tap-blue-21 rx packets) - flood_rx_before ))
pair_drops=$(( $(link_counter host2 "$punt_pair" tx dropped) - pair_drops_before ))
ctl "$GW" stats --json > "$WORK/gw-stats-after.json"
for p in "$IPERF_EW" "$IPERF_NAT"; do wait "$p" 2>/dev/null || true; done
# Both daemons stopped the operator's way, so a sanitizer build reports what it found at exit.
declare -A STOP_STATUS=()
for node in "$NODE1" "$GW"; do
  stop_pid "${DAEMON_PID[$node]}"
  STOP_STATUS[$node]=$STOP_RC
done

# --- summary ----------------------------------------------------------------------------------
FAILED=()
echo
echo "soak.sh $DURATION: $(( $(date +%s) - STARTED )) s, $kills kill -9 of $NODE1 (restart to ready: at most ${restart_ms_max} ms), reloads: $reloads_ok applied, $reloads_failed failed, $reloads_skipped skipped (daemon restarting)"
[ "$reloads_failed" -eq 0 ] || FAILED+=("$reloads_failed reload(s) of a running daemon failed")
for f in "${START_FAILURES[@]}"; do FAILED+=("a start failed: $f"); done
for pid in "${PING_PIDS[@]}"; do
  f=${PING_LOG[$pid]}
  line=$(grep "packets transmitted" "$f" || echo "no summary")
  what=${f##*/ping-}; what=${what%.log}
  echo "  ping ${what/-/ -> } every 10 ms: $line"
  sent=$(sed -n 's/^\([0-9]*\) packets transmitted, \([0-9]*\) received.*/\1/p' "$f")
  got=$(sed -n 's/^\([0-9]*\) packets transmitted, \([0-9]*\) received.*/\2/p' "$f")
  if [ -z "$sent" ] || [ "$sent" != "$got" ]; then FAILED+=("ping ${what/-/ -> }: ${line}"); fi
done
for f in east-west nat; do
  line=$(grep -E "sender$" "$WORK/iperf3-$f.log" | tail -n 1 | sed 's/  */ /g')
  echo "  iperf3 TCP $f: ${line:-did not finish: $(tail -n 2 "$WORK/iperf3-$f.log" | tr '\n' ' ')}"
  [ -n "$line" ] || FAILED+=("iperf3 $f did not run to the end")
done
# A sanitizer's allocator keeps freed memory in quarantine (ASan: up to 256 MiB): RSS says
# nothing there, descriptors still do.
grep -q "__asan_init\|__tsan_init" "$DAEMON" && RSS_SLACK_KB=$((1 << 30)) &&
  echo "  (a sanitizer build: RSS is not bounded, its allocator's quarantine grows it)"
python3 - "$SAMPLES" "$RSS_SLACK_KB" "$FD_SLACK" > "$WORK/memory.txt" <<'EOF' || FAILED+=("$(grep -h '^FAIL' "$WORK/memory.txt" | tr '\n' ' ')")
import sys
rows = [l.split("\t") for l in open(sys.argv[1]).read().splitlines()]
slack_kb, fd_slack, bad = int(sys.argv[2]), int(sys.argv[3]), False
for node in dict.fromkeys(r[1] for r in rows):
    mine = [(int(r[0]), int(r[2]), int(r[3]), int(r[4])) for r in rows if r[1] == node]
    incarnations = dict.fromkeys(m[1] for m in mine)
    rss, fds = [m[2] for m in mine], [m[3] for m in mine]
    print(f"  {node} ({len(incarnations)} incarnation(s), {len(mine)} samples): RSS first {rss[0] // 1024} MiB, "
          f"last {rss[-1] // 1024} MiB, max {max(rss) // 1024} MiB; descriptors first {fds[0]}, last {fds[-1]}, max {max(fds)}")
    # Within each incarnation, from 10 s after its first sample (start-up's allocations settle).
    for n in incarnations:
        own = [m for m in mine if m[1] == n]
        settled = [m for m in own if m[0] >= own[0][0] + 10]
        if len(settled) < 2:
            continue
        first, last = settled[0], settled[-1]
        rss_bound, fd_bound = first[2] + slack_kb + first[2] // 4, first[3] + fd_slack
        if last[2] > rss_bound or last[3] > fd_bound:
            print(f"FAIL {node} #{n}: from {first[0]} s to {last[0]} s RSS {first[2]} -> {last[2]} kB (bound {rss_bound}), "
                  f"descriptors {first[3]} -> {last[3]} (bound {fd_bound})")
            bad = True
sys.exit(1 if bad else 0)
EOF
grep -v '^FAIL' "$WORK/memory.txt" || true
echo "  flooder t21 (64-byte UDP to 10.0.0.99, no endpoint's): sent $flood_tx frames, $flood_rx reached tap-blue-21"
flood_account "$WORK/registry.json" "$WORK/gw-stats-before.json" "$WORK/gw-stats-after.json" "$flood_rx" "$pair_drops" \
  "$FLOOD_ACCOUNTED_PERCENT" ||
  FAILED+=("$GW's counters account for the flood's frames with more than ${FLOOD_ACCOUNTED_PERCENT} % off")
for node in "$NODE1" "$GW"; do
  [ "${STOP_STATUS[$node]}" -eq 0 ] || FAILED+=("$node: exit status ${STOP_STATUS[$node]} on SIGTERM")
  if grep -qE "ERROR: AddressSanitizer|runtime error:|WARNING: ThreadSanitizer" "$WORK/$node".*.log; then
    FAILED+=("$node: a sanitizer reported (see its log)")
  fi
done
if [ "${#FAILED[@]}" -gt 0 ]; then
  echo "FAIL:"
  printf '  - %s\n' "${FAILED[@]}"
  exit 1
fi
echo "PASS"
