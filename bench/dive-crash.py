#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""The dive logger's crash-safety targets (issue 10).

  kill      SIGKILL `dive-logger import -` at random moments while a dive's
            protocol lines are fed to it (a random point of the dive at once,
            then 10x real time), --runs times (default 100). After
            each kill the log must open (PRAGMA integrity_check = ok) and the
            dive must hold every sample of the reference run up to at most
            1 s of dive time before the last line the logger had read.
  powercut  the same with the logger inside the kernel VM rig writing to an
            ext4 filesystem on a virtual disk, the VM killed hard
            (kernel-rig.sh --disk IMG --kill-after S): what the guest kernel
            had not written to the disk is lost. --runs cuts (default 20).

Prints per-run losses and the median / worst loss in seconds of dive time.
Usage:
  bench/dive-crash.py kill [--runs N] [--logger PATH] [--agent PATH]
  bench/dive-crash.py powercut [--runs N] [--rig PATH]
Exit status 0 when every run met the target, 1 otherwise, 2 if it cannot run.
"""
import json, os, random, signal, sqlite3, statistics, subprocess, sys, tempfile, time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
args = sys.argv[1:]


def opt(name, default):
    if name in args:
        i = args.index(name)
        return args[i + 1]
    return default


logger = opt("--logger", os.path.join(ROOT, ".build/debug/dive-logger"))
agent = opt("--agent", os.path.join(ROOT, ".build/debug/edge-agent"))
EPOCH = "2026-06-01T09:30:00Z"


def dive_lines(work):
    path = os.path.join(work, "dive.jsonl")
    if not os.path.exists(path):
        subprocess.run([agent, "simulate", os.path.join(ROOT, "scenarios/dive-18m.json5"), "--board",
                        os.path.join(ROOT, "boards/simulated-dive.json5"), "--jsonl", path, "--streams", "submersion"],
                       check=True)
    return open(path).read().splitlines(True)


def reference(work, lines):
    db = os.path.join(work, "reference.sqlite")
    if os.path.exists(db):
        os.remove(db)
    p = subprocess.run([logger, "--db", db, "import", "-", "--epoch", EPOCH], input="".join(lines), text=True,
                       capture_output=True, check=True)
    con = sqlite3.connect(db)
    rows = con.execute("SELECT time_s, depth_m FROM samples WHERE dive = 1 ORDER BY time_s").fetchall()
    start_mono = con.execute("SELECT start_monotonic_ns FROM dives WHERE number = 1").fetchone()[0]
    con.close()
    return rows, start_mono


def check(db, ref_rows, start_mono, fed_ns):
    """(ok, loss_s, why) for a log after a crash; fed_ns: monotonic time of the last line read."""
    try:
        con = sqlite3.connect(db)
        if con.execute("PRAGMA integrity_check").fetchone()[0] != "ok":
            return False, None, "integrity_check failed"
        dives = con.execute("SELECT number FROM dives").fetchall()
        rows = con.execute("SELECT time_s, depth_m FROM samples WHERE dive = 1 ORDER BY time_s").fetchall() if dives else []
        con.close()
    except sqlite3.DatabaseError as e:
        return False, None, f"does not open: {e}"
    if fed_ns < start_mono:
        return (len(rows) == 0), 0.0, "before the dive"
    fed_t = (fed_ns - start_mono) / 1e9
    expected = [r for r in ref_rows if r[0] <= fed_t]
    stored = dict(rows)
    refs = dict(ref_rows)
    for t, d in rows:   # what is there is right
        ref = refs.get(t)
        if ref is None or abs(ref - d) > 1e-9:
            return False, None, f"sample at {t} s differs from the reference"
    last = rows[-1][0] if rows else 0.0
    want = expected[-1][0] if expected else 0.0
    loss = max(0.0, want - last)
    missing = [t for t, _ in expected if t <= last and t not in stored]
    if missing:
        return False, loss, f"{len(missing)} samples missing before the last stored one"
    return loss <= 1.0 + 1e-6, loss, ""


def line_ns(line):
    try:
        return json.loads(line)["timestamp_ns"]
    except Exception:
        return None


def kill_mode(runs):
    work = tempfile.mkdtemp(prefix="dive-crash-")
    lines = dive_lines(work)
    ref_rows, start_mono = reference(work, lines)
    rng = random.Random(10)
    losses, failures = [], 0
    # A random point of the dive is reached at once (then 2.5 s for the
    # logger to work through it), the rest is fed at --rate times real time
    # (default 10: a line every 33 ms, so the logger keeps up and what was
    # fed is what it had read), and the kill comes 0.3-4 s later.
    rate = float(opt("--rate", "10"))
    for i in range(runs):
        db = os.path.join(work, f"kill{i}.sqlite")
        ff = rng.randrange(0, len(lines) - 200)
        kill_at = rng.uniform(0.3, 4.0)
        p = subprocess.Popen([logger, "--db", db, "import", "-", "--epoch", EPOCH], stdin=subprocess.PIPE,
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        p.stdin.write("".join(lines[:ff]).encode())
        p.stdin.flush()
        fed = line_ns(lines[ff - 1]) if ff > 0 else None
        time.sleep(2.5)
        t0, first = time.monotonic(), None
        for line in lines[ff:]:
            ts = line_ns(line)
            first = ts if first is None else first
            due = t0 + (ts - first) / 1e9 / rate
            if due - t0 > kill_at:
                break
            now = time.monotonic()
            if due > now:
                time.sleep(due - now)
            p.stdin.write(line.encode())
            p.stdin.flush()
            fed = ts
        time.sleep(max(0.0, t0 + kill_at - time.monotonic()))
        p.send_signal(signal.SIGKILL)
        p.wait()
        ok, loss, why = check(db, ref_rows, start_mono, fed)
        if not ok:
            failures += 1
        if loss is not None:
            losses.append(loss)
        print(f"kill {i + 1:3d} at {kill_at:4.2f} s (dive time {(fed - start_mono) / 1e9 if fed else 0:7.1f} s): "
              f"loss {loss if loss is not None else float('nan'):.3f} s {'ok' if ok else 'FAIL ' + why}", flush=True)
    report("SIGKILL", runs, losses, failures)
    return failures == 0


def report(what, runs, losses, failures):
    if losses:
        print(f"{what}: {runs} runs, {failures} failed; loss median {statistics.median(losses):.3f} s, "
              f"worst {max(losses):.3f} s of dive time (target <= 1 s, log always opens)")


def powercut_mode(runs):
    # The rig from the shared folder beside the repository, as .ci/run finds it ($SHARED or ../shared).
    shared = os.environ.get("SHARED") or os.path.join(os.path.dirname(ROOT), "shared")
    rig = opt("--rig", os.path.join(shared, "rig", "kernel-rig.sh"))
    work = tempfile.mkdtemp(prefix="dive-cut-", dir=os.path.join(ROOT, ".build"))   # the rig shares the current directory read-write
    lines = dive_lines(work)
    ref_rows, start_mono = reference(work, lines)
    feed = os.path.join(work, "feed.py")
    with open(feed, "w") as f:
        f.write("""import sys, time, subprocess, json
lines = open(sys.argv[1]).read().splitlines(True)
p = subprocess.Popen(sys.argv[3:], stdin=subprocess.PIPE)
rate = float(sys.argv[2])
t0 = time.monotonic(); first = None
for line in lines:
    ts = json.loads(line)["timestamp_ns"]
    if ts < 60e9:                      # the minute at the surface before the dive: at once
        p.stdin.write(line.encode()); continue
    first = ts if first is None else first
    due = t0 + (ts - first) / 1e9 / rate
    while time.monotonic() < due: time.sleep(0.001)
    p.stdin.write(line.encode()); p.stdin.flush()
    print("FED", ts, flush=True)
p.stdin.close(); p.wait()
""")
    rng = random.Random(20)
    losses, failures = [], 0
    img = os.path.join(work, "disk.img")
    for i in range(runs):
        subprocess.run(["truncate", "-s", "0", img]); subprocess.run(["truncate", "-s", "64M", img], check=True)
        cut = rng.uniform(3.0, 12.0)
        script = (f"mkfs.ext4 -q $RIG_DISK && mkdir -p /mnt/log && mount $RIG_DISK /mnt/log && "
                  f"python3 {feed} {work}/dive.jsonl {opt('--rate', '10')} {logger} --db /mnt/log/d.sqlite import - --epoch {EPOCH}")
        r = subprocess.run([rig, "--disk", img, "--kill-after", f"{cut:.2f}", "--", "sh", "-c", script],
                           capture_output=True, text=True, cwd=ROOT, timeout=600)
        fed = None
        for l in r.stdout.splitlines():
            if l.startswith("FED "):
                fed = int(l.split()[1])
        chk = subprocess.run([rig, "--disk", img, "--", "sh", "-c",
                              f"mount $RIG_DISK /mnt && cp /mnt/d.sqlite* {work}/ 2>/dev/null; ls {work}"],
                             capture_output=True, text=True, cwd=ROOT, timeout=600)
        db = os.path.join(work, "d.sqlite")
        if fed is None or not os.path.exists(db):
            ok, loss, why = (fed is None or fed < start_mono), 0.0, "cut before the dive started" if fed is None else "no log on the disk"
        else:
            ok, loss, why = check(db, ref_rows, start_mono, fed)
        for suffix in ["", "-wal", "-shm"]:
            if os.path.exists(db + suffix):
                os.remove(db + suffix)
        if not ok:
            failures += 1
        if loss is not None:
            losses.append(loss)
        dt = (fed - start_mono) / 1e9 if fed else float('nan')
        print(f"cut {i + 1:2d} at {cut:5.2f} s (rig {r.returncode}, dive time {dt:6.1f} s): loss {loss if loss is not None else float('nan'):.3f} s {'ok' if ok else 'FAIL ' + why}",
              flush=True)
    report("power cut", runs, losses, failures)
    return failures == 0


if not args or args[0] not in ("kill", "powercut"):
    print(__doc__)
    sys.exit(2)
for tool in (logger, agent):
    if not os.access(tool, os.X_OK):
        print(f"missing {tool}: swift build --product dive-logger && swift build --product edge-agent", file=sys.stderr)
        sys.exit(2)
n = int(opt("--runs", "100" if args[0] == "kill" else "20"))
ok = kill_mode(n) if args[0] == "kill" else powercut_mode(n)
sys.exit(0 if ok else 1)
