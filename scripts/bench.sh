#!/usr/bin/env bash
# Runs every benchmark, writes JSON under bench/results/, then bench/results/summary.md (medians,
# spread, ratios against bench/reference.json) and the plots (bench/results/*.png):
#   micro   Google Benchmark: overlay, pipeline, nat, nat_pipeline, fabric (<name>.json)
#   xdp     the XDP program's cost per verdict, bpf_prog_test_run_opts (xdp.json; root only)
#   cache   Mpps against working-set size, sequential and shuffled (cache.json)
#   e2e     Andromeda against the kernel's VXLAN, scripts/bench-e2e.sh (e2e.json; root only)
#   --quick          fewer repetitions, shorter runs, no 100k/1M-entry micro cases (under 3 min)
#   --filter REGEX   only the micro benchmarks matching REGEX
#   --skip LIST      leave out parts, comma-separated: micro,xdp,cache,e2e,plots
#   --cache-max SIZE largest cache-experiment working set (default 64M; e.g. 1G)
# BUILD_DIR (default build/, configured RelWithDebInfo: -O2) selects the build tree.
# For stable figures run it on an otherwise idle machine; the spread is reported either way.
set -euo pipefail
cd "$(dirname "$0")/.."

REPS=5
MIN_TIME=0.5
FILTER=
QUICK=
SKIP=,
CACHE_MAX=64M
BUILD_DIR=${BUILD_DIR:-build}
while [ $# -gt 0 ]; do
  case "$1" in
    --quick) QUICK=--quick; REPS=3; MIN_TIME=0.05 ;;
    --filter) FILTER=$2; shift ;;
    --skip) SKIP=",$2,"; shift ;;
    --cache-max) CACHE_MAX=$2; shift ;;
    -h|--help) sed -n '2,13p' "$0"; exit 0 ;;
    *) echo "bench.sh: unknown option '$1' (try --help)" >&2; exit 2 ;;
  esac
  shift
done
# In quick mode the large-table cases (1M NAT flows, 100k endpoints, toml11 at 10k) are left out.
if [ -z "$FILTER" ]; then
  if [ -n "$QUICK" ]; then FILTER='-/1000000|/100000|Toml11/10000'; else FILTER=.; fi
fi

START=$SECONDS
FAILED=()
step() { printf '\n==> %s  [%ds]\n' "$*" $((SECONDS - START)); }
wanted() { [[ "$SKIP" != *",$1,"* ]]; }
is_root() { [ "$(id -u)" = 0 ]; }
RESULTS=bench/results
mkdir -p "$RESULTS"
# A part that does not run leaves an older result behind: say so, since the plots will show it.
stale() { [ -f "$RESULTS/$1" ] && echo "bench.sh: note: $RESULTS/$1 is from an earlier run" || true; }

step "dependencies"
scripts/install-deps.sh
step "build ($BUILD_DIR/)"
if [ ! -f "$BUILD_DIR/build.ninja" ]; then
  cmake -S . -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo > "$BUILD_DIR.configure.log" 2>&1 ||
    { cat "$BUILD_DIR.configure.log"; exit 1; }
fi
BENCHES=(overlay_bench pipeline_bench nat_bench nat_pipeline_bench fabric_bench)
TARGETS=("${BENCHES[@]}" cache_bench)
# Asks ninja itself: `-t targets all | grep -q` fails under pipefail when grep quits first.
if ninja -C "$BUILD_DIR" -t query xdp_cost >/dev/null 2>&1; then TARGETS+=(xdp_cost); fi
ninja -C "$BUILD_DIR" "${TARGETS[@]}"

if wanted micro; then
  for b in "${BENCHES[@]}"; do
    step "$b ($REPS repetitions)"
    "$BUILD_DIR/bench/$b" --benchmark_filter="$FILTER" --benchmark_repetitions="$REPS" \
      --benchmark_min_time="$MIN_TIME" --benchmark_display_aggregates_only=true \
      --benchmark_out="$RESULTS/$b.json" --benchmark_out_format=json || FAILED+=("$b")
  done
fi

if wanted xdp; then
  step "XDP program cost per verdict (xdp_cost)"
  if ! is_root; then
    echo "SKIP: xdp_cost needs root (BPF_PROG_TEST_RUN, AF_XDP)"; stale xdp.json
  elif [ ! -x "$BUILD_DIR/bench/xdp_cost" ]; then
    echo "SKIP: $BUILD_DIR has no xdp_cost (configured with -DANDROMEDA_BPF=OFF?)"; stale xdp.json
  else
    rm -f "$RESULTS/xdp.json"
    "$BUILD_DIR/bench/xdp_cost" $QUICK --check --out "$RESULTS/xdp.json" || FAILED+=(xdp_cost)
  fi
fi

if wanted cache; then
  step "cache experiment (cache_bench, working sets 4K..$CACHE_MAX)"
  rm -f "$RESULTS/cache.json"
  "$BUILD_DIR/bench/cache_bench" $QUICK --max-bytes "$CACHE_MAX" --out "$RESULTS/cache.json" || FAILED+=(cache_bench)
fi

if wanted e2e; then
  step "end to end (scripts/bench-e2e.sh)"
  if [ ! -x scripts/bench-e2e.sh ]; then
    echo "SKIP: no scripts/bench-e2e.sh"; stale e2e.json
  elif ! is_root; then
    echo "SKIP: the end-to-end harness needs root"; stale e2e.json
  else
    scripts/bench-e2e.sh $QUICK --build "$BUILD_DIR" --out "$RESULTS/e2e.json" || FAILED+=(bench-e2e.sh)
  fi
fi

step "summary ($RESULTS/summary.md)"
python3 bench/summarize.py || FAILED+=(summarize.py)
if wanted plots; then
  step "plots ($RESULTS/*.png)"
  /usr/bin/python3 bench/plot.py --results "$RESULTS" || FAILED+=(plot.py)
fi

step "done in $((SECONDS - START)) s"
if [ ${#FAILED[@]} -gt 0 ]; then
  echo "bench.sh: failed: ${FAILED[*]}" >&2
  exit 1
fi
