#!/usr/bin/env bash
# Runs the micro benchmarks (Google Benchmark) and writes JSON under bench/results/ plus
# bench/results/summary.md with medians and ratios against bench/reference.json.
#   --quick          fewer repetitions and shorter runs (well under 3 minutes)
#   --filter REGEX   only benchmarks matching REGEX
# For stable figures run it on an otherwise idle machine; the spread is reported either way.
set -euo pipefail
cd "$(dirname "$0")/.."

REPS=5
MIN_TIME=0.5
FILTER=.
while [ $# -gt 0 ]; do
  case "$1" in
    --quick) REPS=3; MIN_TIME=0.1 ;;
    --filter) FILTER=$2; shift ;;
    -h|--help) sed -n '2,7p' "$0"; exit 0 ;;
    *) echo "bench.sh: unknown option '$1' (try --help)" >&2; exit 2 ;;
  esac
  shift
done

step() { printf '\n==> %s\n' "$*"; }
step "dependencies"
scripts/install-deps.sh
step "build (build/, RelWithDebInfo: -O2)"
if [ ! -f build/build.ninja ]; then
  cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo > build.configure.log 2>&1 || { cat build.configure.log; exit 1; }
fi
BENCHES=(overlay_bench pipeline_bench nat_bench fabric_bench)
ninja -C build "${BENCHES[@]}"

mkdir -p bench/results
for b in "${BENCHES[@]}"; do
  step "$b ($REPS repetitions)"
  "build/bench/$b" --benchmark_filter="$FILTER" --benchmark_repetitions="$REPS" \
    --benchmark_min_time="$MIN_TIME" --benchmark_display_aggregates_only=true \
    --benchmark_out="bench/results/$b.json" --benchmark_out_format=json
done
step "summary (bench/results/summary.md)"
python3 bench/summarize.py
