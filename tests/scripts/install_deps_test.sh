#!/usr/bin/env bash
# The README's main command installs what it needs and no more: scripts/demo.sh asks
# install-deps.sh for the demo's packages only, which leave out the browser-test toolchain
# (Emscripten, Chromium, playwright-core from npm) and the test-only tools, while the full list
# (scripts/test.sh's) keeps every one of them and includes the demo's.
set -euo pipefail
ROOT=$1
fail() { echo "FAIL: $*" >&2; exit 1; }
demo=$("$ROOT/scripts/install-deps.sh" --demo --print)
full=$("$ROOT/scripts/install-deps.sh" --print)
for heavy in emscripten chromium npm:playwright-core etcd-server tshark python3-scapy libclang-rt-14-dev \
             qemu-system-x86 busybox-static; do
  grep -qx "$heavy" <<<"$demo" && fail "the demo installs $heavy"
  grep -qx "$heavy" <<<"$full" || fail "the test command no longer installs $heavy"
done
while read -r p; do grep -qx "$p" <<<"$full" || fail "$p is installed for the demo but not for the tests"; done <<<"$demo"
for needed in cmake clang bpftool libbpf-dev libxdp-dev libsystemd-dev iproute2 iperf3; do
  grep -qx "$needed" <<<"$demo" || fail "the demo needs $needed"
done
grep -q '^scripts/install-deps.sh --demo$' "$ROOT/scripts/demo.sh" || fail "demo.sh does not ask for --demo"
grep -q '^scripts/install-deps.sh$' "$ROOT/scripts/test.sh" || fail "test.sh does not install everything"
echo "OK: demo $(wc -l <<<"$demo") packages, tests $(wc -l <<<"$full")"
