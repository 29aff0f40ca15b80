#!/usr/bin/env bash
# scripts/hw-validate.sh: a dry run touches nothing; a real run (root) probes its own veth pair,
# reports native XDP and the AF_XDP bind actually achieved, and leaves no namespace behind.
set -euo pipefail
ROOT=$1
cd "$ROOT"
fail() { echo "FAIL: $*" >&2; exit 1; }

before=$(ip netns list | grep -c '^andro-hw-' || true)
out=$(scripts/hw-validate.sh --dry-run --skip-bench 2>&1) || fail "dry run exited non-zero: $out"
grep -q "dry run: nothing attached, nothing written" <<<"$out" || fail "dry run did not say so: $out"

if [ "$(id -u)" -ne 0 ]; then
  [ "${ANDROMEDA_REQUIRE_ROOT_TESTS:-0}" = 1 ] && fail "needs root and ANDROMEDA_REQUIRE_ROOT_TESTS=1"
  echo "SKIP: the real run needs root"; exit 0
fi
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
scripts/hw-validate.sh --skip-bench --out "$dir" > "$dir/stdout" 2> "$dir/stderr" || fail "real run failed: $(cat "$dir/stderr")"
python3 - "$dir/report.json" <<'PY' || fail "report.json: $(cat "$dir/report.json")"
import json, sys
r = json.load(open(sys.argv[1]))
veth = [i for i in r["interfaces"] if i.get("driver") == "veth"]
assert veth, "no veth probed"
assert veth[0]["native_xdp"] is True, veth[0]
assert veth[0]["af_xdp_bind"] in ("copy", "zero-copy"), veth[0]
assert veth[0]["af_xdp_unaligned_chunks"] is True, veth[0]
assert "veth only" in r["verdict"], r["verdict"]
PY
grep -q "^| hwv0 | veth |" "$dir/report.md" || fail "report.md lacks the veth row"
after=$(ip netns list | grep -c '^andro-hw-' || true)
[ "$after" -eq "$before" ] || fail "left a namespace behind"
echo "PASS"
