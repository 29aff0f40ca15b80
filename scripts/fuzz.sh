#!/usr/bin/env bash
# Fuzz campaigns, longer than the 20 s per target scripts/test.sh runs: every libFuzzer target
# (or the ones named) for SECONDS each, starting from the checked-in seeds, in an optimised
# sanitizer build (build-fuzz/: clang, -O2 -g with ASan + UBSan and libFuzzer), printing the
# inputs per second each target ran. A crash stops the campaign, keeps the input under
# build-fuzz/artifacts/ and exits 1.
#   scripts/fuzz.sh [SECONDS] [--keep] [TARGET...]     (default 600 s; targets: *_fuzz names
#                                                      without the suffix, e.g. pipeline nat)
#   --keep   merge what a campaign found into tests/fuzz/corpus/<target> (libFuzzer -merge=1:
#            only inputs that add coverage), for committing
set -euo pipefail

cd "$(dirname "$0")/.."
SECONDS_PER_TARGET=600
KEEP=0
TARGETS=()
while [ $# -gt 0 ]; do
  case "$1" in
    --keep) KEEP=1 ;;
    -h|--help) sed -n '2,11p' "$0"; exit 0 ;;
    [0-9]*) SECONDS_PER_TARGET=$1 ;;
    -*) echo "fuzz.sh: unknown option '$1' (try --help)" >&2; exit 2 ;;
    *) TARGETS+=("$1") ;;
  esac
  shift
done

BUILD=build-fuzz
if [ ! -f "$BUILD/build.ninja" ]; then
  cmake -S . -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_C_COMPILER=clang \
    -DCMAKE_CXX_COMPILER=clang++ -DANDROMEDA_SANITIZE=ON -DANDROMEDA_FUZZ=ON -DANDROMEDA_BENCH=OFF \
    -DANDROMEDA_BPF=OFF > "$BUILD.configure.log" 2>&1 || { cat "$BUILD.configure.log"; exit 1; }
fi
if [ ${#TARGETS[@]} -eq 0 ]; then
  for seeds in tests/fuzz/corpus/*/; do TARGETS+=("$(basename "$seeds")"); done
fi
ninja -C "$BUILD" "${TARGETS[@]/%/_fuzz}"

export ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
mkdir -p "$BUILD/artifacts"
summary=()
for name in "${TARGETS[@]}"; do
  fuzzer=$(find "$BUILD/tests/fuzz" -type f -name "${name}_fuzz" -perm -u+x -print -quit)
  [ -n "$fuzzer" ] || { echo "fuzz.sh: no target ${name}_fuzz" >&2; exit 2; }
  work="$BUILD/campaign/$name"
  rm -rf "$work" && mkdir -p "$work"
  if [ -d "tests/fuzz/corpus/$name" ]; then cp "tests/fuzz/corpus/$name"/* "$work"/ 2>/dev/null || true; fi
  echo "== $name: ${SECONDS_PER_TARGET} s from $(find "$work" -type f | wc -l) seeds"
  log="$BUILD/campaign/$name.log"
  if ! "$fuzzer" -max_total_time="$SECONDS_PER_TARGET" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
       -artifact_prefix="$BUILD/artifacts/$name-" "$work" > "$log" 2>&1; then
    tail -n 40 "$log"
    echo "fuzz.sh: $name failed; the input is in $BUILD/artifacts/ (replay: $fuzzer <file>)" >&2
    exit 1
  fi
  runs=$(awk '/stat::number_of_executed_units:/ {print $2}' "$log")
  rate=$(( ${runs:-0} / SECONDS_PER_TARGET ))
  cov=$(grep -o 'cov: [0-9]*' "$log" | tail -n 1 | awk '{print $2}')
  line="$name: ${runs:-0} inputs in ${SECONDS_PER_TARGET} s = ${rate} inputs/s, coverage ${cov:-?} edges, corpus $(find "$work" -type f | wc -l)"
  if [ "$KEEP" -eq 1 ]; then
    mkdir -p "tests/fuzz/corpus/$name"
    before=$(find "tests/fuzz/corpus/$name" -type f | wc -l)
    "$fuzzer" -merge=1 "tests/fuzz/corpus/$name" "$work" > "$BUILD/campaign/$name.merge.log" 2>&1
    line="$line; kept $(( $(find "tests/fuzz/corpus/$name" -type f | wc -l) - before )) new inputs in tests/fuzz/corpus/$name"
  fi
  echo "$line"
  summary+=("$line")
done
printf '\nsummary:\n'
printf '%s\n' "${summary[@]}"
