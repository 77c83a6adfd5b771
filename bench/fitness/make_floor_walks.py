#!/usr/bin/env python3
"""Floor-counting walks for ../shared/bench/activity/score_floors.py, made from physics.

No floors recordings are shared, so these are built: a wearer stands, walks on one floor,
climbs or descends stairs, rides an elevator, with the board in a pocket (gravity on an
arbitrary axis).  Written independently of the Swift code (stdlib only), so a mistake has to
be made twice to pass.

  accelerometer  100 Hz: gravity 9.80665 m/s^2 on a random unit axis, each step a raised-cosine
                 bump of 2-3.5 m/s^2 over 60 % of the step (left/right asymmetry, heel-toe second
                 bump), an elevator's 0.8-1.2 m/s^2 start/stop accelerations along gravity, white
                 noise 0.04 m/s^2; gyroscope: 0.02 rad/s noise, 0.5 rad/s sway while walking
  barometer      one reading every 40 ms (25 Hz), p = p0 (1 - h / 44330 m)^5.255 from the true
                 altitude h (stairs: 0.17 m per step; floors of 2.9-3.4 m with a landing half way;
                 elevator: 1.5 m/s top speed), BMP280 noise (1.3 Pa RMS), 0.16 Pa resolution and
                 a drift of -60 Pa/h (weather), so score_floors.py's --bmp280 stresses it further.

Usage:  make_floor_walks.py OUT_FOLDER [--seed N]
Writes OUT_FOLDER/ipin2023_floors/{index.json, <rec>.csv, <rec>.truth.json}.
"""

import json
import math
import random
import sys
from pathlib import Path

G = 9.80665
FS = 100.0
BARO_DT = 0.040


class Walk:
    def __init__(self, rng, start_floor=0):
        self.rng = rng
        self.t = 0.0
        self.h = 0.0
        self.floor = start_floor
        self.start_floor = start_floor
        self.rows = []            # (t, a_vertical_extra, walking_flag, h)
        self.landmarks = [[0.0, start_floor]]
        self.up_walk = self.down_walk = self.up_any = self.down_any = 0
        self.cadence = rng.uniform(1.6, 1.95)
        self.amp = rng.uniform(2.0, 3.5)
        self.step_k = 0

    def _emit(self, seconds, a_fn, h_fn, walking):
        n = int(round(seconds * FS))
        t0, h0 = self.t, self.h
        for i in range(n):
            tt = i / FS
            self.rows.append((t0 + tt, a_fn(tt), walking, h0 + h_fn(tt)))
        self.t = t0 + n / FS
        self.h = h0 + h_fn(n / FS)

    def stand(self, seconds):
        self._emit(seconds, lambda tt: 0.0, lambda tt: 0.0, False)

    def steps(self, n, rise_per_step=0.0):
        """n steps; the altitude changes by rise_per_step on each."""
        period = 1.0 / (self.cadence * self.rng.uniform(0.97, 1.03))
        amp = [self.amp * (1.0 if (self.step_k + k) % 2 == 0 else 0.7) for k in range(n)]
        self.step_k += n
        width = 0.6 * period

        def a_fn(tt):
            k = int(tt / period)
            v = 0.0
            for j in (k - 1, k):
                if 0 <= j < n:
                    s = tt - j * period
                    if 0 <= s < width:
                        v += amp[j] * 0.5 * (1 - math.cos(2 * math.pi * s / width))
                    s2 = s - 0.3 * period
                    if 0 <= s2 < width * 0.5:
                        v += 0.4 * amp[j] * 0.5 * (1 - math.cos(2 * math.pi * s2 / (width * 0.5)))
            return v - (sum(amp) / n) * 0.5 * 0.6 * 1.2
        self._emit(n * period, a_fn, lambda tt: rise_per_step * min(tt / period, n), True)

    def walk_flat(self, seconds):
        self.steps(max(1, int(seconds * self.cadence)))

    def stairs(self, floors):
        """Climb (floors > 0) or descend on foot, a landing half way up each floor."""
        sign = 1 if floors > 0 else -1
        for _ in range(abs(floors)):
            height = self.rng.uniform(2.9, 3.4)
            per_flight = int(round(height / 2 / 0.17))
            rise = sign * height / 2 / per_flight
            self.steps(per_flight, rise)
            self.steps(3)                              # the landing
            self.steps(per_flight, rise)
            self.floor += sign
            if sign > 0:
                self.up_walk += 1; self.up_any += 1
            else:
                self.down_walk += 1; self.down_any += 1
            self.landmarks.append([round(self.t, 2), self.floor])
            self.steps(2)                              # off the stairs

    def elevator(self, floors):
        """Stand in an elevator that moves `floors` floors (3.3 m each)."""
        self.stand(self.rng.uniform(3, 6))             # doors close
        dist = abs(floors) * 3.3
        acc, vmax = self.rng.uniform(0.8, 1.2), 1.5
        ta = vmax / acc
        tc = max(0.0, (dist - acc * ta * ta) / vmax)
        total = 2 * ta + tc
        sign = 1 if floors > 0 else -1

        def pos(tt):
            if tt < ta:
                return 0.5 * acc * tt * tt
            if tt < ta + tc:
                return 0.5 * acc * ta * ta + vmax * (tt - ta)
            r = total - tt
            return dist - 0.5 * acc * r * r

        def a_fn(tt):
            if tt < ta:
                return sign * acc
            if tt >= ta + tc:
                return -sign * acc
            return 0.0
        self._emit(total, a_fn, lambda tt: sign * pos(min(tt, total)), False)
        self.floor += floors
        if floors > 0:
            self.up_any += floors
        else:
            self.down_any += -floors
        self.landmarks.append([round(self.t, 2), self.floor])
        self.stand(self.rng.uniform(2, 4))             # doors open


def write(walk, mode, folder, rec, rng):
    ax = [rng.gauss(0, 1) for _ in range(3)]
    norm = math.sqrt(sum(x * x for x in ax))
    up = [x / norm for x in ax]
    p0 = rng.uniform(95000, 102000)
    drift_pa_s = -60.0 / 3600.0
    next_baro = 0.0
    lines = ['t,ax,ay,az,gx,gy,gz,p']
    for (t, av, walking, h) in walk.rows:
        f = G + av
        a = [f * u + rng.gauss(0, 0.04) for u in up]
        gs = 0.5 if walking else 0.0
        g = [rng.gauss(0, 0.02) + gs * math.sin(2 * math.pi * 0.9 * t + k) for k in range(3)]
        p = ''
        if t + 1e-9 >= next_baro:
            pv = p0 * (1 - h / 44330.0) ** 5.255 + drift_pa_s * t + rng.gauss(0, 1.3)
            p = f'{round(pv / 0.16) * 0.16:.2f}'
            next_baro += BARO_DT
        lines.append(f'{t:.2f},{a[0]:.4f},{a[1]:.4f},{a[2]:.4f},{g[0]:.4f},{g[1]:.4f},{g[2]:.4f},{p}')
    (folder / f'{rec}.csv').write_text('\n'.join(lines) + '\n')
    truth = {'transition_mode': mode,
             'floors_ascended_walked': walk.up_walk, 'floors_descended_walked': walk.down_walk,
             'floors_ascended_any': walk.up_any, 'floors_descended_any': walk.down_any,
             'landmarks': walk.landmarks, 'start_floor': walk.start_floor,
             'duration_s': round(walk.t, 2),
             'note': 'synthetic walk made by bench/fitness/make_floor_walks.py'}
    (folder / f'{rec}.truth.json').write_text(json.dumps(truth, indent=1))


def main():
    args = sys.argv[1:]
    if not args or args[0].startswith('-'):
        sys.exit('usage: make_floor_walks.py OUT_FOLDER [--seed N]')
    out = Path(args[0]) / 'ipin2023_floors'
    seed = int(args[args.index('--seed') + 1]) if '--seed' in args else 1
    out.mkdir(parents=True, exist_ok=True)
    rng = random.Random(seed)
    recs = []

    def make(name, mode, build):
        w = Walk(rng)
        build(w)
        write(w, mode, out, name, rng)
        recs.append(name)

    for i in range(3):
        make(f'stairs_up3_{i}', 'stairs', lambda w: (w.stand(8), w.walk_flat(20), w.stairs(3), w.walk_flat(20), w.stand(10)))
        make(f'stairs_down2_{i}', 'stairs', lambda w: (w.stand(8), w.walk_flat(15), w.stairs(-2), w.walk_flat(15), w.stand(10)))
        make(f'stairs_updown_{i}', 'stairs', lambda w: (w.stand(5), w.walk_flat(10), w.stairs(2), w.walk_flat(30),
                                                        w.stairs(-1), w.walk_flat(10), w.stairs(-1), w.walk_flat(10), w.stand(5)))
        make(f'elevator_up4_{i}', 'elevator', lambda w: (w.stand(5), w.walk_flat(15), w.elevator(4), w.walk_flat(15), w.stand(5)))
        make(f'elevator_down3_{i}', 'elevator', lambda w: (w.stand(5), w.walk_flat(10), w.elevator(-3), w.walk_flat(10),
                                                           w.elevator(1), w.walk_flat(10), w.stand(5)))
        make(f'flat_{i}', 'none', lambda w: [w.walk_flat(60) if k % 2 == 0 else w.stand(20) for k in range(12)])
    (out / 'index.json').write_text(json.dumps({'recordings': recs}, indent=1))
    print(f'{len(recs)} walks in {out}')


if __name__ == '__main__':
    main()
