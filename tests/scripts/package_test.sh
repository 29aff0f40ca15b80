#!/usr/bin/env bash
# The Debian package as an operator gets it: CPack builds it from this build directory, its
# control data declares the libraries the programs link against, `dpkg -x` unpacks it into a
# scratch root holding every file docs/operations.md promises, and the unpacked programs run:
# --version names the version and the commit; `andromedad --check` passes the shipped example
# config on a namespace that has its interfaces, and refuses a broken copy of it (root).
#   package_test.sh SOURCE_DIR BUILD_DIR
set -euo pipefail
SOURCE=$1 BUILD=$2
fail() { echo "FAIL: $*" >&2; exit 1; }
for tool in cpack dpkg-deb dpkg-shlibdeps; do
  command -v "$tool" > /dev/null || { echo "SKIP: $tool is not installed (Debian: cmake, dpkg-dev)"; exit 0; }
done

dir=$(mktemp -d)
ns=""
cleanup() {
  if [ -n "$ns" ]; then ip netns del "$ns" 2> /dev/null || true; fi
  rm -rf "$dir"
}
trap cleanup EXIT
(cd "$BUILD" && cpack -G DEB -B "$dir/out" > "$dir/cpack.log" 2>&1) || fail "cpack: $(cat "$dir/cpack.log")"
deb=$(find "$dir/out" -maxdepth 1 -name 'andromeda_*.deb' -print -quit)
[ -n "$deb" ] || fail "no andromeda_*.deb in $(ls "$dir/out")"
echo "built $(basename "$deb") ($(stat -c %s "$deb") bytes)"

# Declared dependencies: the libraries andromedad and andromedactl are linked against.
depends=$(dpkg-deb -f "$deb" Depends)
for library in libbpf1 libxdp1 libsystemd0 libcurl4 libspdlog1 libfmt9 libpcap0.8 systemd; do
  grep -q "$library" <<<"$depends" || fail "Depends lacks $library: $depends"
done
[ "$(dpkg-deb -f "$deb" Package)" = andromeda ] || fail "package name: $(dpkg-deb -f "$deb" Package)"

root=$dir/root
dpkg -x "$deb" "$root"
for file in usr/sbin/andromedad usr/bin/andromedactl usr/lib/systemd/system/andromedad@.service \
    usr/share/man/man8/andromedad.8.gz usr/share/man/man8/andromedactl.8.gz \
    usr/share/bash-completion/completions/andromedactl usr/share/doc/andromeda/examples/node1.toml \
    usr/share/doc/andromeda/operations.md usr/share/andromeda/bpf/andromeda_xdp.bpf.o; do
  [ -s "$root/$file" ] || fail "the package lacks /$file"
done
grep -q "^ExecStart=/usr/sbin/andromedad " "$root/usr/lib/systemd/system/andromedad@.service" \
  || fail "the packaged unit does not run /usr/sbin/andromedad"
zcat "$root/usr/share/man/man8/andromedactl.8.gz" | grep -q '^\.TH ANDROMEDACTL 8' || fail "andromedactl.8 is not a man page"
bash -c "source '$root/usr/share/bash-completion/completions/andromedactl' && complete -p andromedactl" > /dev/null \
  || fail "the bash completion does not register for andromedactl"

daemon=$root/usr/sbin/andromedad ctl=$root/usr/bin/andromedactl
version=$(sed -n 's/^project(andromeda VERSION \([0-9.]*\).*/\1/p' "$SOURCE/CMakeLists.txt")
for program in "$daemon" "$ctl"; do
  out=$("$program" --version) || fail "$program --version exited non-zero"
  name=$(basename "$program")
  [[ $out =~ ^$name\ $version\ \((git\ [0-9a-f]{12}(,\ modified)?|not\ built\ from\ a\ git\ checkout)\)$ ]] \
    || fail "$name --version: '$out'"
  echo "$out"
done

# A tree that is not a git checkout (a release tarball) says so instead of naming a commit.
mkdir -p "$dir/tarball"
cmake -DSOURCE_DIR="$dir/tarball" -DOUTPUT="$dir/version.cpp" -DVERSION=9.8.7 -P "$SOURCE/cmake/Version.cmake"
grep -q 'git_commit() noexcept { return ""; }' "$dir/version.cpp" || fail "outside git: $(cat "$dir/version.cpp")"
grep -q 'version() noexcept { return "9.8.7"; }' "$dir/version.cpp" || fail "the version: $(cat "$dir/version.cpp")"
grep -q 'not built from a git checkout' "$SOURCE/userspace/version/version.cpp" || fail "version_text() no longer says so"

if [ "$(id -u)" -ne 0 ]; then
  [ "${ANDROMEDA_REQUIRE_ROOT_TESTS:-0}" = 1 ] && fail "needs root and ANDROMEDA_REQUIRE_ROOT_TESTS=1"
  echo "SKIP: andromedad --check on the example config needs root (a namespace with its interfaces)"; exit 0
fi
# The example's host: eth1 with 192.168.1.1 and the tenant port tap-blue-10, in a namespace of ours.
ns=andro-pkg-$$
ip netns add "$ns"
ip -n "$ns" link add eth1 type veth peer name eth1-peer
ip -n "$ns" link add tap-blue-10 type veth peer name tenant
ip -n "$ns" addr add 192.168.1.1/24 dev eth1
for link in eth1 eth1-peer tap-blue-10 tenant; do ip -n "$ns" link set "$link" up; done
example=$root/usr/share/doc/andromeda/examples/node1.toml
out=$(nsenter --net="/run/netns/$ns" "$daemon" -c "$example" --check 2>&1) || fail "--check on the example: $out"
grep -q "node1.toml: OK: node node1, underlay eth1 (192.168.1.1" <<<"$out" || fail "--check said: $out"
echo "$out"
# A tenant port that does not exist yet is a warning (the unit runs --check before every start,
# and a VM that is not up yet must not keep the node down).
ip -n "$ns" link del tap-blue-10
out=$(nsenter --net="/run/netns/$ns" "$daemon" -c "$example" --check 2>&1) || fail "--check without tap-blue-10: $out"
grep -q "warning: endpoint 10.0.0.10 (vni 100): tenant port tap-blue-10 does not exist" <<<"$out" || fail "no warning: $out"
grep -q "; 1 tenant port(s) missing (see the warnings)" <<<"$out" || fail "the OK line does not say so: $out"
sed 's/^vni = 100$/vni = 0/' "$example" > "$dir/broken.toml"
if out=$(nsenter --net="/run/netns/$ns" "$daemon" -c "$dir/broken.toml" --check 2>&1); then
  fail "--check accepted VNI 0: $out"
fi
grep -q "broken.toml:.*vni" <<<"$out" || fail "--check did not name the bad key: $out"
echo "OK"
