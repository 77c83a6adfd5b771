#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""The depth model's targets (issue 10), through the real CLI.

  * `edge-agent depth P --water teos10 --latitude L --json` against TEOS-10
    itself: PyPI `gsw`'s `z_from_p` (the GSW-C library behind numpy), over
    0..1000 dbar (step 25) at latitudes -80..80 (step 10). Target: max
    |error| <= 1 mm.
  * the hydrostatic modes (fresh, en13319, salt, a density; standard and
    normal gravity) against rho*g*h computed here. Target: relative error
    <= 1e-9.

Usage: bench/depth-teos10.py [--agent PATH]   (pip install gsw)
Exit status 0 when both targets are met, 1 otherwise, 2 if it cannot run.
"""
import json, math, subprocess, sys

agent = ".build/debug/edge-agent"
if "--agent" in sys.argv:
    agent = sys.argv[sys.argv.index("--agent") + 1]
try:
    import gsw
except ImportError:
    print("needs PyPI gsw: pip install gsw", file=sys.stderr)
    sys.exit(2)


def depth(*args):
    out = subprocess.run([agent, "depth", *map(str, args), "--json"], check=True, capture_output=True, text=True).stdout
    return json.loads(out)["depth_m"]


surface = 101325.0
worst = (0.0, None)
n = 0
for dbar in range(0, 1001, 25):
    for lat in range(-80, 81, 10):
        mine = depth(surface + dbar * 1e4, "--surface", surface, "--water", "teos10", "--latitude", lat)
        ref = -float(gsw.z_from_p(dbar, lat))
        err = abs(mine - ref)
        n += 1
        if err >= worst[0]:
            worst = (err, (dbar, lat, mine, ref))
print(f"teos10 vs gsw {gsw.__version__} z_from_p: {n} points, max |error| = {worst[0] * 1000:.3g} mm "
      f"(at {worst[1][0]} dbar, {worst[1][1]} deg: {worst[1][2]!r} vs {worst[1][3]!r}); target <= 1 mm")
teos_ok = worst[0] <= 1e-3


def normal_gravity(lat):
    s2 = math.sin(math.radians(lat)) ** 2
    return 9.7803253359 * (1 + 0.00193185265241 * s2) / math.sqrt(1 - 0.00669437999013 * s2)


rel = 0.0
m = 0
for water, rho in [("fresh", 997.0), ("en13319", 1019.716), ("salt", 1025.0), ("1008.5", 1008.5)]:
    for grav, lat in [("standard", None), ("normal", 52.0)]:
        g = 9.80665 if lat is None else normal_gravity(lat)
        for h in [0.1, 1, 6, 10, 18, 40, 100, 300]:
            p = 98000.0 + rho * g * h
            args = [p, "--surface", 98000.0, "--water", water, "--gravity", grav]
            if lat is not None:
                args += ["--latitude", lat]
            d = depth(*args)
            rel = max(rel, abs(d - h) / h)
            m += 1
print(f"hydrostatic vs rho*g*h: {m} points, max relative error = {rel:.3g}; target <= 1e-9")
hydro_ok = rel <= 1e-9
print("verdict: " + ("both targets met" if teos_ok and hydro_ok else "TARGET MISSED"))
sys.exit(0 if teos_ok and hydro_ok else 1)
