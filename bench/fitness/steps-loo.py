#!/usr/bin/env python3
"""Held-out evaluation of step counters on the shared walks (issue 18).

Every figure is held out: for each fold (leave one recording out, then leave
one placement out) the variant with the lowest MAPE on the OTHER recordings is
chosen, and the held-out recording(s) are scored with that choice. With one
variant nothing is chosen and the figures are the plain per-recording scores;
with several (for example the old and the new detector, or a parameter grid
given as several commands) the table shows what choosing on the data would
give on data it was not chosen on.

Scoring is the shared scorer's own (score_steps.score_one, common.py); this
script only adds the folds and the tables.

    python3 bench/fitness/steps-loo.py \\
        --variant "new=.build/debug/edge-agent steps {in} {out}" \\
        [--variant "old=OLD-BINARY steps {in} {out}"] \\
        [--scorers ../shared/bench/activity] [--data-root DIR]

Prints one table per fold kind (per placement: recordings, true and counted
steps, error %, the variant chosen), then MAPE, median, worst case and walks
within 3 %.
"""
import argparse
import statistics
import sys
import tempfile
from pathlib import Path


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument('--variant', action='append', required=True, metavar='NAME=CMD',
                    help='a candidate command with {in} and {out}; repeat for several')
    ap.add_argument('--scorers', default='../shared/bench/activity', help='folder of score_steps.py')
    ap.add_argument('--data-root', default=None, help='folder holding oxford_steps/ (default: the scorers\')')
    args = ap.parse_args()
    sys.path.insert(0, str(Path(args.scorers).resolve()))
    import common  # noqa: E402  (the shared scorer's module)
    import score_steps  # noqa: E402

    from variants import parse_variants  # noqa: E402  (beside this script)
    variants = parse_variants(args.variant)
    recs = common.recordings('oxford_steps', args.data_root)
    root = common.dataset_dir('oxford_steps', args.data_root)
    truths = {r: common.read_json(root / f'{r}.truth.json') for r in recs}

    # rel[variant][rec] = signed relative error of the final count
    counts, rel = {}, {}
    with tempfile.TemporaryDirectory() as tmp:
        for name, cmd in variants:
            counts[name], rel[name] = {}, {}
            for r in recs:
                out_csv = Path(tmp) / f'{name}__{r}.csv'
                try:
                    common.run_candidate(cmd, root / f'{r}.csv', out_csv)
                    t = common.input_t(root / f'{r}.csv')
                    out = common.read_output_csv(out_csv, ['t', 'steps'], optional=['cadence'], n_rows=len(t), t_ref=t)
                    s = score_steps.score_one(truths[r], t, out)
                except common.CandidateError as e:
                    raise SystemExit(f'error: variant {name}, recording {r}: {e}')
                counts[name][r], rel[name][r] = s['count'], s['rel']

    def mape(name, keep):
        return statistics.mean(abs(rel[name][r]) for r in keep) if keep else 0.0

    def fold(kind, label, key):
        groups = {}
        for r in recs:
            groups.setdefault(key(r), []).append(r)
        rows, held = [], {}
        for g, members in groups.items():
            train = [r for r in recs if r not in members]
            chosen = min((n for n, _ in variants), key=lambda n: (mape(n, train), [v[0] for v in variants].index(n)))
            for r in members:
                held[r] = (chosen, rel[chosen][r])
            truth = sum(truths[r]['steps'] for r in members)
            counted = sum(counts[chosen][r] for r in members)
            worst = max(abs(rel[chosen][r]) for r in members)
            rows.append((g, len(members), truth, counted, 100 * (counted - truth) / truth, 100 * worst, chosen))
        print(f'\n{kind}: the variant chosen on the other recordings, scored on the held-out ones')
        print(f'| held out ({label}) | walks | true steps | counted | error % | worst walk APE % | chosen |')
        print('|---|---|---|---|---|---|---|')
        for g, n, tr, c, e, w, ch in sorted(rows):
            print(f'| {g} | {n} | {tr} | {c} | {e:+.1f} | {w:.1f} | {ch} |')
        apes = [abs(held[r][1]) * 100 for r in recs]
        worst_r = max(recs, key=lambda r: abs(held[r][1]))
        print(f'MAPE {statistics.mean(apes):.1f} %, median {statistics.median(apes):.1f} %, '
              f'worst {max(apes):.1f} % ({worst_r}), within 3 %: {sum(a <= 3 for a in apes)}/{len(apes)}')

    print('variants: ' + ', '.join(f'{n} = `{c}`' for n, c in variants))
    print('\nper recording, every variant (signed error %):')
    print('| recording | placement | true | ' + ' | '.join(n for n, _ in variants) + ' |')
    print('|---|---|---|' + '---|' * len(variants))
    for r in recs:
        print(f'| {r} | {truths[r].get("placement", "?")} | {truths[r]["steps"]} | '
              + ' | '.join(f'{counts[n][r]} ({100 * rel[n][r]:+.1f})' for n, _ in variants) + ' |')
    fold('leave one recording out', 'recording', lambda r: r)
    fold('leave one placement out', 'placement', lambda r: truths[r].get('placement', r))


if __name__ == '__main__':
    main()
