#!/bin/sh
# Builds the release binaries and runs every benchmark with the durations the
# targets are judged on, printing the machine, the commit and each command
# before its figures. Usage: bench/run.sh [--realtime-too] [LOGFILE]
# (from anywhere; LOGFILE also gets a copy of everything printed).
# About 12 minutes (16 with --realtime-too). Needs cyclictest (sudo apt-get install rt-tests).
set -u
cd "$(dirname "$0")/.." || exit 2

realtime_too=no
if [ "${1:-}" = "--realtime-too" ]; then realtime_too=yes; shift; fi
log=${1:-/dev/null}

# One product per `swift build`: with two --product options SwiftPM builds only the last.
swift build -c release --static-swift-stdlib --product edge-agent >&2 || exit 2
swift build -c release --static-swift-stdlib --product edge-bench >&2 || exit 2
bin=$(swift build -c release --show-bin-path)

if ! command -v cyclictest >/dev/null 2>&1; then
    echo "cyclictest not found: install it with: sudo apt-get install rt-tests" >&2
    exit 2
fi

status=0
run() {
    echo
    echo "\$ edge-bench $*"
    "$bin/edge-bench" "$@" || status=1
}

{
    echo "# edge-bench run, $(date -u '+%Y-%m-%d %H:%M UTC')"
    echo "# commit $(git rev-parse --short HEAD 2>/dev/null || echo unknown)$(git diff --quiet 2>/dev/null || echo ' (with local changes)')"
    echo "# $(uname -srm), $(nproc) CPUs, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')"
    echo "# $(swift --version 2>/dev/null | head -1)"
    echo "# $(cyclictest --help 2>&1 | head -1)"
    echo "# load before: $(cut -d' ' -f1-3 /proc/loadavg)"
    run loop --repeat 2
    if [ "$realtime_too" = yes ]; then run loop --realtime; fi
    run footprint --repeat 3
    run fanout
    run altitude
    run coremotion
    run step
    echo
    echo "# load after: $(cut -d' ' -f1-3 /proc/loadavg)"
} 2>&1 | tee "$log"
exit $status
