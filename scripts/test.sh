#!/usr/bin/env bash
# The one test entry point (CI runs it too): installs missing Debian packages, then builds and
# runs every test in three configurations:
#   1. build/         gcc, RelWithDebInfo at Release's optimisation with line tables (-O3 -g1),
#                     -Werror: all unit, BPF and integration tests (daemon tests on the fast path,
#                     both paths with --quick); benches; the playground's page and its browser test. gcc
#                     at -O3 warns differently from -O2, so this build also proves that what Release builds
#                     (-O3, no -g) builds without a warning: the two differ only in debug
#                     information (the tests keep their own -Og, tests/CMakeLists.txt).
#   2. build-asan/    clang with AddressSanitizer + UndefinedBehaviorSanitizer: all tests again (daemon
#                     tests on the slow path), then every libFuzzer target over its seeds for a while (one
#                     target per core)
#   3. build-tsan/    clang with ThreadSanitizer: the concurrency tests, and andromedad itself
#                     (workers, control server, reloads) carrying traffic in six daemon test
#                     binaries (DAEMON_TSAN_RUNS)
# Options: --quick (only build 1), --fuzz-seconds N (default 5 per target: the seeds replayed and
# a short search; longer campaigns are run by hand, e.g. --fuzz-seconds 60).
# Tests needing root skip without it; ANDROMEDA_REQUIRE_ROOT_TESTS=1 makes such a skip a failure.
set -euo pipefail

cd "$(dirname "$0")/.."
ROOT=$PWD
QUICK=0
FUZZ_SECONDS=${FUZZ_SECONDS:-5}
while [ $# -gt 0 ]; do
  case "$1" in
    --quick) QUICK=1 ;;
    --fuzz-seconds) FUZZ_SECONDS=$2; shift ;;
    -h|--help) sed -n '2,16p' "$0"; exit 0 ;;
    *) echo "test.sh: unknown option '$1' (try --help)" >&2; exit 2 ;;
  esac
  shift
done

JOBS=$(nproc)
# Each step says when it starts, in seconds since the script did (where CI's time goes).
step() { printf '\n==> %s (at %d s)\n' "$*" "$(( $(date +%s) - started ))"; }
started=$(date +%s)

step "dependencies"
scripts/install-deps.sh

CONCURRENCY_TESTS=(fabric_concurrency_test nat_concurrency_test daemon_control_test worker_published_test daemon_etcd_sync_test
                   policy_firewall_test dns_service_test dataplane_underlay_pmtu_test)
# test binary:gtest filter, run against a TSan-instrumented andromedad (see the TSan step).
DAEMON_TSAN_RUNS=(
  "daemon_lifecycle_test:TwoNodes.ReloadAddsAndRemovesAnEndpointWhileAPingLosesNothing:TwoNodes.BadReloadChangesNothingAndSaysWhy"
  "daemon_overlay_test:TwoNodesTwoQueues.*"
  "daemon_nat_test:NatGateway.TenantsFetchOverTcpAndQueryUdpAsTheNatAddress"
  "daemon_nat_kernel_test:NatSmallMapFastPath.*"
  "service_test:Service.*"
  "daemon_workers_test:Workers.EastWestPingAndTcpAreByteExactAcrossWorkers:Workers.ReloadsRemoveAndAddPortsAndKeepTheOthersOnTheirWorkers:NatGatewayWithTenantWorker.*"
)
DAEMON_TSAN_TESTS=(daemon_lifecycle_test daemon_overlay_test daemon_nat_test daemon_nat_kernel_test service_test
                   daemon_workers_test)

configure_and_build() {
  local dir=$1; shift
  step "configure $dir ($*)"
  cmake -S "$ROOT" -B "$dir" -G Ninja "$@" > "$dir.configure.log" 2>&1 || { cat "$dir.configure.log"; return 1; }
  step "build $dir"
  ninja -C "$dir" -j "$JOBS"
}

# build/'s tests run two per core: most of their time is namespaces, daemons and QEMU waiting on
# each other, not CPU (on 2 cores they took 519 s at -j2 and 382-398 s at -j4). What must run
# alone says so (RUN_SERIAL: the soak smoke's 10 ms pings), and no test asserts a time. The
# sanitizer build's tests use more CPU (instrumented daemons, a TCG guest beside them) but still
# wait more than they compute (1.23 times build/'s test time in all): one more than the cores
# (on 2 cores, 515 s at -j2, 442 s at -j3), which leaves a guest's transfer room.
run_ctest() {
  local dir=$1 jobs=$2; shift 2
  step "test $dir"
  (cd "$dir" && ctest --output-on-failure -j "$jobs" "$@")
}

mkdir -p build
# Release's -O3 with line tables: a separate Release build (what ships, built, never run) cost
# about 5 minutes of CI for what this one now shows, its warnings at -O3. Line tables (-g1), not
# full debug information: a backtrace still names every function, file and line, and full -g made
# the heavier TUs half as long again (userspace/daemon/daemon.cpp: 21.8 s at -O3 -g, 15.1 s at
# -O3 -g1, 14.7 s at -O3); a cold build/ took 1,006 s instead of 1,089 on 2 cores.
configure_and_build build -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  "-DCMAKE_C_FLAGS_RELWITHDEBINFO=-O3 -g1 -DNDEBUG" "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O3 -g1 -DNDEBUG"
# A daemon test registered on both paths runs once per path: here on the fast path, and its
# .slowpath twin (labelled slow_path_twin) in the sanitizer pass below, where the daemon's own code
# carries every packet under AddressSanitizer and UBSan. The twins were a third of this pass's test
# time (388 of 1,358 test-seconds), and the slow path's code at -O3 still runs here in the
# pipeline's unit, property and BPF differential tests and in every fast-path test's punts.
# --quick, the only pass then, runs both.
if [ "$QUICK" -eq 1 ]; then
  run_ctest build $(( JOBS * 2 ))
else
  run_ctest build $(( JOBS * 2 )) -LE slow_path_twin
fi

if [ "$QUICK" -eq 1 ]; then
  step "quick mode: skipped the sanitizer, fuzz and TSan builds ($(( $(date +%s) - started )) s)"
  exit 0
fi

# The sanitizer builds keep line tables only: a report's stack still names every file and line,
# and clang and lld have less to write (full -g cost the ASan build about a tenth more).
configure_and_build build-asan -DCMAKE_BUILD_TYPE=Debug -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ \
  -DCMAKE_C_FLAGS_DEBUG=-gline-tables-only -DCMAKE_CXX_FLAGS_DEBUG=-gline-tables-only \
  -DANDROMEDA_SANITIZE=ON -DANDROMEDA_FUZZ=ON -DANDROMEDA_BENCH=OFF -DANDROMEDA_PLAYGROUND=OFF
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=0 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
# A daemon test registered on both paths runs here on the slow path only (its fast-path twin is
# labelled fast_path_twin): there the daemon's own code carries every packet, which is what the
# sanitizers watch; the *FastPath suites still run, on the fast path. (That halved the daemon
# tests' share of this pass, about 150 s of its 650.)
run_ctest build-asan $(( JOBS + 1 )) -LE fast_path_twin

# One fuzz target: its seeds copied into a working corpus (the checked-in one never changes), then
# libFuzzer for FUZZ_SECONDS. Its report comes out in one piece, so that two lanes never mix lines.
fuzz_one() {
  local fuzzer=$1 name corpus seeds log
  name=$(basename "$fuzzer" _fuzz)
  corpus=build-asan/fuzz-corpus/$name
  seeds=tests/fuzz/corpus/$name
  log=build-asan/fuzz-$name.log
  mkdir -p "$corpus"
  if [ -d "$seeds" ]; then cp -n "$seeds"/* "$corpus"/ 2>/dev/null || true; fi
  if ! "$fuzzer" -max_total_time="$FUZZ_SECONDS" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
      -artifact_prefix=build-asan/ "$corpus" > "$log" 2>&1; then
    # The cause comes first in libFuzzer's report (the sanitizer's, or what std::terminate said).
    { echo "-- $name: FAILED"
      grep -n -m1 -B8 -A30 -E '^==[0-9]+==|ERROR: |terminate called|_fuzz: |runtime error' "$log" || tail -n 60 "$log"
      tail -n 6 "$log"
      echo "fuzz: $name failed; the input is in build-asan/ (crash-, leak-, timeout- or oom-SHA1; replay: $fuzzer FILE)"
    } >&2
    return 1
  fi
  { echo "-- $name"; tail -n 12 "$log"; }
}
export -f fuzz_one
export FUZZ_SECONDS

# One target per core: each is single-threaded, and the pass takes half as long.
step "fuzz: each target for ${FUZZ_SECONDS} s, ${JOBS} at a time"
find build-asan/tests/fuzz -maxdepth 1 -type f -name '*_fuzz' -perm -u+x -print0 | sort -z |
  xargs -0 -r -n 1 -P "$JOBS" bash -c 'fuzz_one "$1" || exit 255' _ ||
  { echo "test.sh: a fuzz target failed (its report is above)" >&2; exit 1; }

# -O1, as ThreadSanitizer's documentation suggests at the least: it compiles the libraries about a
# quarter faster than -O2 (userspace/daemon/daemon.cpp: 8.9 s against 11.8 s), and the instrumented
# accesses, not the optimiser, set the pace of what runs under it.
step "configure build-tsan (ThreadSanitizer)"
cmake -S "$ROOT" -B build-tsan -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_C_COMPILER=clang \
  -DCMAKE_CXX_COMPILER=clang++ -DANDROMEDA_TSAN=ON \
  "-DCMAKE_C_FLAGS_RELWITHDEBINFO=-O1 -gline-tables-only -DNDEBUG" \
  "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O1 -gline-tables-only -DNDEBUG" -DANDROMEDA_BENCH=OFF -DANDROMEDA_PLAYGROUND=OFF \
  > build-tsan.configure.log 2>&1 || { cat build-tsan.configure.log; exit 1; }
step "build and run the concurrency tests under TSan: ${CONCURRENCY_TESTS[*]}"
ninja -C build-tsan -j "$JOBS" "${CONCURRENCY_TESTS[@]}" andromedad andromedactl "${DAEMON_TSAN_TESTS[@]}"
tsan_exe() {
  local exe
  exe=$(find build-tsan/tests -type f -name "$1" -perm -u+x -print -quit)  # no `| head`: pipefail
  if [ -z "$exe" ]; then echo "test.sh: TSan test $1 was not built" >&2; return 1; fi
  echo "$exe"
}
export TSAN_OPTIONS=halt_on_error=1
for t in "${CONCURRENCY_TESTS[@]}"; do
  "$(tsan_exe "$t")"
done
# The daemon's own threads (packet workers, the control server, reloads that pause the workers,
# the NAT engine shared by workers) under TSan: instrumented andromedad instances carry real
# traffic; the fixtures fail a test whose daemon printed a sanitizer report. Slow path, so the
# workers carry every packet, except in the *FastPath fixtures, which force it on (there the NAT
# engine's offload loop runs beside the workers).
step "the daemon under TSan: ${DAEMON_TSAN_RUNS[*]}"
for run in "${DAEMON_TSAN_RUNS[@]}"; do
  ANDROMEDA_TEST_FASTPATH=off "$(tsan_exe "${run%%:*}")" --gtest_filter="${run#*:}"
done

step "all tests passed ($(( $(date +%s) - started )) s)"
