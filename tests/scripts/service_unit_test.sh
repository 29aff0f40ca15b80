#!/usr/bin/env bash
# configs/andromedad@.service as systemd reads it, without systemd running it (systemd is not
# PID 1 where the tests run): `systemd-analyze verify` finds no error in it (its programs are
# pointed at this build's, its man pages at docs/man), and `systemd-analyze security --offline`
# rates its exposure at or below MAX_EXPOSURE (docs/operations.md explains what keeps it there).
#   service_unit_test.sh SOURCE_DIR ANDROMEDAD ANDROMEDACTL
set -euo pipefail
SOURCE=$1 DAEMON=$2 CTL=$3
# 0.0 (fully sandboxed) .. 10.0 (unprotected); this unit measured 3.1 ("OK") with systemd 252.
# The bound leaves room for a newer systemd that rates a setting differently, and fails a change
# that drops a whole protection (ProtectSystem=strict alone is worth 0.2, a capability up to 0.3).
MAX_EXPOSURE=3.5
fail() { echo "FAIL: $*" >&2; exit 1; }
command -v systemd-analyze > /dev/null || { echo "SKIP: systemd-analyze is not installed (Debian: systemd)"; exit 0; }

dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
mkdir -p "$dir/man/man8"
cp "$SOURCE"/docs/man/*.8 "$dir/man/man8/"
unit=$dir/andromedad@node1.service
sed -e "s|/usr/sbin/andromedad|$DAEMON|g" -e "s|/usr/bin/andromedactl|$CTL|g" "$SOURCE/configs/andromedad@.service" > "$unit"
grep -q "^ExecStart=$DAEMON " "$unit" || fail "the unit's ExecStart is not /usr/sbin/andromedad: $(grep ^ExecStart= "$unit")"

out=$(MANPATH=$dir/man systemd-analyze verify "$unit" 2>&1) || fail "systemd-analyze verify: $out"
[ -z "$out" ] || fail "systemd-analyze verify warns: $out"

report=$(systemd-analyze security --offline=true "$unit" 2>&1) || true
score=$(sed -n 's/.*Overall exposure level for andromedad@node1.service: \([0-9.]*\).*/\1/p' <<<"$report")
[ -n "$score" ] || fail "no exposure level in: $report"
echo "exposure level $score (bound $MAX_EXPOSURE)"
awk -v s="$score" -v m="$MAX_EXPOSURE" 'BEGIN { exit !(s <= m) }' || fail "exposure $score above $MAX_EXPOSURE: $report"
# What the score stands for: each of these protections is in force as systemd reads the unit.
for setting in "NoNewPrivileges=" "ProtectSystem=" "ProtectHome=" "PrivateTmp=" "RestrictAddressFamilies=~AF_(INET|INET6)" \
    "SystemCallFilter=~@clock" "CapabilityBoundingSet=~CAP_SYS_MODULE" "CapabilityBoundingSet=~CAP_(DAC_*|FOWNER|IPC_OWNER)"; do
  line=$(grep -F -m1 -- "$setting" <<<"$report" || true)
  case $setting in
    RestrictAddressFamilies=*) [[ $line == ✗* ]] || fail "$setting: expected open (etcd is reached over IP): $line" ;;
    *) [[ $line == ✓* ]] || fail "$setting is not in force: $line" ;;
  esac
done

# The capability lines agree with each other and with what andromedad checks for (host_checks.cpp).
bounding=$(sed -n 's/^CapabilityBoundingSet=//p' "$unit")
ambient=$(sed -n 's/^AmbientCapabilities=//p' "$unit")
[ "$bounding" = "$ambient" ] || fail "CapabilityBoundingSet ($bounding) and AmbientCapabilities ($ambient) differ"
for cap in $bounding; do
  grep -q "\"$cap\"" "$SOURCE/userspace/daemon/host_checks.cpp" || fail "$cap is in the unit but andromedad does not check for it"
done
for cap in $(grep -o '"CAP_[A-Z_]*"' "$SOURCE/userspace/daemon/host_checks.cpp" | tr -d '"' | sort -u); do
  grep -qw "$cap" <<<"$bounding" || fail "andromedad needs $cap but the unit does not grant it"
done
echo "OK: verify clean, exposure $score, capabilities $bounding"
