#!/usr/bin/env python3
"""Held-out evaluation of activity classifiers on the shared recordings (issue 18).

Leave one subject out: for each subject of the data set, the variant with the
best macro-F1 (then accuracy) on the OTHER subjects' recordings is chosen and
the held-out subject's recordings are scored with it. With one variant nothing
is chosen and the figures are that variant's own per subject; with several
(the old and the new classifier, or a parameter grid given as several
commands) the table shows what choosing on the data gives on people it was not
chosen on.

Scoring is the shared scorer's own (score_activity.truth_rows, scored_mask,
validate, metrics; --grace as there); this script only adds the folds, the
per-subject table and the worst case.

    python3 bench/fitness/activity-loso.py \\
        --variant "new=.build/debug/edge-agent activity {in} {out}" \\
        [--variant "old=OLD-BINARY activity {in} {out}"] \\
        [--scorers ../shared/bench/activity] [--data-root DIR] [--dataset geotec_har]

Subjects are the truth files' `subject` (geotec_har: s03, s10, s13; a data set
without one gives each recording its own fold).
"""
import argparse
import sys
import tempfile
from pathlib import Path

import numpy as np


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument('--variant', action='append', required=True, metavar='NAME=CMD',
                    help='a candidate command with {in} and {out}; repeat for several')
    ap.add_argument('--scorers', default='../shared/bench/activity', help='folder of score_activity.py')
    ap.add_argument('--data-root', default=None, help='folder holding the data set (default: the scorers\')')
    ap.add_argument('--dataset', default='geotec_har')
    ap.add_argument('--grace', type=float, default=1.0, help='s left unscored after each change of truth (as the scorer)')
    args = ap.parse_args()
    sys.path.insert(0, str(Path(args.scorers).resolve()))
    import common  # noqa: E402  (the shared scorer's modules)
    import score_activity as sa  # noqa: E402

    from variants import parse_variants  # noqa: E402  (beside this script)
    variants = parse_variants(args.variant)
    recs = common.recordings(args.dataset, args.data_root)
    root = common.dataset_dir(args.dataset, args.data_root)
    truths = {r: common.read_json(root / f'{r}.truth.json') for r in recs}
    subject = {r: truths[r].get('subject', r) for r in recs}

    # rows[variant][rec] = (truth labels, answers, confidences) of the scored rows
    rows = {}
    with tempfile.TemporaryDirectory() as tmp:
        for name, cmd in variants:
            rows[name] = {}
            for r in recs:
                out_csv = Path(tmp) / f'{name}__{r}.csv'
                try:
                    common.run_candidate(cmd, root / f'{r}.csv', out_csv)
                    t = common.input_t(root / f'{r}.csv')
                    o = common.read_output_csv(out_csv, ['t', 'activity', 'confidence'], n_rows=len(t), t_ref=t,
                                               text_cols=('activity', 'confidence'))
                    acts, confs = sa.validate(o)
                except common.CandidateError as e:
                    raise SystemExit(f'error: variant {name}, recording {r}: {e}')
                lab = sa.truth_rows(truths[r], t)
                m = sa.scored_mask(lab, t, args.grace)
                rows[name][r] = (lab[m], acts[m], confs[m])

    def pooled(name, members):
        y = np.concatenate([rows[name][r][0] for r in members])
        p = np.concatenate([rows[name][r][1] for r in members])
        c = np.concatenate([rows[name][r][2] for r in members])
        return sa.metrics(y, p, c), (y, p, c)

    def key(name, members):
        m, _ = pooled(name, members)
        return (-m.get('macro_f1', 0), -m.get('accuracy', 0), [v[0] for v in variants].index(name))

    subjects = sorted(set(subject.values()))
    print('variants: ' + ', '.join(f'{n} = `{c}`' for n, c in variants))
    print(f'\nper subject, every variant (accuracy / macro-F1 / recall of stationary, %; {args.dataset}, grace {args.grace} s):')
    print('| subject | recordings | scored rows | ' + ' | '.join(n for n, _ in variants) + ' |')
    print('|---|---|---|' + '---|' * len(variants))

    def fmt(m):
        st = m.get('recall', {}).get('stationary')
        return (f'{100 * m["accuracy"]:.1f} / {100 * m["macro_f1"]:.1f} / '
                + (f'{100 * st:.1f}' if st is not None else '-'))
    for s in subjects:
        members = [r for r in recs if subject[r] == s]
        ms = [pooled(n, members)[0] for n, _ in variants]
        print(f'| {s} | {len(members)} | {ms[0]["rows"]} | ' + ' | '.join(fmt(m) for m in ms) + ' |')

    print('\nleave one subject out: the variant chosen on the other subjects, scored on the held-out one')
    print('| held out | chosen on the others | accuracy % | macro-F1 % | recall stationary % | recall walking % | rows |')
    print('|---|---|---|---|---|---|---|')
    ys, ps, cs, per = [], [], [], []
    for s in subjects:
        members = [r for r in recs if subject[r] == s]
        train = [r for r in recs if subject[r] != s] or members
        chosen = min((n for n, _ in variants), key=lambda n: key(n, train))
        m, (y, p, c) = pooled(chosen, members)
        ys.append(y); ps.append(p); cs.append(c); per.append((s, m))
        rec = m.get('recall', {})
        pct = lambda k: f'{100 * rec[k]:.1f}' if k in rec else '-'  # noqa: E731
        print(f'| {s} | {chosen} | {100 * m["accuracy"]:.1f} | {100 * m["macro_f1"]:.1f} | '
              f'{pct("stationary")} | {pct("walking")} | {m["rows"]} |')
    m = sa.metrics(np.concatenate(ys), np.concatenate(ps), np.concatenate(cs))
    worst = min(per, key=lambda x: x[1]['accuracy'])
    worst_st = min((x for x in per if 'stationary' in x[1].get('recall', {})),
                   key=lambda x: x[1]['recall']['stationary'], default=None)
    print(f'held out, pooled: accuracy {100 * m["accuracy"]:.1f} %, macro-F1 {100 * m["macro_f1"]:.1f} %, '
          + ', '.join(f'recall {k} {100 * v:.1f} %' for k, v in m['recall'].items()))
    print(f'worst subject: {worst[0]} (accuracy {100 * worst[1]["accuracy"]:.1f} %)'
          + (f'; lowest stationary recall: {worst_st[0]} ({100 * worst_st[1]["recall"]["stationary"]:.1f} %)'
             if worst_st else ''))


if __name__ == '__main__':
    main()
