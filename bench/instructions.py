#!/usr/bin/env python3
"""Instructions per second of the agent in steady state, for owners of
smaller boards (issue 22, "figures a Raspberry Pi owner can use").

This machine's VM exposes no hardware counters (`perf stat -e instructions`
says "not supported"), so the count comes from the equivalent software
counter: Valgrind's callgrind counts every instruction the process executes
(Ir). The agent runs under it twice, for a short and a long --duration,
with the same clients; the difference over the difference in time is the
steady state (start-up, configuration and connection costs cancel). The
agent keeps its 100 Hz under callgrind (it needs about 1 % of a core
natively; callgrind is some 50x slower), so the count is that of real time.

Clients (Python, standard library): N connections that subscribe to
deviceMotion, accelerometer, gyroscope, magnetometer and altitude every
0.01 s, read as JSON lines (--transport lines) or given a shared-memory
ring each (--transport ring; they hold the ring and do not wait on it,
so the agent's single FUTEX_WAKE per delivery finds no waiter).

From instructions per second, an estimate for a Cortex-A53 at 1 GHz
(Raspberry Pi 3, Zero 2), with the assumptions printed next to it.

Usage: bench/instructions.py --agent .build/release/edge-agent [--clients 8]
         [--transport lines|ring] [--short 10] [--long 30]
"""
import argparse
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time

STREAMS = ["deviceMotion", "accelerometer", "gyroscope", "magnetometer", "altitude"]
# Assumptions for the Cortex-A53 estimate (documented in docs/benchmarks.md):
A53_IPC = 0.7          # in-order, dual issue: sustained IPC of branchy integer/FP code
AARCH64_PER_X86 = 1.1  # AArch64 instructions per x86-64 instruction for the same Swift code


def reader(path, transport, layout, stop, counts, i):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    for _ in range(600):
        try:
            s.connect(path)
            break
        except OSError:
            time.sleep(0.1)
    else:
        return
    buf = b""
    for k, name in enumerate(STREAMS):
        req = {"class": "subscribe", "stream": name, "interval_s": 0.01, "id": k + 1}
        if transport == "ring":
            req["ring"] = layout
        s.sendall((json.dumps(req) + "\n").encode())
    s.settimeout(0.5)
    fds = []
    while not stop.is_set():
        try:
            data, anc, _, _ = s.recvmsg(65536, socket.CMSG_SPACE(16 * 4))
        except socket.timeout:
            continue
        except OSError:
            break
        for level, kind, payload in anc:
            fds.extend(int.from_bytes(payload[j:j + 4], "little") for j in range(0, len(payload) - 3, 4))
        if not data:
            break
        counts[i] += data.count(b"\n")
    for fd in fds:
        os.close(fd)
    s.close()


def layout_of(agent, config):
    d = tempfile.mkdtemp(prefix="instr-layout-")
    path = os.path.join(d, "a.sock")
    p = subprocess.Popen([agent, "run", "--socket", path, "--duration", "30", "--quiet"] +
                         (["--config", config] if config else []), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        for _ in range(600):
            try:
                s = socket.socket(socket.AF_UNIX)
                s.connect(path)
                line = s.makefile("rb").readline()
                s.close()
                return json.loads(line)["ring_layout"]
            except OSError:
                time.sleep(0.05)
        raise SystemExit("the agent did not start")
    finally:
        p.terminate()
        p.wait()
        shutil.rmtree(d, ignore_errors=True)


def count(agent, config, seconds, clients, transport, layout):
    d = tempfile.mkdtemp(prefix="instr-")
    path = os.path.join(d, "agent.sock")
    out = os.path.join(d, "callgrind.out")
    cmd = ["valgrind", "--tool=callgrind", "--callgrind-out-file=" + out, agent, "run", "--socket", path,
           "--duration", str(seconds), "--quiet"] + (["--config", config] if config else [])
    p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    stop = threading.Event()
    counts = [0] * clients
    threads = [threading.Thread(target=reader, args=(path, transport, layout, stop, counts, i), daemon=True)
               for i in range(clients)]
    for t in threads:
        t.start()
    _, err = p.communicate(timeout=seconds * 10 + 300)
    stop.set()
    for t in threads:
        t.join(2)
    ir = None
    for line in open(out):
        if line.startswith("summary:"):
            ir = int(line.split()[1])
    shutil.rmtree(d, ignore_errors=True)
    if ir is None:
        raise SystemExit("no callgrind summary: " + err.decode(errors="replace")[-2000:])
    return ir, sum(counts)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--agent", required=True)
    ap.add_argument("--config", help="agent configuration (default: the agent's own default)")
    ap.add_argument("--clients", type=int, default=8)
    ap.add_argument("--transport", choices=["lines", "ring"], default="lines")
    ap.add_argument("--short", type=float, default=10)
    ap.add_argument("--long", type=float, default=30)
    a = ap.parse_args()
    if not shutil.which("valgrind"):
        raise SystemExit("valgrind is not installed (apt-get install valgrind)")
    # Valgrind cannot read the Swift toolchain's debug information: count a stripped copy.
    work = tempfile.mkdtemp(prefix="instr-bin-")
    agent = os.path.join(work, "edge-agent")
    subprocess.run(["strip", "-o", agent, a.agent], check=True)
    layout = layout_of(agent, a.config) if a.transport == "ring" else None
    short, lines_short = count(agent, a.config, a.short, a.clients, a.transport, layout)
    long, lines_long = count(agent, a.config, a.long, a.clients, a.transport, layout)
    shutil.rmtree(work, ignore_errors=True)
    ips = (long - short) / (a.long - a.short)
    print("== instructions: edge-agent, %d %s client(s) on %s every 0.01 s" % (a.clients, a.transport, ",".join(STREAMS)))
    print("   callgrind Ir: %d in %.0f s, %d in %.0f s (lines read: %d, %d)" % (short, a.short, long, a.long, lines_short, lines_long))
    print("   steady state: %.1f M instructions/s (x86-64), %.0f k per 10 ms" % (ips / 1e6, ips / 100 / 1e3))
    a53 = ips * AARCH64_PER_X86 / (A53_IPC * 1e9) * 100
    print("   Cortex-A53 at 1 GHz: about %.2f %% of a core (assumes %.1f AArch64 instructions per x86-64 one and IPC %.1f)"
          % (a53, AARCH64_PER_X86, A53_IPC))


if __name__ == "__main__":
    sys.exit(main())
