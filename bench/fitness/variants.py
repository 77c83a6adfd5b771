"""The --variant NAME=CMD arguments both leave-one-out scripts take."""


def parse_variants(values):
    """[(name, cmd)] from NAME=CMD strings; CMD must hold {in} and {out}."""
    out = []
    for v in values:
        name, sep, cmd = v.partition('=')
        if not sep or '{in}' not in cmd or '{out}' not in cmd:
            raise SystemExit(f'error: --variant {v!r}: expected NAME=CMD with {{in}} and {{out}} in CMD')
        out.append((name, cmd))
    return out
