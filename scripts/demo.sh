#!/usr/bin/env bash
# The Andromeda demo. Until the daemon lands, it builds andromedactl and shows it decoding
# overlay traffic: a synthesised packet, then real traffic captured from the Light-Andromeda
# reference implementation (if ../shared/testdata is beside this checkout).
# Idempotent: re-running reuses the build.
set -euo pipefail
cd "$(dirname "$0")/.."

step() { printf '\n==> %s\n' "$*"; }

step "dependencies"
scripts/install-deps.sh

step "build andromedactl (build/)"
if [ ! -f build/build.ninja ]; then
  cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo > build.configure.log 2>&1 || { cat build.configure.log; exit 1; }
fi
ninja -C build andromedactl

CTL=build/userspace/ctl/andromedactl

step "andromedactl inspect   # a synthesised Andromeda overlay packet"
"$CTL" inspect

CAPTURE=../shared/testdata/light-andromeda/underlay.pcap
if [ -r "$CAPTURE" ]; then
  step "andromedactl inspect --pcap $CAPTURE   # real traffic from the reference implementation (first 3 frames)"
  "$CTL" inspect --pcap "$CAPTURE" | awk '/^# frame 4 /{exit} {print}'
  frames=$("$CTL" inspect --json --pcap "$CAPTURE" | grep -c '"frame"')
  echo "... $frames frames in all, every checksum verified"
fi

step "andromedactl inspect 0200   # bad input gets a one-line error and a non-zero exit"
"$CTL" inspect 0200 || echo "(exit code $?)"
