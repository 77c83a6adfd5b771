#!/usr/bin/env bash
# Re-records the committed recordings from the simulated fixture board on a
# virtual clock (byte-for-byte reproducible), then regenerates the expected
# replay outputs. Run from the package root after `swift build`:
#   Tests/Fixtures/recordings/regenerate.sh
# Explain in the commit why a recording or an expected output changed.
set -euo pipefail
cd "$(dirname "$0")/../../.."
A=.build/debug/edge-agent
D=Tests/Fixtures/recordings
$A record $D/sim-maglost.log --config $D/config.json5 --duration 1.6 --virtual-clock
$A record $D/sim-maglost.csv --csv --config $D/config.json5 --duration 1.6 --virtual-clock
$A record $D/sim-other-chips.log --config $D/other-chips-config.json5 --duration 1.6 --virtual-clock
# The header names the files it was made from; keep them repository-relative.
REPLAY_REGENERATE_GOLDENS=1 swift test --filter ReplayGolden
