#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Sample-by-sample comparison of edge-agent's attitude filter with VQF itself.

The attitude filter (Sources/EdgeFusion/AttitudeFilter.swift) follows VQF's
reference implementation with VQF's default parameters. This script is the
test that catches it drifting from VQF: on every BROAD trial it runs

  * `edge-agent fuse --mode 9d --frame xMagneticNorthZVertical` and
    `edge-agent fuse --mode 6d --frame xArbitraryZVertical` (the 6D input has
    every magnetometer value set to 0, as the BROAD scorer does), and
  * VQF's own package (PyPI `vqf`, the C++ implementation behind Cython), with
    its default parameters and the sample interval of the trial, on exactly
    the same numbers the agent reads (the CSV text, parsed to doubles),

and compares the two orientations SAMPLE BY SAMPLE: the rotation angle
between them, 2 atan2(|vec(p* q)|, |w(p* q)|) (q and -q are the same
orientation). 9D: VQF's quat9D is sensor-to-ENU; turned by -90 deg about the
vertical it is the agent's NWU (Core Motion's xMagneticNorthZVertical). 6D:
VQF's quat6D and the agent's xArbitraryZVertical are the same frame (Z up,
heading where the filter started).

Tolerances (per trial, in radians; printed in degrees):

  u         the agent's output quantum: `fuse` prints each quaternion
            component with a fixed number of decimals (9 today; read from the
            output), so each is within u/2 of the filter's value.
  rounding  the angle that rounding alone can add: |vec(dq)| <= |dq| <= u for
            the four components, so at most 2 atan(u / (1 - u)) ~ 2u per
            sample; its RMS for uniform rounding errors is u (E|vec|^2 = 3
            components x u^2/12, angle = 2|vec|).
  fp        floating-point reordering: the Swift code computes the same
            equations in another order (fused sums, a Taylor series for small
            rotation steps, cos/sin of delta/2 turned incrementally, Newton
            renormalisation). Allowed: 8 roundings of 2^-52 per sample,
            accumulating linearly over the trial's n samples (n x 8 x 2^-52 =
            1e-10 rad for 57 000 samples). Heading in 6D is pure gyroscope
            integration, so errors there do accumulate; everything else is
            pulled back by the filter's own corrections, so this is generous.
  max per sample   <= 2 atan(u / (1 - u)) + fp          (a hard bound)
  RMS over samples <= 1.1 u + fp   (10 % above the expected rounding RMS: the
                   rounding errors of slowly changing outputs are correlated)
  BROAD score: |RMSE(agent) - RMSE(VQF)| against the optical truth (9D total,
                   6D inclination error, over the movement phases) <= the max
                   bound (the error angles differ by at most the angle between
                   the two estimates, per sample).

A real change of behaviour (a parameter, an equation, dt handling, a threshold
decision taken on another sample) shows up orders of magnitude above these.

Offline (`fuse --offline`, skipped with --no-offline): the same comparison of
`fuse --offline --self-calibration off` with VQF's own offline mode
(`vqf.offlineVQF`, the C++ `offlineVQF`), sample by sample, 9D and 6D, with the
same tolerances; and the default offline path (`fuse --offline`, continuous
calibration on) scored on BROAD per group next to VQF offline (and VQF), which
it must not be worse than on any group.

Usage (from anywhere; builds nothing: build edge-agent in release first):

  swift build -c release --product edge-agent
  python3 bench/vqf-compare.py --data DIR [--trials 06,24] [--agent PATH]

DIR holds BROAD trials (Laidig, Caruso, Cereatti, Seel: "BROAD - A Benchmark
for Robust Inertial Orientation Estimation", Data 6(7):72, 2021; CC BY 4.0)
converted to `<trial>.csv` with header t,gx,gy,gz,ax,ay,az,mx,my,mz (s, rad/s,
m/s^2, uT), optionally `<trial>.truth.csv` (t,qw,qx,qy,qz,movement: sensor-to-
ENU optical truth, empty where lost) and `index.json` (trial list and
sampling rates). `--data` defaults to $BROAD_DATA.

Cost (--cost R, instead of the comparison): per trial, R alternated runs
each of `fuse --stats` with `--self-calibration off` and `on` (its
fusion_time_s: thread CPU time of all per-sample work, no I/O) and of VQF's
C++ core (`VQF(Ts).updateBatch`, thread CPU time, as the BROAD scorer times
it), medians in microseconds per sample; --baseline PATH adds another
edge-agent binary (e.g. one built from main) to the same run.

The first run creates a virtual environment (default .build/vqf-compare-venv,
or $VQF_VENV / --venv) with the versions pinned in
bench/vqf-compare-requirements.txt from the package index, and re-runs itself
in it; later runs reuse it. Exit status: 0 every trial within tolerance,
1 a trial beyond it, 2 could not run.
"""

import argparse
import hashlib
import json
import math
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
REQUIREMENTS = HERE / 'vqf-compare-requirements.txt'
SETTINGS_SOURCE = ROOT / 'Sources' / 'EdgeFusion' / 'AttitudeFilter.swift'
EPS = 2.0 ** -52
FP_ROUNDINGS_PER_SAMPLE = 8
RMS_MARGIN = 1.1

# AttitudeFilter.Settings -> VQFParams (the project claims VQF's defaults)
SETTING_TO_VQF = {
    'tauAcc': 'tauAcc', 'tauMag': 'tauMag',
    'motionBiasEstimation': 'motionBiasEstEnabled', 'restBiasEstimation': 'restBiasEstEnabled',
    'magneticDisturbanceRejection': 'magDistRejectionEnabled',
    'biasSigmaInit': 'biasSigmaInit', 'biasForgettingTime': 'biasForgettingTime', 'biasClip': 'biasClip',
    'biasSigmaMotion': 'biasSigmaMotion', 'biasVerticalForgettingFactor': 'biasVerticalForgettingFactor',
    'biasSigmaRest': 'biasSigmaRest', 'restMinTime': 'restMinT', 'restFilterTau': 'restFilterTau',
    'restThresholdGyro': 'restThGyr', 'restThresholdAccel': 'restThAcc',
    'magCurrentTau': 'magCurrentTau', 'magRefTau': 'magRefTau', 'magNormThreshold': 'magNormTh',
    'magDipThreshold': 'magDipTh', 'magNewTime': 'magNewTime', 'magNewFirstTime': 'magNewFirstTime',
    'magNewMinGyro': 'magNewMinGyr', 'magMinUndisturbedTime': 'magMinUndisturbedTime',
    'magMaxRejectionTime': 'magMaxRejectionTime', 'magRejectionFactor': 'magRejectionFactor',
}
PROJECT_ONLY = ('coefficientTolerance', 'magnetometerCalibration', 'declination', 'magnetometerSelfCalibration',
                'tauMagSelfCalibrated')


class CannotRun(Exception):
    pass


# ----------------------------------------------------------------------------- venv

def ensure_venv(venv):
    """Creates (or refreshes) the venv with the pinned packages; returns its python."""
    python = venv / 'bin' / 'python'
    stamp = venv / '.requirements.sha256'
    want = hashlib.sha256(REQUIREMENTS.read_bytes()).hexdigest()
    if python.exists() and stamp.exists() and stamp.read_text().strip() == want:
        return python
    print(f'vqf-compare: setting up {venv} from {REQUIREMENTS.relative_to(ROOT)}', flush=True)
    try:
        if not python.exists():
            subprocess.run([sys.executable, '-m', 'venv', str(venv)], check=True)
        install = [str(python), '-m', 'pip', 'install', '--disable-pip-version-check', '-q', '-r', str(REQUIREMENTS)]
        if subprocess.run(install).returncode != 0:
            print('vqf-compare: pip failed; trying once more', flush=True)
            time.sleep(5)
            subprocess.run(install, check=True)
    except (subprocess.CalledProcessError, OSError) as e:
        raise CannotRun(f'could not set up the virtual environment {venv}: {e}')
    stamp.write_text(want + '\n')
    return python


def in_venv(venv):
    try:
        return Path(sys.prefix).resolve() == venv.resolve()
    except OSError:
        return False


# ----------------------------------------------------------------------------- quaternions

def qmul(a, b):
    import numpy as np
    aw, ax, ay, az = a[..., 0], a[..., 1], a[..., 2], a[..., 3]
    bw, bx, by, bz = b[..., 0], b[..., 1], b[..., 2], b[..., 3]
    return np.stack([aw * bw - ax * bx - ay * by - az * bz,
                     aw * bx + ax * bw + ay * bz - az * by,
                     aw * by - ax * bz + ay * bw + az * bx,
                     aw * bz + ax * by - ay * bx + az * bw], axis=-1)


def qconj(q):
    q = q.copy()
    q[..., 1:] *= -1
    return q


def angle_between(p, q):
    """Rotation angle (rad) between orientations p and q, per row (q and -q equal)."""
    import numpy as np
    d = qmul(qconj(p), q)
    return 2 * np.arctan2(np.linalg.norm(d[:, 1:], axis=1), np.abs(d[:, 0]))


def about_z(angle):
    import numpy as np
    return np.array([math.cos(angle / 2), 0.0, 0.0, math.sin(angle / 2)])


def broad_errors(q_est_enu, q_ref_enu):
    """BROAD error angles (rad): total and inclination (rotation left over after
    removing the part about the earth's vertical) of q_est * conj(q_ref)."""
    import numpy as np
    e = qmul(q_est_enu, qconj(q_ref_enu))
    e /= np.linalg.norm(e, axis=1, keepdims=True)
    total = 2 * np.arccos(np.clip(np.abs(e[:, 0]), 0, 1))
    incl = 2 * np.arccos(np.clip(np.sqrt(e[:, 0] ** 2 + e[:, 3] ** 2), 0, 1))
    return total, incl


def rms(x):
    import numpy as np
    return float(np.sqrt(np.mean(np.square(x)))) if len(x) else float('nan')


# ----------------------------------------------------------------------------- data

def list_trials(data, wanted):
    index = {}
    if (data / 'index.json').exists():
        index = {t['name']: t for t in json.loads((data / 'index.json').read_text()).get('trials', [])}
        names = [n for n in index if (data / f'{n}.csv').exists()]
    else:
        names = sorted(p.stem for p in data.glob('*.csv') if not p.name.endswith('.truth.csv'))
    if wanted:
        keys = [w.strip() for w in wanted.split(',') if w.strip()]
        names = [n for n in names if any(n == k or n.startswith(k) for k in keys)]
    if not names:
        raise CannotRun(f'no trials found in {data}' + (f' matching --trials {wanted}' if wanted else ''))
    return names, index


def read_input(path):
    import numpy as np
    with open(path) as f:
        header = f.readline().strip()
    if header != 't,gx,gy,gz,ax,ay,az,mx,my,mz':
        raise CannotRun(f'{path}: header must be t,gx,gy,gz,ax,ay,az,mx,my,mz, got {header[:60]!r}')
    d = np.loadtxt(path, delimiter=',', skiprows=1, ndmin=2)
    return (d[:, 0], np.ascontiguousarray(d[:, 1:4]), np.ascontiguousarray(d[:, 4:7]),
            np.ascontiguousarray(d[:, 7:10]))


def write_without_mag(src, dst):
    with open(src) as f, open(dst, 'w') as g:
        g.write(f.readline())
        for line in f:
            g.write(line.rstrip('\r\n').rsplit(',', 3)[0] + ',0,0,0\n')


def read_truth(path):
    import numpy as np
    d = np.genfromtxt(path, delimiter=',', skip_header=1, dtype=np.float64)
    return d[:, 1:5], d[:, 5] == 1


def run_agent(agent, inp, out, mode, frame, self_calibration='off', offline=False):
    cmd = [str(agent), 'fuse', '--input', str(inp), '--output', str(out), '--mode', mode, '--frame', frame,
           '--self-calibration', self_calibration] + (['--offline'] if offline else [])
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != 0:
        raise CannotRun(f'{" ".join(cmd)} exited with {p.returncode}: {(p.stderr or p.stdout).strip()[-400:]}')
    return read_agent_output(out)


def read_agent_output(path):
    """(t, quaternions, quantum): the quantum is 10^-decimals of the printed qw."""
    import numpy as np
    with open(path) as f:
        header = f.readline()
        first = f.readline()
    if not header.startswith('t,qw,qx,qy,qz'):
        raise CannotRun(f'{path}: unexpected output header {header[:60]!r}')
    cell = first.split(',')[1]
    decimals = len(cell.split('.')[1]) if '.' in cell else 0
    d = np.loadtxt(path, delimiter=',', skiprows=1, ndmin=2, usecols=range(5))
    return d[:, 0], d[:, 1:5], 10.0 ** -decimals


# ----------------------------------------------------------------------------- parameters

def check_parameters(vqf_params):
    """Compares the Swift Settings defaults with VQF's; returns (lines, mismatches)."""
    try:
        text = SETTINGS_SOURCE.read_text()
        body = text[text.index('public struct Settings'):text.index('public init() {}', text.index('public struct Settings'))]
    except (OSError, ValueError):
        return [f'  warning: could not read the Settings defaults from {SETTINGS_SOURCE.relative_to(ROOT)}'], 0
    found = dict(re.findall(r'public var (\w+) = (true|false|[-+0-9.eE]+)\b', body))
    lines, bad = [], 0
    for swift, vq in SETTING_TO_VQF.items():
        if swift not in found:
            lines.append(f'  warning: no default for Settings.{swift} found in the source')
            continue
        v = found[swift]
        ours = (v == 'true') if v in ('true', 'false') else float(v)
        theirs = vqf_params[vq]
        if (isinstance(ours, bool) and ours != bool(theirs)) or (not isinstance(ours, bool) and ours != float(theirs)):
            lines.append(f'  MISMATCH: Settings.{swift} = {v}, VQF {vq} = {theirs}')
            bad += 1
    extra = sorted(set(vqf_params) - set(SETTING_TO_VQF.values()))
    lines.insert(0, f'  parameters: {len(SETTING_TO_VQF) - bad} of {len(SETTING_TO_VQF)} AttitudeFilter.Settings defaults '
                    f'equal VQFParams' + (f'; VQF-only: {", ".join(extra)}' if extra else '')
                    + f'; project-only: {", ".join(PROJECT_ONLY)}')
    return lines, bad


# ----------------------------------------------------------------------------- main

def compare(args):
    import numpy as np
    import vqf
    from vqf import VQF, offlineVQF

    data = Path(args.data).resolve()
    agent = Path(args.agent)
    if not agent.is_absolute():
        agent = (Path.cwd() / agent) if (Path.cwd() / agent).exists() else ROOT / agent
    if not agent.exists():
        raise CannotRun(f'{agent} not found: build it first (swift build -c release --product edge-agent) or pass --agent')
    names, index = list_trials(data, args.trials)
    version = getattr(vqf, '__version__', None) or _dist_version('vqf')
    param_lines, param_bad = check_parameters(VQF(0.01).params)

    print(f'VQF comparison, sample by sample: {agent.name} fuse vs vqf {version} (C++ core), default parameters')
    print(f'  data {data} ({len(names)} trials); same CSV input on both sides')
    for line in param_lines:
        print(line)
    print('  angle between the two orientations per sample, degrees; 9D: NWU (VQF ENU turned -90 deg about Z), '
          '6D: VQF 6D frame')
    print('  BROAD: |RMSE agent - RMSE VQF| against the optical truth over the movement phases (9D total, 6D inclination)')
    print()
    cols = ('trial', 'samples', '9D max', '9D RMS', '6D max', '6D RMS', 'tol max', 'tol RMS',
            'BROAD 9D', 'BROAD 6D', 'verdict')
    rows = []
    failures = []
    # the default path (continuous magnetometer calibration on): BROAD errors per trial, its and VQF's
    default_scores = []
    # offline: (name, groups, 9D total, 6D incl) of `fuse --offline`, VQF offline, VQF
    offline_scores = []
    offline_rows = []
    keep = Path(args.keep) if args.keep else None
    if keep:
        keep.mkdir(parents=True, exist_ok=True)
    enu_to_nwu = about_z(-math.pi / 2)
    deg = 180 / math.pi
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix='vqf-compare-') as tmp:
        work = keep or Path(tmp)
        for name in names:
            src = data / f'{name}.csv'
            t, gyr, acc, mag = read_input(src)
            n = len(t)
            fs = float(index.get(name, {}).get('sampling_rate') or 0) or 1 / float(np.median(np.diff(t)))
            ts = 1 / fs
            nomag = work / f'{name}.nomag.csv'
            write_without_mag(src, nomag)
            t9, p9, u9 = run_agent(agent, src, work / f'{name}.9d.csv', '9d', 'xMagneticNorthZVertical')
            t6, p6, u6 = run_agent(agent, nomag, work / f'{name}.6d.csv', '6d', 'xArbitraryZVertical')
            nomag_on = nomag if (data / f'{name}.truth.csv').exists() and not args.no_truth else None
            for tt, what in ((t9, '9d'), (t6, '6d')):
                if len(tt) != n or np.max(np.abs(tt - t)) > 0.5 * ts:
                    raise CannotRun(f'{name} {what}: the output rows do not match the input rows')
            v9 = VQF(ts).updateBatch(gyr, acc, mag)['quat9D']
            v6 = VQF(ts).updateBatch(gyr, acc)['quat6D']
            v9_nwu = qmul(enu_to_nwu, v9)
            a9 = angle_between(p9, v9_nwu)
            a6 = angle_between(p6, v6)

            u = max(u9, u6)
            fp = n * FP_ROUNDINGS_PER_SAMPLE * EPS
            tol_max = 2 * math.atan(u / (1 - u)) + fp
            tol_rms = RMS_MARGIN * u + fp
            m9, r9, m6, r6 = float(a9.max()), rms(a9), float(a6.max()), rms(a6)

            broad9 = broad6 = float('nan')
            truth = data / f'{name}.truth.csv'
            if truth.exists() and not args.no_truth:
                q_ref, movement = read_truth(truth)
                use = movement & np.all(np.isfinite(q_ref), axis=1)
                if use.any():
                    nwu_to_enu = about_z(math.pi / 2)
                    tot_p, _ = broad_errors(qmul(nwu_to_enu, p9), q_ref)
                    tot_v, _ = broad_errors(v9, q_ref)
                    _, inc_p = broad_errors(p6, q_ref)
                    _, inc_v = broad_errors(v6, q_ref)
                    broad9 = abs(rms(tot_p[use]) - rms(tot_v[use]))
                    broad6 = abs(rms(inc_p[use]) - rms(inc_v[use]))
                    _, d9, _ = run_agent(agent, src, work / f'{name}.9d.on.csv', '9d', 'xMagneticNorthZVertical', 'on')
                    _, d6, _ = run_agent(agent, nomag_on, work / f'{name}.6d.on.csv', '6d', 'xArbitraryZVertical', 'on') \
                        if nomag_on else (None, p6, None)
                    tot_d, _ = broad_errors(qmul(nwu_to_enu, d9), q_ref)
                    _, inc_d = broad_errors(d6, q_ref)
                    groups = index.get(name, {}).get('groups') or (['disturbed'] if 'disturbed' in name and 'undisturbed' not in name else ['undisturbed'])
                    default_scores.append((name, groups, rms(tot_d[use]), rms(tot_v[use]), rms(inc_d[use]), rms(inc_v[use])))

            if not args.no_offline:
                _, o9, _ = run_agent(agent, src, work / f'{name}.9d.offline.csv', '9d', 'xMagneticNorthZVertical',
                                     offline=True)
                _, o6, _ = run_agent(agent, nomag, work / f'{name}.6d.offline.csv', '6d', 'xArbitraryZVertical',
                                     offline=True)
                vo = offlineVQF(gyr, acc, mag, ts)
                ov9, ov6 = vo['quat9D'], vo['quat6D']
                oa9 = angle_between(o9, qmul(enu_to_nwu, ov9))
                oa6 = angle_between(o6, ov6)
                obad = [w for w, v, lim in (('9D max', float(oa9.max()), tol_max), ('6D max', float(oa6.max()), tol_max),
                                            ('9D RMS', rms(oa9), tol_rms), ('6D RMS', rms(oa6), tol_rms)) if v > lim]
                if obad:
                    failures.append((name + ' offline', obad, int(np.argmax(oa9)), int(np.argmax(oa6))))
                offline_rows.append((name, float(oa9.max()), rms(oa9), float(oa6.max()), rms(oa6), obad))
                truth = data / f'{name}.truth.csv'
                if truth.exists() and not args.no_truth:
                    q_ref, movement = read_truth(truth)
                    use = movement & np.all(np.isfinite(q_ref), axis=1)
                    if use.any():
                        nwu_to_enu = about_z(math.pi / 2)
                        _, d9, _ = run_agent(agent, src, work / f'{name}.9d.offline.on.csv', '9d',
                                             'xMagneticNorthZVertical', 'on', offline=True)
                        _, d6, _ = run_agent(agent, nomag, work / f'{name}.6d.offline.on.csv', '6d',
                                             'xArbitraryZVertical', 'on', offline=True)
                        tot_d, _ = broad_errors(qmul(nwu_to_enu, d9), q_ref)
                        _, inc_d = broad_errors(d6, q_ref)
                        tot_o, _ = broad_errors(ov9, q_ref)
                        _, inc_o = broad_errors(ov6, q_ref)
                        tot_v, _ = broad_errors(v9, q_ref)
                        _, inc_v = broad_errors(v6, q_ref)
                        groups = index.get(name, {}).get('groups') or (['disturbed'] if 'disturbed' in name and 'undisturbed' not in name else ['undisturbed'])
                        offline_scores.append((name, groups, rms(tot_d[use]), rms(tot_o[use]), rms(tot_v[use]),
                                               rms(inc_d[use]), rms(inc_o[use]), rms(inc_v[use])))

            bad = []
            if m9 > tol_max: bad.append('9D max')
            if m6 > tol_max: bad.append('6D max')
            if r9 > tol_rms: bad.append('9D RMS')
            if r6 > tol_rms: bad.append('6D RMS')
            if broad9 > tol_max: bad.append('BROAD 9D')
            if broad6 > tol_max: bad.append('BROAD 6D')
            if bad:
                failures.append((name, bad, int(np.argmax(a9)), int(np.argmax(a6))))
            e = lambda x: 'n/a' if math.isnan(x) else f'{x * deg:.3e}'
            rows.append((name, str(n), e(m9), e(r9), e(m6), e(r6), e(tol_max), e(tol_rms), e(broad9), e(broad6),
                         'ok' if not bad else 'BEYOND: ' + ', '.join(bad)))
            if not keep and nomag.exists():
                nomag.unlink()
            if args.verbose:
                print(f'  {name}: Ts {ts:.9g} s, output quantum {u:g}', flush=True)
    elapsed = time.monotonic() - started

    widths = [max(len(c), *(len(r[i]) for r in rows)) for i, c in enumerate(cols)]
    line = lambda r: ('  ' + '  '.join(c.ljust(w) if i in (0, len(cols) - 1) else c.rjust(w)
                                       for i, (c, w) in enumerate(zip(r, widths)))).rstrip()
    print(line(cols))
    print('  ' + '  '.join('-' * w for w in widths))
    for r in rows:
        print(line(r))
    print()
    u = 1e-9
    print(f'  tolerances (see the top of bench/vqf-compare.py): max per sample <= 2 atan(u/(1-u)) + n*{FP_ROUNDINGS_PER_SAMPLE}*2^-52, '
          f'RMS <= {RMS_MARGIN} u + n*{FP_ROUNDINGS_PER_SAMPLE}*2^-52 (rad), u = the output quantum '
          f'(10^-9 for 9 printed decimals: rounding alone gives up to {2 * u * deg:.3e} deg per sample, '
          f'{u * deg:.3e} deg RMS); BROAD |dRMSE| <= the max bound')
    print(f'  {len(names)} trials in {elapsed:.1f} s')
    worse = []
    if default_scores:
        print()
        print('  the default path (fuse --self-calibration on) against VQF on BROAD, mean per group of the per-trial RMSE, degrees:')
        print('  group          trials   9D total      VQF   6D incl      VQF  verdict')
        for g in ('undisturbed', 'disturbed', 'all_trials'):
            sel = [r for r in default_scores if g in r[1] or g == 'all_trials']
            if not sel:
                continue
            m = [sum(r[k] for r in sel) / len(sel) for k in (2, 3, 4, 5)]
            # not worse: within the output's rounding of VQF's (the VQF path equals it to that)
            tol = 2 * math.atan(1e-9 / (1 - 1e-9)) * deg
            bad = [w for w, a, b in (('9D', m[0], m[1]), ('6D', m[2], m[3])) if a * deg > b * deg + tol]
            if bad:
                worse.append((g, bad))
            print(f'  {g:14} {len(sel):6}   {m[0] * deg:8.3f} {m[1] * deg:8.3f}  {m[2] * deg:8.3f} {m[3] * deg:8.3f}  '
                  + ('ok' if not bad else 'WORSE: ' + ', '.join(bad)))
    if offline_rows:
        print()
        print('  offline: fuse --offline --self-calibration off against vqf.offlineVQF, sample by sample, degrees:')
        print('  trial                                 9D max    9D RMS    6D max    6D RMS  verdict')
        for name, a, b, c, d, obad in offline_rows:
            print(f'  {name:36} {a * deg:.3e} {b * deg:.3e} {c * deg:.3e} {d * deg:.3e}  '
                  + ('ok' if not obad else 'BEYOND: ' + ', '.join(obad)))
    if offline_scores:
        print()
        print('  the default offline path (fuse --offline) against VQF offline (and VQF) on BROAD, mean per group of the '
              'per-trial RMSE, degrees:')
        print('  group          trials   9D total  VQF off      VQF   6D incl  VQF off      VQF  verdict')
        tol = 2 * math.atan(1e-9 / (1 - 1e-9)) * deg
        for g in ('undisturbed', 'disturbed', 'all_trials'):
            sel = [r for r in offline_scores if g in r[1] or g == 'all_trials']
            if not sel:
                continue
            m = [sum(r[k] for r in sel) / len(sel) * deg for k in range(2, 8)]
            bad = [w for w, a, b in (('9D', m[0], m[1]), ('6D', m[3], m[4])) if a > b + tol]
            if bad:
                worse.append((g + ' offline', bad))
            print(f'  {g:14} {len(sel):6}   {m[0]:8.3f} {m[1]:8.3f} {m[2]:8.3f}  {m[3]:8.3f} {m[4]:8.3f} {m[5]:8.3f}  '
                  + ('ok' if not bad else 'WORSE: ' + ', '.join(bad)))
        if args.verbose:
            for r in offline_scores:
                print(f'    {r[0]:36} 9D {r[2] * deg:6.3f} / {r[3] * deg:6.3f} / {r[4] * deg:6.3f}   '
                      f'6D {r[5] * deg:6.3f} / {r[6] * deg:6.3f} / {r[7] * deg:6.3f}')
    for g, bad in worse:
        print(f'FAIL: the default path is worse than VQF on BROAD {g} ({", ".join(bad)})')
    for name, bad, i9, i6 in failures:
        print(f'FAIL {name}: {", ".join(bad)} beyond tolerance (largest 9D difference at row {i9 + 1}, '
              f'6D at row {i6 + 1}; --keep DIR keeps the outputs)')
    if param_bad:
        print(f'FAIL: {param_bad} Settings default(s) differ from VQF\'s')
    ok = not failures and not param_bad and not worse
    print(f'vqf-compare: {len(names) - len(failures)} passed, {len(failures)} failed')
    return 0 if ok else 1


def fuse_cost(agent, src, self_calibration, out):
    """(fusion_time_per_sample_us, filter_time_per_sample_us or None) of one
    `fuse --stats` run: the whole Core Motion row per sample, and the filter
    alone keeping what VQF's updateBatch returns (agents before stop 29 print
    only the first)."""
    cmd = [str(agent), 'fuse', '--input', str(src), '--output', str(out), '--self-calibration', self_calibration, '--stats']
    p = subprocess.run(cmd, capture_output=True, text=True)
    m = re.search(r'^fusion_time_per_sample_us=([0-9.eE+-]+)$', p.stdout, re.M)
    if p.returncode != 0 or not m:
        raise CannotRun(f'{" ".join(cmd)} exited with {p.returncode} or printed no fusion_time_per_sample_us')
    f = re.search(r'^filter_time_per_sample_us=([0-9.eE+-]+)$', p.stdout, re.M)
    return float(m.group(1)), (float(f.group(1)) if f else None)


def cost(args):
    import numpy as np
    from vqf import VQF
    data = Path(args.data).resolve()
    agents = [('agent', Path(args.agent))] + ([('baseline', Path(args.baseline))] if args.baseline else [])
    for _, a in agents:
        if not a.exists():
            raise CannotRun(f'{a} not found')
    names, index = list_trials(data, args.trials)
    # "X off", "X on": the whole row (Core Motion outputs: frame, Euler angles,
    # heading, gravity, user acceleration) per sample; "X filter": the filter
    # alone with self-calibration off, keeping per sample what VQF's batch
    # call returns (quaternions, bias, flags): like with like.
    labels = ['VQF C++'] + [f'{who} {sc}' for who, _ in agents for sc in ('off', 'on', 'filter')]
    print(f'cost per sample, microseconds (median of {args.cost} alternated runs per trial; thread CPU time):')
    print('  agent: ' + ', '.join(f'{who} {a}' for who, a in agents))
    print('  trial                              ' + ''.join(f'{l:>16}' for l in labels))
    medians = []
    with tempfile.TemporaryDirectory(prefix='vqf-cost-') as tmp:
        out = Path(tmp) / 'out.csv'
        # Time copies, never the files as the linker wrote them: a freshly
        # linked binary timed about 13 % slower than a plain copy of the same
        # bytes (same page faults; docs/benchmarks.md, "Issue 22: the attitude
        # filter's cost (stop 28)"), which made one build look slower than a
        # copied baseline.
        copies = []
        for who, a in agents:
            c = Path(tmp) / f'{who}-edge-agent'
            shutil.copy2(a, c)
            copies.append((who, c))
        agents = copies
        for name in names:
            src = data / f'{name}.csv'
            t, gyr, acc, mag = read_input(src)
            fs = float(index.get(name, {}).get('sampling_rate') or 0) or 1 / float(np.median(np.diff(t)))
            runs = {l: [] for l in labels}
            for _ in range(args.cost):
                c0 = time.thread_time()
                VQF(1 / fs).updateBatch(gyr, acc, mag)
                runs['VQF C++'].append((time.thread_time() - c0) / len(t) * 1e6)
                for who, a in agents:
                    for sc in ('off', 'on'):
                        whole, filter_only = fuse_cost(a, src, sc, out)
                        runs[f'{who} {sc}'].append(whole)
                        if sc == 'off':
                            runs[f'{who} filter'].append(filter_only if filter_only is not None else float('nan'))
            m = {l: float(np.median(v)) for l, v in runs.items()}
            medians.append(m)
            print(f'  {name:34} ' + ''.join(f'{m[l]:16.3f}' for l in labels), flush=True)
    mean = {l: sum(m[l] for m in medians) / len(medians) for l in labels}
    print(f'  {"mean":34} ' + ''.join(f'{mean[l]:16.3f}' for l in labels))
    print(f'  ratios of the means: agent filter / VQF C++ {mean["agent filter"] / mean["VQF C++"]:.2f} (like with like), '
          f'agent on / VQF C++ {mean["agent on"] / mean["VQF C++"]:.2f}, '
          f'agent off / VQF C++ {mean["agent off"] / mean["VQF C++"]:.2f}, '
          f'learning share (on - off) {mean["agent on"] - mean["agent off"]:.3f} us'
          + (f'; agent on / baseline on {mean["agent on"] / mean["baseline on"]:.2f}, '
             f'agent off / baseline off {mean["agent off"] / mean["baseline off"]:.2f}, '
             f'baseline learning share {mean["baseline on"] - mean["baseline off"]:.3f} us' if args.baseline else ''))
    return 0


def _dist_version(name):
    try:
        from importlib.metadata import version
        return version(name)
    except Exception:
        return 'unknown'


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n\n')[0],
                                 epilog='See the top of this file and bench/README.md.')
    ap.add_argument('--data', default=os.environ.get('BROAD_DATA'),
                    help='folder with the BROAD trials as CSV (default $BROAD_DATA)')
    ap.add_argument('--agent', default='.build/release/edge-agent', help='edge-agent binary (default %(default)s)')
    ap.add_argument('--trials', help='comma-separated trial names or prefixes (default: all in --data)')
    ap.add_argument('--venv', default=os.environ.get('VQF_VENV', str(ROOT / '.build' / 'vqf-compare-venv')),
                    help='virtual environment with the pinned packages (default $VQF_VENV or %(default)s)')
    ap.add_argument('--no-venv', action='store_true', help='use the running interpreter as it is')
    ap.add_argument('--no-truth', action='store_true', help='skip the BROAD score difference')
    ap.add_argument('--no-offline', action='store_true', help='skip fuse --offline against vqf.offlineVQF')
    ap.add_argument('--keep', metavar='DIR', help='keep the agent outputs (and 6D inputs) in DIR')
    ap.add_argument('--verbose', action='store_true')
    ap.add_argument('--cost', type=int, metavar='R', help='instead of comparing: time R alternated runs per trial (see the top)')
    ap.add_argument('--baseline', metavar='PATH', help='with --cost: another edge-agent binary timed in the same run')
    args = ap.parse_args()
    try:
        if not args.data:
            raise CannotRun('no data: pass --data DIR or set BROAD_DATA to a folder of BROAD trials '
                            '(<trial>.csv with header t,gx,gy,gz,ax,ay,az,mx,my,mz); see bench/README.md')
        if not Path(args.data).is_dir():
            raise CannotRun(f'--data {args.data}: not a folder')
        venv = Path(args.venv)
        if not args.no_venv and not in_venv(venv):
            python = ensure_venv(venv)
            os.execv(str(python), [str(python), str(Path(__file__).resolve())] + sys.argv[1:])
        return cost(args) if args.cost else compare(args)
    except CannotRun as e:
        print(f'vqf-compare: {e}', file=sys.stderr)
        return 2


if __name__ == '__main__':
    sys.exit(main())
