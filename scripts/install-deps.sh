#!/usr/bin/env bash
# Installs the Debian 12 packages Andromeda needs, skipping any that are already there.
# Idempotent; needs root only when something is missing.
#   install-deps.sh          everything: build, every test (sanitizers, etcd, scapy, tshark, the
#                            package and unit tests, the test VM: QEMU, busybox-static; its
#                            kernel is downloaded by scripts/vm-image.sh, never installed),
#                            benches, and the playground's browser test
#                            (Emscripten, Chromium, playwright-core from npm); scripts/test.sh
#   install-deps.sh --demo   only what scripts/demo.sh needs: configure and build andromedad and
#                            andromedactl, and run its topology (ip, ping, iperf3, bpftool)
#   --print                  (after either) print the packages, one a line, and install nothing
set -euo pipefail

# The configure step needs every find_package of CMakeLists.txt (GoogleTest and Google Benchmark
# included: the demo shares build/ with scripts/test.sh, so it configures the same options).
DEMO_PACKAGES=(
  build-essential cmake ninja-build pkg-config clang llvm lld
  libbpf-dev libxdp-dev bpftool libelf-dev zlib1g-dev linux-libc-dev libsystemd-dev
  libtoml11-dev libcli11-dev libfmt-dev libspdlog-dev nlohmann-json3-dev
  libgtest-dev libgmock-dev libbenchmark-dev libpcap-dev libcurl4-openssl-dev
  iproute2 iputils-ping iperf3
)
TEST_PACKAGES=(
  libclang-rt-14-dev dpkg-dev systemd util-linux etcd-server etcd-client
  python3-scapy python3-matplotlib iputils-tracepath ethtool netcat-openbsd tshark nftables
  emscripten chromium
  qemu-system-x86 busybox-static
)
ROOT=$(cd "$(dirname "$0")/.." && pwd)
DEMO_ONLY=0 PRINT=0
for arg in "$@"; do
  case "$arg" in
    --demo) DEMO_ONLY=1 ;;
    --print) PRINT=1 ;;
    *) echo "install-deps: unknown option '$arg' (--demo: only what scripts/demo.sh needs; --print)" >&2; exit 2 ;;
  esac
done
PACKAGES=("${DEMO_PACKAGES[@]}")
if [ "$DEMO_ONLY" -eq 0 ]; then PACKAGES+=("${TEST_PACKAGES[@]}"); fi
if [ "$PRINT" -eq 1 ]; then
  printf '%s\n' "${PACKAGES[@]}"
  [ "$DEMO_ONLY" -eq 1 ] || echo "npm:playwright-core"
  exit 0
fi

# The playground's browser test drives Debian's chromium with playwright-core, pinned in
# tests/browser/package-lock.json and installed from the npm registry (never a downloaded browser).
install_browser_driver() {
  if [ "$DEMO_ONLY" -eq 1 ]; then return 0; fi
  if [ -d "$ROOT/tests/browser/node_modules/playwright-core" ]; then return 0; fi
  if ! command -v npm > /dev/null; then
    echo "install-deps: npm not found: the playground's browser test needs Node.js and npm" >&2
    return 1
  fi
  echo "install-deps: installing the browser test's playwright-core (npm ci in tests/browser)"
  (cd "$ROOT/tests/browser" && npm ci --no-audit --no-fund --loglevel=error)
}

missing=()
for p in "${PACKAGES[@]}"; do
  # Compared whole, not piped into `grep -q`, which could SIGPIPE dpkg-query under pipefail.
  if [[ $(dpkg-query -W -f='${Status}' "$p" 2>/dev/null) != *"install ok installed"* ]]; then
    missing+=("$p")
  fi
done

if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all ${#PACKAGES[@]} packages present"
  install_browser_driver
  exit 0
fi

echo "install-deps: installing ${missing[*]}"
if [ "$(id -u)" -ne 0 ]; then
  echo "install-deps: need root to install packages; run: sudo $0" >&2
  exit 1
fi
export DEBIAN_FRONTEND=noninteractive
# tshark asks whether non-root users may capture; answer for it.
echo "wireshark-common wireshark-common/install-setuid boolean false" | debconf-set-selections
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${missing[@]}"
install_browser_driver
echo "install-deps: done"
