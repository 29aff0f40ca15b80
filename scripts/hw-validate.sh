#!/usr/bin/env bash
# Reports what this box can do for Andromeda and what it measures, unattended:
#   kernel and its BPF/XDP/AF_XDP config, CPU model and caches, whether perf has a PMU,
#   and per NIC: driver, queues, MTU, native XDP (attach tried), AF_XDP zero-copy (bind tried);
#   then runs the benchmarks that apply. Writes report.md and report.json.
#
#   sudo scripts/hw-validate.sh [--iface IF]... [--out DIR] [--skip-bench] [--dry-run]
#
# It touches only interfaces it creates (a veth pair in a namespace of its own, always probed as
# the baseline) and those named with --iface. On a VM with veth only and no PMU it says so.
set -euo pipefail
cd "$(dirname "$0")/.."

IFACES=()
OUT=""
DRY_RUN=0
SKIP_BENCH=0
while [ $# -gt 0 ]; do
  case "$1" in
    --iface) IFACES+=("$2"); shift ;;
    --out) OUT=$2; shift ;;
    --dry-run) DRY_RUN=1 ;;
    --skip-bench) SKIP_BENCH=1 ;;
    -h|--help) sed -n '2,11p' "$0"; exit 0 ;;
    *) echo "hw-validate.sh: unknown option '$1' (try --help)" >&2; exit 2 ;;
  esac
  shift
done
OUT=${OUT:-bench/results/hw-$(hostname -s)-$(date +%Y%m%d-%H%M%S)}
step() { printf '\n==> %s\n' "$*" >&2; }
run() { if [ "$DRY_RUN" -eq 1 ]; then echo "[dry-run] $*" >&2; else "$@"; fi; }

if [ "$DRY_RUN" -eq 0 ] && [ "$(id -u)" -ne 0 ]; then
  echo "hw-validate.sh: needs root (it attaches XDP and binds AF_XDP sockets); try: sudo $0 $*" >&2
  exit 1
fi

step "kernel"
KERNEL=$(uname -r)
config_value() {
  local key=$1 cfg=""
  if [ -r "/boot/config-$KERNEL" ]; then cfg=$(grep -E "^$key=" "/boot/config-$KERNEL" || true)
  elif [ -r /proc/config.gz ]; then cfg=$(zcat /proc/config.gz | grep -E "^$key=" || true)
  else echo "unknown"; return; fi
  echo "${cfg#*=}" | sed 's/^$/not set/'
}
declare -A KCONFIG
for key in CONFIG_BPF_SYSCALL CONFIG_BPF_JIT CONFIG_XDP_SOCKETS CONFIG_VETH CONFIG_VXLAN CONFIG_DEBUG_INFO_BTF; do
  KCONFIG[$key]=$(config_value "$key")
done
BPFFS=$(grep -q ' /sys/fs/bpf bpf ' /proc/mounts && echo mounted || echo "not mounted")

step "CPU and caches"
# `sed -n 1p`, not `head -n1`: it reads to the end, so lscpu never dies of SIGPIPE (pipefail).
CPU_MODEL=$(lscpu | sed -n 's/^Model name: *//p' | sed -n 1p)
CPUS=$(nproc)
cache() { lscpu | sed -n "s/^$1 cache: *//p" | sed -n 1p; }
L1D=$(cache L1d); L2=$(cache L2); L3=$(cache L3)

step "PMU (perf stat -e instructions true)"
if command -v perf >/dev/null 2>&1; then
  # Captured whole, not piped into `grep -q` (which could SIGPIPE perf under pipefail).
  perf_err=$(perf stat -x, -e instructions true 2>&1 >/dev/null || true)
  if grep -qiE 'not supported|not counted|<not' <<<"$perf_err"; then PMU="no"
  elif perf stat -x, -e instructions true >/dev/null 2>&1; then PMU="yes"
  else PMU="no"; fi
else
  PMU="no (perf not installed: apt-get install linux-perf)"
fi

step "build andromeda-probe"
run bash -c 'test -f build/build.ninja || cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null'
run ninja -C build andromeda-probe >&2
PROBE=build/userspace/tools/andromeda-probe

NETNS=andro-hw-$$
cleanup() { ip netns del "$NETNS" 2>/dev/null || true; }
trap cleanup EXIT INT TERM

probe_json=()
step "probe: a veth pair of our own (namespace $NETNS)"
if [ "$DRY_RUN" -eq 1 ]; then
  echo "[dry-run] ip netns add $NETNS; veth hwv0/hwv1 in it; $PROBE --iface hwv0" >&2
else
  ip netns add "$NETNS"
  ip -n "$NETNS" link add hwv0 type veth peer name hwv1
  ip -n "$NETNS" link set hwv0 up
  ip -n "$NETNS" link set hwv1 up
  probe_json+=("$(nsenter --net="/run/netns/$NETNS" "$PROBE" --iface hwv0 2>/dev/null)")
fi
for ifc in "${IFACES[@]}"; do
  step "probe: $ifc (named with --iface)"
  if [ "$DRY_RUN" -eq 1 ]; then echo "[dry-run] $PROBE --iface $ifc" >&2; continue; fi
  probe_json+=("$("$PROBE" --iface "$ifc" 2>/dev/null || echo "{\"iface\":\"$ifc\",\"error\":\"probe failed\"}")")
done

VERDICT=""
if [ ${#IFACES[@]} -eq 0 ]; then VERDICT="veth only"; fi
case "$PMU" in no*) VERDICT="${VERDICT:+$VERDICT, }no PMU" ;; esac

if [ "$SKIP_BENCH" -eq 0 ]; then
  step "benchmarks (scripts/bench.sh --quick)"
  run scripts/bench.sh --quick >&2
fi

[ "$DRY_RUN" -eq 1 ] && { step "dry run: nothing attached, nothing written"; exit 0; }

mkdir -p "$OUT"
{
  printf '{"host":"%s","kernel":"%s","bpffs":"%s","cpu":{"model":"%s","cpus":%s,"l1d":"%s","l2":"%s","l3":"%s"},' \
    "$(hostname -s)" "$KERNEL" "$BPFFS" "$CPU_MODEL" "$CPUS" "$L1D" "$L2" "$L3"
  printf '"pmu":"%s","verdict":"%s","kernel_config":{' "$PMU" "$VERDICT"
  first=1
  for key in "${!KCONFIG[@]}"; do
    [ $first -eq 1 ] || printf ','; first=0
    printf '"%s":"%s"' "$key" "${KCONFIG[$key]}"
  done
  printf '},"interfaces":[%s]' "$(IFS=,; echo "${probe_json[*]}")"
  if [ -f bench/results/summary.md ] && [ "$SKIP_BENCH" -eq 0 ]; then printf ',"bench_summary":"bench/results/summary.md"'; fi
  printf '}\n'
} > "$OUT/report.json"

{
  echo "# Andromeda hardware validation: $(hostname -s)"
  echo
  [ -n "$VERDICT" ] && echo "**This box: ${VERDICT}.**" && echo
  echo "| what | value |"
  echo "|---|---|"
  echo "| kernel | $KERNEL |"
  for key in "${!KCONFIG[@]}"; do echo "| $key | ${KCONFIG[$key]} |"; done
  echo "| bpffs | $BPFFS |"
  echo "| CPU | $CPU_MODEL ($CPUS CPUs) |"
  echo "| caches | L1d $L1D, L2 $L2, L3 $L3 |"
  echo "| PMU for perf stat | $PMU |"
  echo
  echo "## Interfaces"
  echo
  echo "| interface | driver | queues | MTU | native XDP | AF_XDP bind | unaligned chunks | why not better |"
  echo "|---|---|---|---|---|---|---|---|"
  for j in "${probe_json[@]}"; do
    python3 -c 'import json,sys; d=json.loads(sys.argv[1]); print("| %s | %s | %s | %s | %s | %s | %s | %s |" % (d.get("iface"), d.get("driver"), d.get("rx_queues"), d.get("mtu"), d.get("native_xdp"), d.get("af_xdp_bind"), d.get("af_xdp_unaligned_chunks"), (d.get("native_refusal") or "") + " " + (d.get("zero_copy_refusal") or "")))' "$j"
  done
  if [ -f bench/results/summary.md ] && [ "$SKIP_BENCH" -eq 0 ]; then echo; sed 's/^# /## /' bench/results/summary.md; fi
} > "$OUT/report.md"
step "wrote $OUT/report.md and $OUT/report.json"
cat "$OUT/report.md"
