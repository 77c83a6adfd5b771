#!/usr/bin/env python3
"""Leave-one-trial-out BROAD errors of `edge-agent fuse` variants, VQF in the same runs.

Runs the shared BROAD scorer (eval_broad.py, --refs vqf) once per variant of
the fuse command (extra options appended to it), then for every trial picks
the variant with the lowest mean 9D total error on the *other* trials and
reports that variant's errors on the held-out trial: a setting is credited
only with what it does on trials it was not chosen on. Variants that tie on
the other trials (equal to 10⁻⁹°) go to --default, the shipped setting. Prints per trial and
per group (undisturbed, disturbed) the 9D total and heading error and the 6D
inclination error (the BROAD paper's metric: RMS over the movement phases,
degrees), VQF's beside them, and the ratio.

    python3 bench/broad-loto.py --scorer path/to/eval_broad.py --python VENV/bin/python \\
        --agent .build/release/edge-agent \\
        --variant "off=--self-calibration off" --variant "min0=--self-calibration-min-offset 0" \\
        --variant "min5=--self-calibration-min-offset 5" --default min5

Exit status 0; 2 when the scorer could not run.
"""
import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path


def run_variant(args, name, extra, workdir):
    out = Path(workdir) / f'{name}.json'
    cmd = [args.python, args.scorer, '--refs', 'vqf', '--candidate-frame', 'NWU', '-q',
           '--candidate', f'{args.agent} fuse --input {{in}} --output {{out}} --mode {{mode}} --stats {extra}',
           '--candidate-name', name, '--json', str(out)]
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != 0 or not out.exists():
        sys.stderr.write(p.stdout + p.stderr)
        raise SystemExit(f'broad-loto: the scorer failed for variant {name} (exit {p.returncode})')
    return json.loads(out.read_text())


def per_trial(summary, key):
    f = summary['filters'][key]
    return {t: (f['9d']['per_trial'][t]['total_rmse_deg'], f['9d']['per_trial'][t]['heading_rmse_deg'],
                f['6d']['per_trial'][t]['inclination_rmse_deg'])
            for t in f['9d']['per_trial']}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument('--scorer', required=True, help='eval_broad.py of the shared BROAD scorer')
    ap.add_argument('--python', default=sys.executable, help='the Python with the scorer\'s requirements')
    ap.add_argument('--agent', default='.build/release/edge-agent')
    ap.add_argument('--variant', action='append', required=True, metavar='NAME=OPTIONS',
                    help='a variant: its name and the options appended to the fuse command')
    ap.add_argument('--default', metavar='NAME',
                    help='the variant that wins a tie on the other trials (the shipped setting); otherwise the first listed')
    args = ap.parse_args()
    variants = [v.split('=', 1) for v in args.variant]
    with tempfile.TemporaryDirectory(prefix='broad-loto') as d:
        runs = {name: run_variant(args, name, extra, d) for name, extra in variants}
    first = next(iter(runs.values()))
    trials = first['dataset']['trials_used']
    index = {t['name']: t['groups'] for t in json.loads(
        (Path(args.scorer).resolve().parent.parent.parent / 'data' / 'broad' / 'index.json').read_text())['trials']} \
        if (Path(args.scorer).resolve().parent.parent.parent / 'data' / 'broad' / 'index.json').exists() else {}
    vqf = per_trial(first, 'vqf')
    cand = {name: per_trial(r, [k for k in r['filters'] if k != 'vqf'][0]) for name, r in runs.items()}

    print('variants (mean 9D total error over all trials, degrees):')
    for name, extra in variants:
        m = sum(cand[name][t][0] for t in trials) / len(trials)
        print(f'  {name:12} {m:6.3f}   fuse ... {extra}')
    chosen, loto = {}, {}
    for t in trials:
        others = [u for u in trials if u != t]
        score = {n: sum(cand[n][u][0] for u in others) / len(others) for n in cand}
        low = min(score.values())
        tied = [n for n in cand if score[n] - low < 1e-9]
        best = args.default if args.default in tied else tied[0]
        chosen[t] = best
        loto[t] = cand[best][t]
    print()
    print(f'{"trial":34} {"chosen":>8} {"9D tot":>7} {"VQF":>6} {"9D head":>8} {"VQF":>6} {"6D incl":>8} {"VQF":>6}')
    for t in trials:
        a, v = loto[t], vqf[t]
        print(f'{t[:34]:34} {chosen[t]:>8} {a[0]:7.2f} {v[0]:6.2f} {a[1]:8.2f} {v[1]:6.2f} {a[2]:8.2f} {v[2]:6.2f}')
    print()
    groups = {'undisturbed': [t for t in trials if 'undisturbed' in index.get(t, t)],
              'disturbed': [t for t in trials if 'disturbed' in index.get(t, []) or ('disturbed' in t and 'undisturbed' not in t)]}
    for g in sorted({g for t in trials for g in index.get(t, []) if g not in ('all_trials',)}):
        groups.setdefault(g, [t for t in trials if g in index.get(t, [])])
    print(f'{"group (LOTO)":22} {"n":>2} {"9D tot":>7} {"VQF":>6} {"ratio":>6} {"9D head":>8} {"VQF":>6} {"ratio":>6} {"6D incl":>8} {"VQF":>6} {"ratio":>6}')
    for g, ts in groups.items():
        if not ts:
            continue
        mean = lambda src, k: sum(src[t][k] for t in ts) / len(ts)
        row = f'{g:22} {len(ts):2}'
        for k in range(3):
            a, v = mean(loto, k), mean(vqf, k)
            row += f' {a:7.2f} {v:6.2f} {a / v:6.2f}' if k != 1 else f' {a:8.2f} {v:6.2f} {a / v:6.2f}'
        print(row)
    return 0


if __name__ == '__main__':
    sys.exit(main())
