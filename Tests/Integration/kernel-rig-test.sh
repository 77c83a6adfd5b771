#!/usr/bin/env bash
# Kernel integration test: runs edge-agent against the Linux kernel's real
# I2C and GPIO stacks in a throwaway VM (the project's kernel rig,
# $SHARED/rig/kernel-rig.sh; CI provides SHARED, and it defaults to a
# `shared` folder beside the repository):
# i2c-stub serves /dev/i2c-N (SMBus only: exercises the SMBus transport),
# gpio-sim serves /dev/gpiochipN (found by its label).
#
# i2c-stub is a bare register file: it keeps what is written and has no
# behaviour. We seed it like real chips at rest:
#   BMP280 @0x76: the datasheet's worked example (calibration, adc_T 519888,
#                 adc_P 415148) -> 25.08 C, 100653.254 Pa (int64 Q24.8 / 256)
#   MPU-6050 @0x68: WHO_AM_I 0x68, accel Z +16384 (+1 g at +-2 g)
#   QMC5883L @0x0d: id 0xFF, DRDY, field (600, -300, -1200) LSB at +-8 G
#                 -> (20, -10, -40) uT
# and check probe's identification, read's exact values, the error for an
# address with no chip, and rising edges through libgpiod.
# Usage: Tests/Integration/kernel-rig-test.sh   (from the package root,
# after `swift build -c release`)
set -euo pipefail
cd "$(dirname "$0")/../.."
SHARED=${SHARED:-$(cd .. && pwd)/shared}
RIG="$SHARED/rig/kernel-rig.sh"
[ -x .build/release/edge-agent ] || swift build -c release --product edge-agent

if [ "${RIG_IN_VM:-}" != "1" ]; then
  exec bash "$RIG" --timeout 240 -- bash Tests/Integration/kernel-rig-test.sh
fi

# ---- inside the VM ---------------------------------------------------------
B=$RIG_I2C_BUS
A=.build/release/edge-agent
fail=0
pass=0
check() { # name, command...
  local name=$1; shift
  if "$@"; then echo "PASS $name"; pass=$((pass+1)); else echo "FAIL $name"; fail=$((fail+1)); fi
}

# BMP280 datasheet example.
i2cset -y $B 0x76 0xd0 0x58
cal=(0x70 0x6b 0x43 0x67 0x18 0xfc 0x7d 0x8e 0x43 0xd6 0xd0 0x0b 0x27 0x0b 0x8c 0x00 0xf9 0xff 0x8c 0x3c 0xf8 0xc6 0x70 0x17)
r=0x88; for b in "${cal[@]}"; do i2cset -y $B 0x76 $r $b; r=$((r+1)); done
for rv in 0xf7:0x65 0xf8:0x5a 0xf9:0xc0 0xfa:0x7e 0xfb:0xed 0xfc:0x00 0xf3:0x00; do
  i2cset -y $B 0x76 ${rv%%:*} ${rv##*:}
done
# MPU-6050 at rest, +1 g on Z.
i2cset -y $B 0x68 0x75 0x68
i2cset -y $B 0x68 0x3f 0x40
# QMC5883L: id, DRDY, field little-endian.
i2cset -y $B 0x0d 0x0d 0xff
for rv in 0x00:0x58 0x01:0x02 0x02:0xd4 0x03:0xfe 0x04:0x50 0x05:0xfb 0x06:0x01; do
  i2cset -y $B 0x0d ${rv%%:*} ${rv##*:}
done

work=$(mktemp -d)
cat > $work/board.json5 <<JSON
{ name: "rig", bus: $B, chips: [
  { kind: "mpu6050", address: 0x68 }, { kind: "bmp280", address: 0x76 }, { kind: "qmc5883l", address: 0x0d } ] }
JSON
cat > $work/missing.json5 <<JSON
{ name: "rig with a missing chip", bus: $B, chips: [
  { kind: "mpu6050", address: 0x68 }, { kind: "bmp280", address: 0x77 } ] }
JSON
cat > $work/config.json5 <<JSON
{ sensors: {
  mpu6050: { accel_range_g: 2, gyro_range_dps: 250 },
  bmp280: { mode: "normal", pressure_oversampling: 16, temperature_oversampling: 2 },
  qmc5883l: { range_gauss: 8 } } }
JSON

echo "--- probe --json"
$A probe --board $work/board.json5 --json | tee $work/probe.json
check "probe identifies the three chips" python3 - $work/probe.json <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
st = {c["id"]: c["status"] for c in d["configured"]}
assert st == {"mpu6050@0x68": "present", "bmp280@0x76": "present", "qmc5883l@0x0d": "present"}, st
found = {f["address"] for f in d["found"]}
assert {"0x68", "0x76", "0x0d"} <= found, found
PY

echo "--- read --json"
$A read --board $work/board.json5 --config $work/config.json5 --count 1 --json | tee $work/read.json
check "read gives the exact datasheet values" python3 - $work/read.json <<'PY'
import json, sys
d = json.loads(open(sys.argv[1]).read().splitlines()[0])
c = {x["id"]: x for x in d["chips"]}
b = c["bmp280@0x76"]
assert abs(b["pressure_pa"] - 100653.254) < 0.0005, b
assert abs(b["temperature_c"] - 25.08) < 1e-9, b
m = c["mpu6050@0x68"]
ax, ay, az = m["accel_mps2"]
assert abs(az - 9.80665) < 1e-9 and ax == 0 and ay == 0, m
q = c["qmc5883l@0x0d"]
fx, fy, fz = q["field_ut"]
assert abs(fx - 20) < 1e-9 and abs(fy + 10) < 1e-9 and abs(fz + 40) < 1e-9, q
PY

echo "--- --bus N uses default addresses"
check "read --bus works" $A read --bus $B --config $work/config.json5 --count 1 --json

echo "--- missing chip"
set +e
$A probe --board $work/missing.json5 > $work/missing.out 2>&1; rc=$?
set -e
cat $work/missing.out
check "probe exits non-zero for a missing chip" test $rc -ne 0
check "probe names the missing chip" grep -q "bmp280@0x77.*missing" $work/missing.out
set +e
$A read --board $work/missing.json5 --count 1 > $work/read-missing.out 2>&1; rc=$?
set -e
cat $work/read-missing.out
check "read fails for a missing chip" test $rc -ne 0
check "the error says nothing answered" grep -q "nothing answered at 0x77" $work/read-missing.out

echo "--- data-ready edges through libgpiod (gpio-sim, found by label)"
line=3
echo pull-down > $RIG_GPIO_SIM_SYSFS/sim_gpio$line/pull
$A wait-edge --chip "$RIG_GPIOCHIP_LABEL" --line $line --count 2 --timeout 5 > $work/edges.out 2>&1 &
waiter=$!
# Pulse only once the waiter has requested the line (it says so): a fixed
# sleep lost the first edge on a loaded CI machine.
for i in $(seq 1 600); do
  grep -q '^waiting for' $work/edges.out 2>/dev/null && break
  kill -0 $waiter 2>/dev/null || break
  sleep 0.05
done
for i in 1 2; do
  echo pull-up > $RIG_GPIO_SIM_SYSFS/sim_gpio$line/pull; sleep 0.1
  echo pull-down > $RIG_GPIO_SIM_SYSFS/sim_gpio$line/pull; sleep 0.1
done
set +e; wait $waiter; rc=$?; set -e
cat $work/edges.out
check "two rising edges seen" test $rc -eq 0 -a "$(grep -c '^edge' $work/edges.out)" -eq 2
set +e
$A wait-edge --chip no-such-chip --line 0 --count 1 --timeout 1 > $work/nochip.out 2>&1; rc=$?
set -e
cat $work/nochip.out
check "unknown GPIO chip label is a clear error" grep -q "no GPIO chip has this label" $work/nochip.out

echo "$pass passed, $fail failed"
[ $fail -eq 0 ]
