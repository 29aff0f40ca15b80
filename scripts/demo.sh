#!/usr/bin/env bash
# The Andromeda demo: two hosts joined by an underlay, one tenant on each, a VPC between them.
#
#   tenant10 ns: eth0 10.0.0.10 ──veth── host1 ns: tap-blue-10 [andromedad node1] eth1 192.168.1.1 ─┐
#                                                                                            underlay veth
#   tenant20 ns: eth0 10.0.0.20 ──veth── host2 ns: tap-blue-20 [andromedad node2] eth1 192.168.1.2 ─┘
#
# Builds if needed, creates the namespaces (names carry this script's PID), starts andromedad
# from configs/node1.toml and configs/node2.toml in the host namespaces, pings 10.0.0.10 ->
# 10.0.0.20 through the overlay (no static ARP: the distributed gateway answers), moves some TCP,
# shows andromedactl and bpftool views, decodes captured overlay traffic, and tears everything
# down — also on Ctrl-C or failure. Idempotent: re-running starts from scratch, and leftovers of
# a run that was killed outright are swept first. Needs root.
set -euo pipefail
cd "$(dirname "$0")/.."

step() { printf '\n==> %s\n' "$*"; }
run() { printf '  $ %s\n' "$*"; "$@"; }
in_ns() { local ns=$1; shift; nsenter --net="/run/netns/$ns" "$@"; }

if [ "$(id -u)" -ne 0 ]; then
  echo "demo.sh: needs root (network namespaces, XDP, AF_XDP); run: sudo $0" >&2
  exit 1
fi

PREFIX=andro-demo
ID=$$
NS_HOST1=$PREFIX-$ID-host1 NS_HOST2=$PREFIX-$ID-host2
NS_TENANT10=$PREFIX-$ID-tenant10 NS_TENANT20=$PREFIX-$ID-tenant20
WORK=/tmp/$PREFIX-$ID
DAEMON=build/userspace/daemon/andromedad
CTL=build/userspace/ctl/andromedactl
PIDS=()

# Stops what this run started (its daemons by PID, then its namespaces) and removes its files.
cleanup() {
  local status=$?
  trap - EXIT INT TERM
  step "teardown"
  for pid in "${PIDS[@]}"; do
    if kill -0 "$pid" 2>/dev/null; then
      echo "  stopping $(cat "/proc/$pid/comm" 2>/dev/null || echo process) (pid $pid)"
      kill -TERM "$pid" 2>/dev/null || true
      for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
      kill -KILL "$pid" 2>/dev/null || true
    fi
  done
  for ns in "$NS_TENANT10" "$NS_TENANT20" "$NS_HOST1" "$NS_HOST2"; do
    [ -e "/run/netns/$ns" ] && { echo "  ip netns del $ns"; ip netns del "$ns"; }
  done
  rm -rf "$WORK"
  echo "  done"
  exit "$status"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# A run killed with SIGKILL could not tear down: remove its namespaces (and the daemons in them).
sweep_stale_runs() {
  local ns pid
  for ns in $(ip netns list | awk '{print $1}' | grep "^$PREFIX-[0-9]*-" || true); do
    pid=${ns#"$PREFIX-"}; pid=${pid%%-*}
    kill -0 "$pid" 2>/dev/null && continue
    echo "  removing $ns (its demo run, pid $pid, is gone)"
    for p in $(ip netns pids "$ns" 2>/dev/null); do kill -TERM "$p" 2>/dev/null || true; done
    sleep 0.5
    ip netns del "$ns" 2>/dev/null || true
  done
}

wait_for_log() {
  local file=$1 text=$2 pid=$3
  for _ in $(seq 200); do
    grep -q -- "$text" "$file" 2>/dev/null && return 0
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.1
  done
  echo "demo.sh: andromedad did not become ready; its log:" >&2
  cat "$file" >&2
  return 1
}

step "dependencies (what the demo needs; scripts/test.sh installs the rest)"
scripts/install-deps.sh --demo

step "build andromedad and andromedactl (build/)"
if [ ! -f build/build.ninja ]; then
  cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo > build.configure.log 2>&1 || { cat build.configure.log; exit 1; }
fi
ninja -C build andromedad andromedactl

step "leftovers of earlier runs"
sweep_stale_runs
mkdir -p "$WORK"

step "topology: two host namespaces joined by an underlay veth pair, a tenant namespace on each"
for ns in "$NS_HOST1" "$NS_HOST2" "$NS_TENANT10" "$NS_TENANT20"; do
  run ip netns add "$ns"
  in_ns "$ns" ip link set lo up
  in_ns "$ns" sysctl -qw net.ipv6.conf.all.disable_ipv6=1  # no router solicitations in the counters
done
run ip link add eth1 netns "$NS_HOST1" type veth peer name eth1 netns "$NS_HOST2"
run in_ns "$NS_HOST1" ip addr add 192.168.1.1/24 dev eth1
run in_ns "$NS_HOST2" ip addr add 192.168.1.2/24 dev eth1
in_ns "$NS_HOST1" ip link set eth1 up
in_ns "$NS_HOST2" ip link set eth1 up
add_tenant() {  # host namespace, tenant namespace, port name, last octet
  run ip link add "$3" netns "$1" type veth peer name eth0 netns "$2" address "02:00:00:00:00:$4"
  in_ns "$1" ip link set "$3" up
  run in_ns "$2" ip addr add "10.0.0.$4/24" dev eth0
  in_ns "$2" ip link set eth0 up  # offloads stay at the kernel's defaults (TSO, TX checksum on)
}
add_tenant "$NS_HOST1" "$NS_TENANT10" tap-blue-10 10
add_tenant "$NS_HOST2" "$NS_TENANT20" tap-blue-20 20

step "check the configs against the hosts"
run in_ns "$NS_HOST1" "$DAEMON" -c configs/node1.toml --check
run in_ns "$NS_HOST2" "$DAEMON" -c configs/node2.toml --check

step "start andromedad node1 and node2 (nsenter --net: the BPF pins stay visible from here)"
start_node() {  # host namespace, node number
  local log=$WORK/node$2.log
  printf '  $ nsenter --net=/run/netns/%s %s -c configs/node%s.toml > %s 2>&1 &\n' "$1" "$DAEMON" "$2" "$log"
  # nsenter itself (not a shell function) in the background: it execs andromedad, so $! is its PID.
  nsenter --net="/run/netns/$1" "$DAEMON" -c "configs/node$2.toml" > "$log" 2>&1 &
  PIDS+=("$!")
  wait_for_log "$log" " ready: " "$!"
  sed 's/^/    /' "$log"
}
start_node "$NS_HOST1" 1
start_node "$NS_HOST2" 2

step "ping 10.0.0.10 -> 10.0.0.20 through the overlay (no static ARP)"
run in_ns "$NS_TENANT10" ping -c 5 -i 0.2 10.0.0.20
echo "  the tenant's ARP entry for its peer is the distributed gateway's MAC:"
run in_ns "$NS_TENANT10" ip neigh show 10.0.0.20

step "TCP through the overlay (iperf3, 3 s)"
in_ns "$NS_TENANT20" iperf3 -s -1 -D --logfile "$WORK/iperf3-server.log" --pidfile "$WORK/iperf3.pid"
for _ in $(seq 50); do [ -s "$WORK/iperf3.pid" ] && break; sleep 0.1; done
PIDS+=("$(cat "$WORK/iperf3.pid")")
# Captured whole, not piped into `grep -q`: under pipefail a reader that stops early fails the
# writer with SIGPIPE (exit 141).
for _ in $(seq 50); do [[ $(in_ns "$NS_TENANT20" ss -Hltn 'sport = :5201') == *5201* ]] && break; sleep 0.1; done
run in_ns "$NS_TENANT10" iperf3 -c 10.0.0.20 -t 3 -f m | tail -n 4

step "andromedactl status / stats / fabric (node1)"
run "$CTL" --node node1 status
run "$CTL" --node node1 stats
run "$CTL" --node node1 fabric

step "the BPF maps, by name (bpftool reads the pins from outside the namespace)"
run bpftool map dump pinned /sys/fs/bpf/andromeda/node1/fabric
run bpftool map dump pinned /sys/fs/bpf/andromeda/node1/daemon_stats

step "andromedactl inspect   # a synthesised Andromeda overlay packet, decoded layer by layer"
run "$CTL" inspect
CAPTURE=tests/data/light-andromeda/underlay.pcap
if [ -r "$CAPTURE" ]; then
  step "andromedactl inspect --pcap $CAPTURE   # real traffic from the reference implementation (first 3 frames)"
  # awk reads to the end and prints up to frame 4: an early `exit` would SIGPIPE inspect (141).
  "$CTL" inspect --pcap "$CAPTURE" | awk '/^# frame 4 /{done = 1} !done'
  frames=$("$CTL" inspect --json --pcap "$CAPTURE" | grep -c '"frame"')
  echo "... $frames frames in all, every checksum verified"
fi
