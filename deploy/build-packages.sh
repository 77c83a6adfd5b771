#!/usr/bin/env bash
# Builds the Debian packages edge-agent, edge-mqtt and dive-logger for this
# machine's architecture with dpkg-buildpackage (debian/), writes them to
# .build/debian/ (not to the parent directory, dpkg-buildpackage's default)
# and checks them with lintian (debian/lintian-check.sh).
# Usage: deploy/build-packages.sh [--out DIR] [--no-lintian]
# Needs: the Swift toolchain on PATH and the Build-Depends of debian/control
# (apt-get install debhelper help2man lintian libi2c-dev libgpiod-dev
# libsqlite3-dev libmosquitto-dev pkg-config). The Swift build stays in
# .build/release, so a second run only relinks what changed.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
out=$PWD/.build/debian
lintian=yes
while (($#)); do
    case $1 in
        --out) out=$(realpath -m -- "${2:?--out needs a directory}"); shift 2 ;;
        --no-lintian) lintian=no; shift ;;
        -h|--help) sed -n '2,11p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
        *) printf 'build-packages.sh: unknown option %s (see --help)\n' "$1" >&2; exit 2 ;;
    esac
done
command -v swift >/dev/null || { echo "build-packages.sh: swift is not on PATH (the Swift 6.3 toolchain builds the packages)" >&2; exit 1; }
command -v dpkg-buildpackage >/dev/null || { echo "build-packages.sh: dpkg-buildpackage missing: apt-get install dpkg-dev debhelper help2man" >&2; exit 1; }
version=$(dpkg-parsechangelog -SVersion)
arch=$(dpkg --print-architecture)
rm -rf "$out"; mkdir -p "$out"
changes=$out/edge-motion_${version}_${arch}.changes
EDGE_DEB_OUT=$out dpkg-buildpackage -b -uc -us \
    --changes-file="$changes" --buildinfo-file="$out/edge-motion_${version}_${arch}.buildinfo" \
    --changes-option=-u"$out" --buildinfo-option=-u"$out"
ls -l "$out"
if [[ $lintian == yes ]]; then
    command -v lintian >/dev/null || { echo "build-packages.sh: lintian missing: apt-get install lintian" >&2; exit 1; }
    # --fail-on error: errors fail; every warning left is explained in
    # debian/*.lintian-overrides or README.md's packaging notes.
    lintian --fail-on error,warning --display-info "$changes"
fi
