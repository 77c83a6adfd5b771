#!/usr/bin/env python3
"""An independent reader of the agent's shared-memory rings.

docs/protocol.md, "Shared-memory rings", describes the ring a local client
may read a stream from. This script reads it with Python's standard library
alone (no code of the project), against the real `edge-agent run` on the
simulated board, and checks what a reader relies on:

  * the descriptor comes with the `subscribed` reply that offers it
    (SCM_RIGHTS), and only to a client that asked with the agent's layout;
  * it is sealed: no shrinking, growing or writable mapping; write() fails;
  * the header is as documented, and the records' sequence numbers and
    capture timestamps agree with the JSON lines another connection gets
    for the same stream at the same time;
  * a reader killed (SIGKILL) in the middle of reading leaves the agent
    and another reader going, and the agent's descriptors as they were;
  * when the agent stops, the ring is marked closed and the socket ends;
    a new agent gives a new ring.

Usage: ring-reader-check.py --agent PATH [--seconds S]
Exit status 0 when every check passes; each check prints PASS or FAIL.
"""
import argparse
import array
import fcntl
import json
import mmap
import os
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import time

HEADER = struct.Struct("<IIQIIII")       # magic, version, layout, record, slot, slots, stream
WRITE_SEQ = 32                           # u64: records written
WAKE = 40                                # u32: bumped per delivery
CLOSED = 44                              # u32: 1 once the agent let go
HEADER_BYTES = 64
F_SEAL_SEAL, F_SEAL_SHRINK, F_SEAL_GROW, F_SEAL_FUTURE_WRITE = 1, 2, 4, 0x10

failures = []


def check(ok, what):
    print(("PASS " if ok else "FAIL ") + what, flush=True)
    if not ok:
        failures.append(what)
    return ok


class Connection:
    def __init__(self, path):
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.connect(path)
        self.buf = b""
        self.fds = []
        self.version = self.message(10)

    def send(self, obj):
        self.sock.sendall((json.dumps(obj) + "\n").encode())

    def line(self, timeout):
        end = time.monotonic() + timeout
        while b"\n" not in self.buf:
            left = end - time.monotonic()
            if left <= 0:
                return None
            self.sock.settimeout(left)
            try:
                data, anc, _, _ = self.sock.recvmsg(65536, socket.CMSG_SPACE(16 * 4))
            except socket.timeout:
                return None
            for level, kind, payload in anc:
                if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
                    fds = array.array("i")
                    fds.frombytes(payload[: len(payload) - len(payload) % 4])
                    self.fds.extend(fds)
            if not data:
                return None
            self.buf += data
        line, self.buf = self.buf.split(b"\n", 1)
        return line

    def message(self, timeout=10):
        line = self.line(timeout)
        return None if line is None else json.loads(line)

    def reply(self, request_id, timeout=10):
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            m = self.message(end - time.monotonic())
            if m is None:
                return None
            if m.get("id") == request_id:
                return m
        return None

    def close(self):
        for fd in self.fds:
            os.close(fd)
        self.sock.close()


class Ring:
    def __init__(self, fd):
        self.fd = fd
        self.size = os.fstat(fd).st_size
        self.map = mmap.mmap(fd, self.size, mmap.MAP_SHARED, mmap.PROT_READ)
        (self.magic, self.version, self.layout, self.record_bytes, self.slot_bytes, self.slots,
         self.stream) = HEADER.unpack_from(self.map, 0)

    def u64(self, off):
        return struct.unpack_from("<Q", self.map, off)[0]

    def u32(self, off):
        return struct.unpack_from("<I", self.map, off)[0]

    def written(self):
        return self.u64(WRITE_SEQ)

    def timestamp(self, seq):
        """Record seq's capture time (every sample type starts with it), or
        None when the slot holds another record or changed during the read."""
        off = HEADER_BYTES + (seq % self.slots) * self.slot_bytes
        if self.u64(off) != seq + 1:
            return None
        t = self.u64(off + 8)
        return t if self.u64(off) == seq + 1 else None


def start_agent(exe, sock, log):
    p = subprocess.Popen([exe, "run", "--socket", sock, "--duration", "300", "--quiet"],
                         stdout=log, stderr=subprocess.STDOUT)
    end = time.monotonic() + 60
    while time.monotonic() < end:
        if os.path.exists(sock):
            try:
                c = Connection(sock)
                c.close()
                return p
            except OSError:
                pass
        if p.poll() is not None:
            break
        time.sleep(0.05)
    raise SystemExit("the agent did not start; its output is in " + log.name)


def subscribe_ring(conn, stream, layout, rid):
    conn.send({"class": "subscribe", "stream": stream, "interval_s": 0, "ring": layout, "id": rid})
    reply = conn.reply(rid)
    fd = conn.fds.pop(0) if conn.fds else None
    return reply, fd


def open_fds(pid):
    return len(os.listdir("/proc/%d/fd" % pid))


CHILD = r'''
import mmap, os, socket, json, array, struct, sys, time
s = socket.socket(socket.AF_UNIX); s.connect(sys.argv[1])
s.recv(65536)
s.sendall((json.dumps({"class":"subscribe","stream":"deviceMotion","ring":sys.argv[2],"id":1}) + "\n").encode())
fds = array.array("i")
while not fds:
    data, anc, _, _ = s.recvmsg(65536, socket.CMSG_SPACE(4))
    for level, kind, payload in anc:
        fds.frombytes(payload[: len(payload) - len(payload) % 4])
m = mmap.mmap(fds[0], os.fstat(fds[0]).st_size, mmap.MAP_SHARED, mmap.PROT_READ)
print("reading", flush=True)
while True:   # reads for ever, until killed mid-read
    struct.unpack_from("<Q", m, 32)
'''


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--agent", required=True, help="the edge-agent executable")
    ap.add_argument("--seconds", type=float, default=3, help="how long to compare the ring with the lines")
    a = ap.parse_args()
    work = tempfile.mkdtemp(prefix="ring-check-")
    sock = os.path.join(work, "agent.sock")
    log = open(os.path.join(work, "agent.log"), "w")
    agent = start_agent(a.agent, sock, log)
    try:
        lines = Connection(sock)
        ringc = Connection(sock)
        layout = ringc.version.get("ring_layout")
        check(isinstance(layout, str) and len(layout) == 16, "the version line names the agent's sample layout")

        # Another layout: lines, no descriptor.
        reply, fd = subscribe_ring(ringc, "deviceMotion", "0" * 16, 1)
        check(reply is not None and reply.get("class") == "subscribed" and "ring" not in reply and fd is None,
              "a client of another layout is served lines and gets no descriptor")

        lines.send({"class": "subscribe", "stream": "deviceMotion", "interval_s": 0, "id": 1})
        check(lines.reply(1) is not None, "the line reader subscribed")
        reply, fd = subscribe_ring(ringc, "deviceMotion", layout, 2)
        if not check(reply is not None and "ring" in reply and fd is not None,
                     "the reply offers a ring and its descriptor came with it"):
            return
        offer = reply["ring"]
        seals = fcntl.fcntl(fd, 1034)   # F_GET_SEALS
        want = F_SEAL_SEAL | F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_FUTURE_WRITE
        check(seals & want == want, "sealed against shrinking, growing and writable mappings (seals %#x)" % seals)
        try:
            mmap.mmap(fd, os.fstat(fd).st_size, mmap.MAP_SHARED, mmap.PROT_READ | mmap.PROT_WRITE)
            check(False, "a writable mapping is refused")
        except PermissionError:
            check(True, "a writable mapping is refused")
        try:
            os.pwrite(fd, b"x", 0)
            check(False, "write() is refused")
        except PermissionError:
            check(True, "write() is refused")
        ring = Ring(fd)
        check(ring.magic == 0x52474445 and ring.version == 1, "the header's magic and version")
        check("%016x" % ring.layout == layout == offer["layout"], "the header's layout is the agent's")
        check(ring.slots == offer["slots"] and ring.record_bytes == offer["record_bytes"]
              and ring.slot_bytes == ring.record_bytes + 8
              and ring.size >= HEADER_BYTES + ring.slots * ring.slot_bytes, "sizes as the reply says")

        # Read the ring and the lines side by side.
        next_seq = offer["start"]
        from_ring = []
        lost = 0
        from_lines = []
        end = time.monotonic() + a.seconds
        while time.monotonic() < end:
            w = ring.written()
            if w - next_seq > ring.slots:
                lost += w - ring.slots - next_seq
                next_seq = w - ring.slots
            while next_seq < w:
                t = ring.timestamp(next_seq)
                if t is None:
                    lost += 1
                else:
                    from_ring.append(t)
                next_seq += 1
            m = lines.message(0.005)
            while m is not None:
                if m.get("class") == "sample" and m.get("stream") == "deviceMotion":
                    from_lines.append(m["timestamp_ns"])
                m = lines.message(0.0)
        # Lines still in flight for the window.
        tail = time.monotonic() + 2
        while time.monotonic() < tail and (not from_lines or from_lines[-1] < from_ring[-1]):
            m = lines.message(0.1)
            if m and m.get("class") == "sample" and m.get("stream") == "deviceMotion":
                from_lines.append(m["timestamp_ns"])
        rate = len(from_ring) / a.seconds
        check(len(from_ring) > 50 * a.seconds, "the ring carries device motion (%.0f samples/s)" % rate)
        check(lost == 0, "a reader that keeps up loses nothing (%d lost)" % lost)
        check(all(b > x for x, b in zip(from_ring, from_ring[1:])), "capture times increase record by record")
        window = [t for t in from_lines if from_ring[0] <= t <= from_ring[-1]]
        check(window == from_ring,
              "the ring's records are the line reader's samples, one for one (%d and %d)" % (len(from_ring), len(window)))

        # A reader killed in the middle of reading.
        before = open_fds(agent.pid)
        child = subprocess.Popen([sys.executable, "-c", CHILD, sock, layout], stdout=subprocess.PIPE)
        child.stdout.readline()
        time.sleep(0.3)
        child.send_signal(signal.SIGKILL)
        child.wait()
        w0 = ring.written()
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and (ring.written() < w0 + 50 or open_fds(agent.pid) > before):
            time.sleep(0.05)
        check(agent.poll() is None and ring.written() >= w0 + 50,
              "after a reader was killed mid-read the agent writes on")
        check(open_fds(agent.pid) <= before, "and holds no more descriptors than before it came (%d, was %d)"
              % (open_fds(agent.pid), before))

        # The agent stops: the ring is closed, the socket ends; a new agent, a new ring.
        inode = os.fstat(fd).st_ino
        agent.send_signal(signal.SIGTERM)
        agent.wait(timeout=30)
        check(ring.u32(CLOSED) == 1, "a stopping agent marks its ring closed")
        ended = False
        end = time.monotonic() + 10
        while time.monotonic() < end:
            m = ringc.message(1)
            if m is None and ringc.line(0.1) is None:
                ended = True
                break
        check(ended, "and the reader's socket ends")
        ring.map.close()
        ringc.close()
        lines.close()
        agent = start_agent(a.agent, sock, log)
        again = Connection(sock)
        reply, fd2 = subscribe_ring(again, "deviceMotion", layout, 1)
        ok = reply is not None and "ring" in reply and fd2 is not None
        if ok:
            ring2 = Ring(fd2)
            w = ring2.written()
            deadline = time.monotonic() + 10
            while time.monotonic() < deadline and ring2.written() < w + 20:
                time.sleep(0.05)
            ok = os.fstat(fd2).st_ino != inode and ring2.written() >= w + 20
            ring2.map.close()
        check(ok, "the new agent gives a new ring, and it fills")
        again.close()
    finally:
        if agent.poll() is None:
            agent.send_signal(signal.SIGTERM)
            try:
                agent.wait(timeout=30)
            except subprocess.TimeoutExpired:
                agent.kill()
    print("%d failed" % len(failures) if failures else "ring reader: all checks passed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
