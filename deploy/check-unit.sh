#!/usr/bin/env bash
# Checks deploy/edge-agent.service (or another unit, e.g. edge-mqtt.service)
# with systemd's own tools:
#   1. systemd-analyze verify            — syntax, directives, referenced units,
#                                          ExecStart= binary executable.
#   2. systemd-analyze security --offline=true
#                                        — sandboxing exposure; fails unless the
#                                          rating is "OK" or better (< 5.0).
# Usage: deploy/check-unit.sh [UNIT_FILE]
# Needs systemd-analyze (systemd ≥ 250 for --offline/--threshold); no root,
# no running systemd. If the unit's ExecStart= binary does not exist, verify runs
# on a temporary copy of the unit whose ExecStart= points at /bin/true.
set -euo pipefail

unit=${1:-"$(cd "$(dirname "$0")" && pwd)/edge-agent.service"}
# The unit's own executable (edge-agent, edge-mqtt).
binary=$(sed -n 's/^ExecStart=\([^ ]*\).*/\1/p' "$unit" 2>/dev/null | head -1)
binary=${binary:-/usr/bin/edge-agent}
# "OK" covers exposure 1.0-4.9; systemd compares --threshold on a 0-100 scale.
max_exposure=49

say() { printf 'check-unit: %s\n' "$*"; }
die() { printf 'check-unit: FAIL: %s\n' "$*" >&2; exit 1; }

command -v systemd-analyze >/dev/null || die "systemd-analyze not found (install systemd)"
[[ -f $unit ]] || die "no such unit file: $unit"

tmpdir=$(mktemp -d)
dummy_created=no
cleanup() {
    [[ $dummy_created == yes ]] && rm -f "$binary"
    rm -rf "$tmpdir"
}
trap cleanup EXIT

# --- 1. verify ---------------------------------------------------------------
verify_unit=$unit
if [[ ! -x $binary ]]; then
    # Never a dummy in /usr/bin, where the Debian package puts the binary.
    verify_unit="$tmpdir/$(basename "$unit")"
    sed "s|^ExecStart=$binary|ExecStart=/bin/true|" "$unit" >"$verify_unit"
    say "$binary missing: verifying a copy with ExecStart=/bin/true"
fi
say "systemd-analyze verify $(basename "$unit")"
# verify prints problems on stderr and may exit 0 for warnings: fail on any output.
verify_out=$(systemd-analyze verify --man=no "$verify_unit" 2>&1) || { printf '%s\n' "$verify_out" >&2; die "verify failed"; }
if [[ -n $verify_out ]]; then
    printf '%s\n' "$verify_out" >&2
    die "verify reported problems"
fi
say "verify: clean"

# --- 2. security -------------------------------------------------------------
say "systemd-analyze security --offline=true $(basename "$unit")"
security_out=$(systemd-analyze security --offline=true --no-pager "$unit" 2>&1) || true
overall=$(printf '%s\n' "$security_out" | grep -E 'Overall exposure level' || true)
[[ -n $overall ]] || { printf '%s\n' "$security_out" >&2; die "no exposure level in the output"; }
printf '%s\n' "$security_out" | grep -E '^✗' || true
say "${overall#→ }"
level=$(printf '%s\n' "$overall" | sed -E 's/.*: [0-9.]+ ([A-Z]+).*/\1/')
case $level in
    PERFECT|SAFE|OK) ;;
    *) die "rating $level is worse than OK" ;;
esac
systemd-analyze security --offline=true --no-pager --threshold=$max_exposure "$unit" >/dev/null 2>&1 \
    || die "exposure above the threshold ($max_exposure/100)"
say "PASS: verify clean, rating $level"
