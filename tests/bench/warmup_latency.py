#!/usr/bin/env python3
"""What a moved key's miss costs under reload_warmup (scripts/bench-warmup).

Starts 4 memcached servers and memshard over 3 of them, writes keys, reloads
onto all 4 (about a quarter of the keys move), then times single-key gets,
one at a time on one connection, of four kinds of key in one interleaved
sequence, so that every kind sees the same machine:

  plain miss   a key never written whose server did not change (1 round trip)
  moved hit    a written key that moved: missed on its new server, found on
               its old one (2 round trips, and a copy sent without waiting)
  moved miss   a key never written that moved: missed on both (2 round trips)
  hit          a written key that did not move (1 round trip)

and the same sequence again against a memshard without reload_warmup, whose
moved keys are plain misses. Prints per kind the gets, the hits, p50 and p99 in
microseconds, and the moved kinds' ratios to a plain miss. Measures, never judges.
"""
import argparse
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_port(port, limit=10.0):
    end = time.time() + limit
    while time.time() < end:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            return
        except OSError:
            time.sleep(0.05)
    raise RuntimeError(f"nothing listens on {port}")


class Conn:
    def __init__(self, port):
        self.s = socket.create_connection(("127.0.0.1", port))
        self.s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.buf = b""

    def until(self, suffix):
        while not self.buf.endswith(suffix):
            chunk = self.s.recv(65536)
            if not chunk:
                raise RuntimeError("connection closed")
            self.buf += chunk
        out, self.buf = self.buf, b""
        return out

    def cmd(self, line, suffix=b"\r\n"):
        self.s.sendall(line)
        return self.until(suffix)


def config(port, servers, warmup_ms):
    lines = ["main:", f"  listen: 127.0.0.1:{port}"]
    if warmup_ms:
        lines.append(f"  reload_warmup: {warmup_ms}")
    lines.append("  servers:")
    lines += [f"   - 127.0.0.1:{p}:1" for p in servers]
    return "\n".join(lines) + "\n"


def percentile(xs, q):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(q * len(xs)))]


def run(binary, mc_ports, warmup_ms, n, tmp, tag):
    port = free_port()
    path = os.path.join(tmp, f"{tag}.yml")
    with open(path, "w") as f:
        f.write(config(port, mc_ports[:3], warmup_ms))
    log = open(os.path.join(tmp, f"{tag}.log"), "w")
    ms = subprocess.Popen([binary, "-c", path, "-s", "0", "--threads", "1"], stdout=log,
                          stderr=subprocess.STDOUT)
    try:
        wait_port(port)
        c = Conn(port)
        # Written keys: w:<i>; never written: n:<i>. Values of 100 bytes.
        for i in range(n):
            c.s.sendall(b"set %d:w 0 0 100 noreply\r\n" % i + b"v" * 100 + b"\r\n")
        c.cmd(b"set sync 0 0 1\r\nx\r\n")
        with open(path, "w") as f:
            f.write(config(port, mc_ports, warmup_ms))
        ms.send_signal(signal.SIGHUP)
        time.sleep(0.5)
        # Which keys moved: ask `ring lookup` of both configs.
        old_cfg = os.path.join(tmp, f"{tag}-old.yml")
        with open(old_cfg, "w") as f:
            f.write(config(port, mc_ports[:3], warmup_ms))
        keys = [b"%d:w" % i for i in range(n)] + [b"%d:n" % i for i in range(n)]
        def lookup(cfg):
            r = subprocess.run([binary, "ring", "lookup", "-c", cfg], input=b"\n".join(keys) + b"\n",
                               capture_output=True, check=True)
            return [line.split(b"\t")[1] for line in r.stdout.splitlines()]
        before, after = lookup(old_cfg), lookup(path)
        kinds = {"plain miss": [], "moved hit": [], "moved miss": [], "hit": []}
        hits = {k: 0 for k in kinds}
        order = []
        for k, a, b in zip(keys, before, after):
            written = k.endswith(b":w")
            moved = a != b
            kind = ("moved hit" if written else "moved miss") if moved else ("hit" if written else "plain miss")
            order.append((kind, k))
        # Interleave the kinds: sort by key number, so that they alternate.
        order.sort(key=lambda e: int(e[1].split(b":")[0]))
        for kind, k in order:
            t0 = time.perf_counter_ns()
            reply = c.cmd(b"get " + k + b"\r\n", b"END\r\n")
            kinds[kind].append((time.perf_counter_ns() - t0) / 1000)
            hits[kind] += reply.startswith(b"VALUE ")
        return kinds, hits
    finally:
        ms.send_signal(signal.SIGTERM)
        ms.wait(10)
        log.close()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--binary", required=True)
    ap.add_argument("--keys", type=int, default=20000)
    args = ap.parse_args()
    tmp = tempfile.mkdtemp(prefix="memshard-bench-warmup.")
    mcs = []
    try:
        ports = []
        for _ in range(4):
            p = free_port()
            mcs.append(subprocess.Popen(["memcached", "-l", "127.0.0.1", "-p", str(p), "-U", "0",
                                         "-t", "1", "-m", "256"] + (["-u", "nobody"] if os.geteuid() == 0 else [])))
            ports.append(p)
        for p in ports:
            wait_port(p)
        results = {}
        for tag, warm in (("off", 0), ("warmup", 600000)):
            for p in ports:
                Conn(p).cmd(b"flush_all\r\n")
            results[tag] = run(args.binary, ports, warm, args.keys, tmp, tag)
        print(f"single-key gets, one at a time, {args.keys} written keys, grow 3 -> 4 servers")
        print("memshard\tkind\tgets\thits\tp50_us\tp99_us")
        for tag, (kinds, hits) in results.items():
            for kind, xs in kinds.items():
                if xs:
                    print(f"{tag}\t{kind}\t{len(xs)}\t{hits[kind]}\t{percentile(xs, 0.5):.1f}"
                          f"\t{percentile(xs, 0.99):.1f}")
        w = results["warmup"][0]
        base50, base99 = percentile(w["plain miss"], 0.5), percentile(w["plain miss"], 0.99)
        for kind in ("moved hit", "moved miss"):
            print(f"reload_warmup {kind} / plain miss: p50 {percentile(w[kind], 0.5) / base50:.2f}x, "
                  f"p99 {percentile(w[kind], 0.99) / base99:.2f}x")
    finally:
        for m in mcs:
            m.terminate()
        for m in mcs:
            m.wait(10)
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
