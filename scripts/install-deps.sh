#!/usr/bin/env bash
# Installs the Debian 12 packages Andromeda needs to build, test and demo, skipping any that are
# already there. Idempotent; needs root only when something is missing.
set -euo pipefail

PACKAGES=(
  build-essential cmake ninja-build pkg-config clang llvm libclang-rt-14-dev
  libbpf-dev libxdp-dev bpftool libelf-dev zlib1g-dev linux-libc-dev
  libtoml11-dev libcli11-dev libfmt-dev libspdlog-dev nlohmann-json3-dev
  libgtest-dev libgmock-dev libbenchmark-dev libpcap-dev libcurl4-openssl-dev etcd-server etcd-client
  python3-scapy python3-matplotlib iproute2 iputils-ping iputils-tracepath ethtool iperf3 netcat-openbsd tshark
  emscripten chromium
)
ROOT=$(cd "$(dirname "$0")/.." && pwd)

# The playground's browser test drives Debian's chromium with playwright-core, pinned in
# tests/browser/package-lock.json and installed from the npm registry (never a downloaded browser).
install_browser_driver() {
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
