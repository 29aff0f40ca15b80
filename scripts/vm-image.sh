#!/usr/bin/env bash
# Usage: scripts/vm-image.sh [OUT_DIR] [--cache DIR] [--force]
# Builds the test VM (issue 31): a Debian kernel and a busybox initramfs that boot under QEMU on
# a tap device, into OUT_DIR (default build/vm):
#   vmlinuz             the kernel of the package Debian's linux-image-amd64 depends on
#   initramfs.cpio.gz   busybox-static with its applets, the NIC's modules (virtio_net and what
#                       it needs), /init (scripts/vm-guest/init: a shell on ttyS0) and udhcpc's
#                       default.script (scripts/vm-guest/udhcpc.script, at /etc/udhcpc/ and
#                       /usr/share/udhcpc/)
#   kernel-release      the kernel's `uname -r`
# The kernel package is never installed: it is downloaded (`apt-get download`, or taken from
# apt's own cache) and the few files needed are extracted into CACHE_DIR, once per version.
# A run whose outputs are newer than all of their inputs does nothing. Needs busybox-static
# (scripts/install-deps.sh installs it); no root, except to download with a stale apt list.
# Options: --cache DIR (default $ANDROMEDA_VM_CACHE, else ~/.cache/andromeda/vm),
#          --force (rebuild the initramfs), -h/--help.
# Boot it by hand: docs/vm-tenants.md, "The test VM".
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
ARGS=("$@")
OUT=$ROOT/build/vm
CACHE=${ANDROMEDA_VM_CACHE:-${XDG_CACHE_HOME:-${HOME:-/root}/.cache}/andromeda/vm}
FORCE=0
out_given=0
while [ $# -gt 0 ]; do
  case "$1" in
    --cache) CACHE=$2; shift ;;
    --force) FORCE=1 ;;
    -h|--help) sed -n '2,17p' "$0"; exit 0 ;;
    -*) echo "vm-image.sh: unknown option '$1' (try --help)" >&2; exit 2 ;;
    *)
      if [ "$out_given" -eq 1 ]; then echo "vm-image.sh: one output directory only (try --help)" >&2; exit 2; fi
      OUT=$1; out_given=1 ;;
  esac
  shift
done

say() { echo "vm-image: $*"; }
die() { echo "vm-image: $*" >&2; exit 1; }

# The modules the guest loads, with what they depend on (resolved from the modules themselves).
# virtio_pci is the transport virtio-net-pci sits on; either may be built in instead.
WANTED_MODULES=(virtio_pci virtio_net)
GUEST_FILES=("$ROOT/scripts/vm-guest/init" "$ROOT/scripts/vm-guest/udhcpc.script")

for tool in apt-cache apt-get dpkg-deb dpkg-query gzip tar flock; do
  command -v "$tool" > /dev/null || die "$tool not found (Debian 12 is assumed)"
done
[[ $(dpkg-query -W -f='${Status}' busybox-static 2>/dev/null) == *"install ok installed"* ]] ||
  die "busybox-static is not installed (scripts/install-deps.sh installs it; apt-get install busybox-static)"
BUSYBOX=/bin/busybox
[ -x "$BUSYBOX" ] || die "$BUSYBOX (from busybox-static) is missing"

mkdir -p "$OUT" "$CACHE"
OUT=$(cd "$OUT" && pwd)
CACHE=$(cd "$CACHE" && pwd)
# Tests may run this concurrently (ctest -j): one builder per cache and per output directory.
exec 8> "$CACHE/.lock"
flock 8
exec 9> "$OUT/.lock"
flock 9

# ---- The kernel: resolve the package, fetch it once, extract what the guest needs. ----

# linux-image-amd64 is a meta package: "Depends: linux-image-6.1.0-57-amd64 (= 6.1.192-3)".
depends=$(apt-cache show --no-all-versions linux-image-amd64 2>/dev/null | sed -n 's/^Depends: //p' || true)
kernel_package=$(sed -n 's/^\(linux-image-[^ ,|]*\).*/\1/p' <<<"$depends")
kernel_version=$(sed -n 's/^linux-image-[^ ,|]* (= \([^)]*\)).*/\1/p' <<<"$depends")
if [ -n "$kernel_package" ] && [ -z "$kernel_version" ]; then
  kernel_version=$(apt-cache show --no-all-versions "$kernel_package" 2>/dev/null |
    sed -n 's/^Version: //p' || true)
fi
if [ -z "$kernel_package" ] || [ -z "$kernel_version" ]; then
  # No apt lists (apt-get update never ran): a kernel extracted before still does.
  cached=$(find "$CACHE" -maxdepth 2 -name .complete -printf '%T@ %h\n' 2>/dev/null | sort -rn | head -n 1 |
    cut -d' ' -f2- || true)
  [ -n "$cached" ] ||
    die "apt does not know linux-image-amd64's kernel package and nothing is cached in $CACHE: run apt-get update"
  say "apt does not resolve linux-image-amd64 (run apt-get update); using the cached $(basename "$cached")"
  KDIR=$cached
else
  KDIR=$CACHE/${kernel_package}_${kernel_version}
fi

extract() {  # extract DEB MEMBER...: members of the package's data into $KDIR
  local deb=$1; shift
  dpkg-deb --fsys-tarfile "$deb" | tar -x -C "$KDIR" --wildcards --no-wildcards-match-slash "$@"
}

ko_depends() {  # the modules a .ko needs, from its .modinfo ("depends=a,b"); no kmod on the host
  tr '\0' '\n' < "$1" | sed -n '/^depends=/{s///;s/,/ /g;p}'
}

module_path() {  # module_path NAME LIST: the line of modules.order/.builtin naming module NAME
  awk -v name="$1" '{ m = $0; sub(/.*\//, "", m); sub(/\.ko$/, "", m); gsub(/-/, "_", m)
                      if (m == name) { print; exit } }' "$2"
}

if [ ! -e "$KDIR/.complete" ]; then
  rm -rf "$KDIR"
  mkdir -p "$KDIR"
  deb=""
  for candidate in /var/cache/apt/archives/"${kernel_package}_${kernel_version//:/%3a}"_*.deb \
                   "$CACHE/${kernel_package}_${kernel_version//:/%3a}"_*.deb; do
    if [ -f "$candidate" ]; then deb=$candidate; break; fi
  done
  if [ -z "$deb" ]; then
    say "downloading $kernel_package $kernel_version (about 70 MB, once)"
    fetch() {
      (cd "$CACHE" && apt-get download -q -o APT::Sandbox::User="$(id -un)" "$kernel_package=$kernel_version")
    }
    if ! fetch; then
      # A stale list names a file the mirror no longer has (a newer kernel replaced it): update
      # the lists and start again, which may resolve another package.
      rm -rf "$KDIR"
      if [ "$(id -u)" -ne 0 ] || [ -n "${ANDROMEDA_VM_IMAGE_UPDATED:-}" ]; then
        die "apt-get download $kernel_package=$kernel_version failed; run apt-get update (as root)"
      fi
      say "download failed: apt-get update, then again"
      apt-get update -qq
      exec 8>&- 9>&-
      ANDROMEDA_VM_IMAGE_UPDATED=1 exec "$0" "${ARGS[@]}"
    fi
    deb=$(find "$CACHE" -maxdepth 1 -name "${kernel_package}_*.deb" -print -quit)
    [ -n "$deb" ] || die "apt-get download left no ${kernel_package}_*.deb in $CACHE"
  fi
  say "extracting the kernel and its NIC modules from $(basename "$deb")"
  # Each pass decompresses the whole package (400 MB, seconds): the first takes, besides the
  # kernel, the folders the NIC's modules usually live in; more passes only for what they lack.
  extract "$deb" './boot/vmlinuz-*' './boot/config-*' './lib/modules/*/modules.order' \
    './lib/modules/*/modules.builtin' './lib/modules/*/kernel/drivers/virtio/*.ko' \
    './lib/modules/*/kernel/drivers/net/*.ko' './lib/modules/*/kernel/net/core/*.ko'
  release=$(find "$KDIR/boot" -name 'vmlinuz-*' -printf '%f' -quit)
  release=${release#vmlinuz-}
  [ -n "$release" ] || die "$deb has no boot/vmlinuz-*"
  moddir=$KDIR/lib/modules/$release
  # Modules by name (a-b and a_b are one module): path[name] is empty for a built-in one.
  declare -A path=()
  pending=("${WANTED_MODULES[@]}")
  while [ ${#pending[@]} -gt 0 ]; do
    missing=()
    for name in "${pending[@]}"; do
      name=${name//-/_}
      [ -z "${path[$name]+set}" ] || continue
      if [ -n "$(module_path "$name" "$moddir/modules.builtin")" ]; then path[$name]=""; continue; fi
      path[$name]=$(module_path "$name" "$moddir/modules.order")
      [ -n "${path[$name]}" ] || die "module $name is neither built into $release nor in its modules.order"
      [ -f "$moddir/${path[$name]}" ] || missing+=("./lib/modules/$release/${path[$name]}")
    done
    [ ${#missing[@]} -eq 0 ] || extract "$deb" "${missing[@]}"
    next=()
    for name in "${pending[@]}"; do
      name=${name//-/_}
      [ -n "${path[$name]}" ] || continue
      read -ra deps <<<"$(ko_depends "$moddir/${path[$name]}")"
      next+=("${deps[@]}")
    done
    pending=()
    for name in "${next[@]}"; do [ -n "${path[${name//-/_}]+set}" ] || pending+=("$name"); done
  done
  # Load order: dependencies first, each once.
  ordered=()
  declare -A placed=()
  place() {
    local name=${1//-/_} dep
    [ -z "${placed[$name]:-}" ] || return 0
    placed[$name]=1
    [ -n "${path[$name]}" ] || return 0
    for dep in $(ko_depends "$moddir/${path[$name]}"); do place "$dep"; done
    ordered+=("${path[$name]}")
  }
  for name in "${WANTED_MODULES[@]}"; do place "$name"; done
  # Only the modules the guest loads stay in the cache.
  find "$moddir/kernel" -name '*.ko' | while read -r ko; do
    keep=0
    for p in "${ordered[@]}"; do [ "$ko" != "$moddir/$p" ] || keep=1; done
    [ "$keep" -eq 1 ] || rm -f "$ko"
  done
  find "$moddir/kernel" -type d -empty -delete
  # Kernels extracted before this one are not used again.
  find "$CACHE" -mindepth 1 -maxdepth 1 -type d -name 'linux-image-*' ! -path "$KDIR" -exec rm -rf {} +
  printf '%s\n' "${ordered[@]}" > "$KDIR/load-order"
  [ "$deb" = "${deb#"$CACHE"/}" ] || rm -f "$deb"  # ours, not apt's: what is needed is extracted
  touch "$KDIR/.complete"
fi
release=$(find "$KDIR/boot" -name 'vmlinuz-*' -printf '%f' -quit)
release=${release#vmlinuz-}
moddir=$KDIR/lib/modules/$release

# ---- The initramfs, rebuilt when an input is newer. ----

up_to_date() {
  local f
  for f in vmlinuz initramfs.cpio.gz kernel-release; do [ -e "$OUT/$f" ] || return 1; done
  [ "$(cat "$OUT/kernel-release")" = "$release" ] || return 1
  for f in "$0" "${GUEST_FILES[@]}" "$BUSYBOX" "$KDIR/.complete"; do
    [ "$OUT/initramfs.cpio.gz" -nt "$f" ] || return 1
  done
}
if [ "$FORCE" -eq 0 ] && up_to_date; then
  say "$OUT is up to date (Linux $release)"
  exit 0
fi

stage=$(mktemp -d "$OUT/.stage.XXXXXX")
trap 'rm -rf "$stage"' EXIT
root=$stage/root
mkdir -p "$root"/{bin,sbin,usr/bin,usr/sbin,usr/share/udhcpc,etc/udhcpc,proc,sys,dev,tmp,root,run,var/run,lib/modules}
chmod 1777 "$root/tmp"
cp "$BUSYBOX" "$root/bin/busybox"
# Every applet at its usual place (bin/sh, sbin/ip, usr/bin/nc, ...), as a relative symlink.
while read -r applet; do
  [ "$applet" = bin/busybox ] && continue
  up="" dir=$applet
  while [[ $dir == */* ]]; do dir=${dir%/*}; up+=../; done
  ln -sf "${up}bin/busybox" "$root/$applet"
done < <("$BUSYBOX" --list-full)
cp "$ROOT/scripts/vm-guest/init" "$root/init"
# Where Debian's busybox udhcpc looks (-s's default), and where other builds of it do.
cp "$ROOT/scripts/vm-guest/udhcpc.script" "$root/etc/udhcpc/default.script"
ln -s ../../../etc/udhcpc/default.script "$root/usr/share/udhcpc/default.script"
chmod 755 "$root/init" "$root/etc/udhcpc/default.script"
: > "$root/etc/modules"
while read -r ko; do
  name=$(basename "$ko" .ko)
  cp "$moddir/$ko" "$root/lib/modules/$name.ko"
  echo "$name" >> "$root/etc/modules"
done < "$KDIR/load-order"
printf '127.0.0.1\tlocalhost\n' > "$root/etc/hosts"
echo 'root:x:0:0:root:/root:/bin/sh' > "$root/etc/passwd"
echo 'root:x:0:' > "$root/etc/group"
: > "$root/etc/resolv.conf"

# Deterministic: sorted names, one owner, one time stamp, inode numbers from 1, no device numbers.
find "$root" -exec touch -h -d @0 {} +
(cd "$root" && find . -mindepth 1 | LC_ALL=C sort |
  "$BUSYBOX" cpio -o -H newc -R 0:0 --ignore-devno --renumber-inodes 2> /dev/null) |
  gzip -n -9 > "$stage/initramfs.cpio.gz"
cp "$KDIR/boot/vmlinuz-$release" "$stage/vmlinuz"
echo "$release" > "$stage/kernel-release"
mv -f "$stage/vmlinuz" "$stage/kernel-release" "$OUT/"
mv -f "$stage/initramfs.cpio.gz" "$OUT/"   # last: its time stamp says the set is complete
size_kib=$(( $(stat -c %s "$OUT/initramfs.cpio.gz") / 1024 ))
say "built $OUT: Linux $release, initramfs $size_kib KiB, modules: $(paste -sd' ' "$root/etc/modules")"
