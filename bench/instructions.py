#!/usr/bin/env python3
"""Instructions per second of the agent, the MQTT bridge or a Core Motion
app in steady state, for owners of smaller boards (issue 22, "figures a
Raspberry Pi owner can use").

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

--bridge PATH counts the MQTT bridge instead (edge-mqtt's bridge process,
run directly as the worker its supervisor would start): the agent runs
natively (--agent) on the simulated board at 100 Hz, mosquitto on a free
loopback port, and the bridge under callgrind publishes the workload of
`edge-bench mqtt` part 1 (deviceMotion and altitude JSON at 10 Hz, their
scalars at 1 Hz), or part 2 with --json-interval 0.01 (every device-motion
sample). --transport lines sets EDGE_AGENT_RINGS=0 in its environment.

--app PATH counts one Core Motion app that takes `--seconds S`, such as
the repository's tilt-example (`swift build -c release --product
tilt-example`: one CMMotionManager, device motion at 20 Hz on the main
queue, a line printed per update), against the native agent
($EDGE_AGENT_SOCKET); --transport as for the bridge. (`edge-bench
coremotion-client`, the client of `edge-bench coremotion`, stops at a
Swift trap under Valgrind, so it cannot be counted this way.)

From instructions per second, an estimate for a Cortex-A53 at 1 GHz
(Raspberry Pi 3, Zero 2), with the assumptions printed next to it.

Usage: bench/instructions.py --agent .build/release/edge-agent [--clients 8]
         [--transport lines|ring] [--short 10] [--long 30]
       bench/instructions.py --agent A --bridge .build/release/edge-mqtt [--json-interval 0.1] [--transport ...]
       bench/instructions.py --agent A --app .build/release/tilt-example [--transport ...]
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
    return summary_ir(out, d, err), sum(counts)


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def wait_for(cond, seconds, what):
    end = time.time() + seconds
    while time.time() < end:
        if cond():
            return
        time.sleep(0.05)
    raise SystemExit(what + " did not start within %.0f s" % seconds)


class Rig:
    """The native agent (100 Hz simulated board) and, for the bridge, mosquitto."""

    def __init__(self, agent, config, broker):
        self.dir = tempfile.mkdtemp(prefix="instr-rig-")
        self.socket = os.path.join(self.dir, "agent.sock")
        self.procs = []
        self.procs.append(subprocess.Popen([agent, "run", "--socket", self.socket, "--quiet"] +
                                           (["--config", config] if config else []),
                                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
        wait_for(lambda: os.path.exists(self.socket), 30, "the agent")
        self.port = None
        if broker:
            if not shutil.which("mosquitto"):
                raise SystemExit("mosquitto is not installed")
            self.port = free_port()
            conf = os.path.join(self.dir, "mosquitto.conf")
            with open(conf, "w") as f:
                f.write("listener %d 127.0.0.1\nallow_anonymous true\npersistence false\n" % self.port)
            self.procs.append(subprocess.Popen(["mosquitto", "-c", conf], stdout=subprocess.DEVNULL,
                                               stderr=subprocess.DEVNULL))

            def listening():
                try:
                    socket.create_connection(("127.0.0.1", self.port), 0.2).close()
                    return True
                except OSError:
                    return False
            wait_for(listening, 10, "mosquitto")

    def close(self):
        for p in reversed(self.procs):
            p.terminate()
            try:
                p.wait(5)
            except subprocess.TimeoutExpired:
                p.kill()
        shutil.rmtree(self.dir, ignore_errors=True)


def callgrind(cmd, env, seconds, stop_with_signal):
    """Ir of `cmd` under callgrind: ended by SIGTERM after `seconds`, or run to its own end."""
    d = tempfile.mkdtemp(prefix="instr-")
    out = os.path.join(d, "callgrind.out")
    p = subprocess.Popen(["valgrind", "--tool=callgrind", "--callgrind-out-file=" + out] + cmd, env=env,
                         stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    if stop_with_signal:
        time.sleep(seconds)
        p.terminate()
    _, err = p.communicate(timeout=seconds * 10 + 300)
    return summary_ir(out, d, err)


def summary_ir(out, d, err):
    """The instructions callgrind counted (its output's summary line), then
    the run's folder removed; exits with valgrind's stderr when there is none."""
    ir = None
    if os.path.exists(out):
        for line in open(out):
            if line.startswith("summary:"):
                ir = int(line.split()[1])
    shutil.rmtree(d, ignore_errors=True)
    if ir is None:
        raise SystemExit("no callgrind summary: " + err.decode(errors="replace")[-2000:])
    return ir


def client_env(transport):
    env = dict(os.environ)
    for k in ["EDGE_MQTT_CONFIG", "NOTIFY_SOCKET", "WATCHDOG_USEC", "WATCHDOG_PID"]:
        env.pop(k, None)
    env["EDGE_AGENT_RINGS"] = "1" if transport == "ring" else "0"
    return env


def count_bridge(bridge, rig, seconds, transport, json_interval):
    conf = os.path.join(rig.dir, "bridge-%d.json5" % int(seconds * 1000))
    with open(conf, "w") as f:
        f.write("""{ node: "instr", agent: { socket_path: "%s" },
  broker: { host: "127.0.0.1", port: %d },
  topics: { prefix: "instr" },
  streams: [ { stream: "deviceMotion", json_interval_s: %s, scalars_interval_s: 1 },
             { stream: "altitude", json_interval_s: 0.1, scalars_interval_s: 1 } ],
  status_socket: "%s" }
""" % (rig.socket, rig.port, json_interval, os.path.join(rig.dir, "status-%d.sock" % int(seconds * 1000))))
    env = client_env(transport)
    # The worker the supervisor would start: the bridge process alone.
    env["EDGE_MQTT_WORKER"] = "1"
    # A subscriber counts what it published (under callgrind it must keep up).
    seen = os.path.join(rig.dir, "seen-%d.txt" % int(seconds * 1000))
    with open(seen, "w") as out:
        sub = subprocess.Popen(["mosquitto_sub", "-p", str(rig.port), "-t", "instr/instr/deviceMotion"], stdout=out,
                               stderr=subprocess.DEVNULL)
        try:
            ir = callgrind([bridge, "run", "--config", conf], env, seconds, True)
        finally:
            sub.terminate()
            sub.wait()
    return ir, sum(1 for _ in open(seen))


def count_app(app, rig, seconds, transport):
    env = client_env(transport)
    env["EDGE_AGENT_SOCKET"] = rig.socket
    return callgrind([app, "--seconds", str(seconds)], env, seconds, False), None


def estimate(ips):
    a53 = ips * AARCH64_PER_X86 / (A53_IPC * 1e9) * 100
    print("   steady state: %.2f M instructions/s (x86-64), %.1f k per 10 ms" % (ips / 1e6, ips / 100 / 1e3))
    print("   Cortex-A53 at 1 GHz: about %.2f %% of a core (assumes %.1f AArch64 instructions per x86-64 one and IPC %.1f)"
          % (a53, AARCH64_PER_X86, A53_IPC))


def main_client(a):
    work = tempfile.mkdtemp(prefix="instr-bin-")
    binary = os.path.join(work, "client")
    subprocess.run(["strip", "-o", binary, a.bridge or a.app], check=True)
    rig = Rig(a.agent, a.config, broker=a.bridge is not None)
    try:
        irs = []
        for seconds in (a.short, a.long):
            if a.bridge:
                irs.append(count_bridge(binary, rig, seconds, a.transport, a.json_interval))
            else:
                irs.append(count_app(binary, rig, seconds, a.transport))
    finally:
        rig.close()
        shutil.rmtree(work, ignore_errors=True)
    ips = (irs[1][0] - irs[0][0]) / (a.long - a.short)
    if a.bridge:
        print("== instructions: edge-mqtt bridge process, deviceMotion JSON every %s s + altitude JSON every 0.1 s, "
              "scalars every 1 s, %s from the agent" % (a.json_interval, "rings" if a.transport == "ring" else "lines"))
    else:
        print("== instructions: a Core Motion app (%s), %s from the agent"
              % (os.path.basename(a.app), "rings" if a.transport == "ring" else "lines"))
    print("   callgrind Ir: %d in %.0f s, %d in %.0f s" % (irs[0][0], a.short, irs[1][0], a.long))
    if a.bridge:
        print("   deviceMotion messages published: %d in %.0f s, %d in %.0f s (%.1f per second in steady state)"
              % (irs[0][1], a.short, irs[1][1], a.long, (irs[1][1] - irs[0][1]) / (a.long - a.short)))
    estimate(ips)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--agent", required=True)
    ap.add_argument("--config", help="agent configuration (default: the agent's own default)")
    ap.add_argument("--clients", type=int, default=8)
    ap.add_argument("--transport", choices=["lines", "ring"], default="lines")
    ap.add_argument("--short", type=float, default=10)
    ap.add_argument("--long", type=float, default=30)
    ap.add_argument("--bridge", help="count this edge-mqtt's bridge process instead of the agent")
    ap.add_argument("--app", help="count this Core Motion app (it takes --seconds S, e.g. tilt-example) instead")
    ap.add_argument("--json-interval", default="0.1", help="the bridge's deviceMotion json_interval_s (0.01: every sample)")
    a = ap.parse_args()
    if not shutil.which("valgrind"):
        raise SystemExit("valgrind is not installed (apt-get install valgrind)")
    if a.bridge or a.app:
        return main_client(a)
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
    estimate(ips)


if __name__ == "__main__":
    sys.exit(main())
