#!/usr/bin/python3
"""Stale reads after a server fails (issue 61), checked Jepsen-style
against real memcached servers behind the real memshard binary.

Writers set versioned values (`key -> "<version>"`, one writer per key, so
each key's versions only grow) and note, per key, the highest version
whose write was acknowledged. Readers get keys and compare: a hit is
STALE when its version is older than one whose write was acknowledged
before the read was sent. A miss is never stale. Meanwhile a nemesis fails
one server of the fleet (the "victim", the first server of the pool):

  freeze  SIGSTOP for a while (memshard times it out and ejects it),
          then SIGCONT: it comes back holding everything it had, and
          then runs the requests that waited in its sockets
  kill    SIGKILL, then a restart on the same port: it comes back empty
  cut     a relay between memshard and it black-holes both directions,
          then forwards again: it comes back holding everything
  split   (not in the default modes; with several memshards) the same
          cut, between the victim and the first memshard only: the
          others never see it fail, and read what the first wrote around it
  warm    memcached's warm restart (-e memory file; SIGUSR1 saves and
          exits, the next start reloads): it comes back holding everything
  none    nothing happens, on the same schedule: the control run (it
          must show no stale read) and the hit ratio to compare with

for each pool kind: plain, replicas 2 and 3 (write_policy first), a zone
route (a copy per zone pool) and a pool with a gutter; through one
memshard or three (writers and readers then mostly use different ones).

Each (pool, mode, instances) cell is a fresh fleet, so one failure's
leftovers cannot be blamed on the next. The table gives, per cell:
acknowledged writes, hits, misses, stale reads, errors (timeouts,
SERVER_ERROR, closed connections: allowed while a server is out),
memshard's ejections, and the hit ratio in the window after the server
returned beside the `none` run's in the same window. "(while out)" counts
the stale reads sent while the victim was failed; "stale until" is how
long after the return the last stale read was sent.

Run:  stale_test.py --memshard build/proxy/memshard --short
      stale_test.py --long      (60 s after each return, 1 and 3 instances,
                                 and split; about an hour)
      stale_test.py --pools plain,gutter --modes none,freeze --instances 3
Exit: 0; 1 with --expect-zero-stale when a single-instance cell read
anything stale; 2 when the harness itself failed (nothing measured)."""

import argparse
import os
import random
import signal
import socket
import sys
import threading
import time
from collections import Counter

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from fleet import Memcached, Memshard, Relay  # noqa: E402

POOLS = ("plain", "replicas2", "replicas3", "zone", "gutter")
MODES = ("none", "freeze", "kill", "cut", "warm", "split")
DEFAULT_MODES = MODES[:5]
SERVERS = {"plain": 3, "replicas2": 3, "replicas3": 3, "zone": 4, "gutter": 4}

# md5, as twemproxy's fnv1a_64 crowds keys this alike onto few servers.
# The settings: a server is ejected after two 200 ms timeouts (or
# refusals) and probed back every second.
TARGET = ("hash: md5", "distribution: ketama", "auto_eject_hosts: true",
          "server_failure_limit: 2", "timeout: 200", "server_retry_timeout: 1000")


def config_for(kind, addrs):
    """The YAML every instance shares (LISTEN is each one's own port).
    addrs[0] is VICTIM, each instance's way to the victim: itself or that
    instance's relay. Servers are named (s0, s1, ...), so that ketama
    places keys by name: the victim's share of keys is the same in every
    run and every instance, whatever ports it and its relays got."""
    def pool(name, addrs, extra=(), listen=True, first=0):
        lines = [name + ":"] + (["  listen: LISTEN"] if listen else [])
        lines += ["  " + d for d in TARGET + tuple(extra)] + ["  servers:"]
        lines += ["   - %s:1 s%d" % (a, first + i) for i, a in enumerate(addrs)]
        return "\n".join(lines) + "\n"
    if kind == "zone":
        # Reads go to zone_a first, where the victim is.
        return ("front:\n  listen: LISTEN\n  write_policy: first\n  routes:\n"
                "    - pools: [zone_a, zone_b]\n"
                + pool("zone_a", addrs[:2], listen=False)
                + pool("zone_b", addrs[2:], listen=False, first=2))
    if kind == "gutter":
        return (pool("main", addrs[:3], ("gutter: spare", "gutter_ttl: 10"))
                + pool("spare", addrs[3:], listen=False, first=3))
    if kind.startswith("replicas"):
        return pool("main", addrs, ("replicas: %s" % kind[-1], "write_policy: first"))
    return pool("main", addrs)


class ClientError(Exception):
    pass


class Conn:
    """One text-protocol connection to memshard. Any failure (timeout,
    closed, an unexpected line) drops it, so the next request starts clean
    and a reply can never be paired with the wrong request."""

    def __init__(self, port, timeout):
        self.port, self.timeout, self.sock, self.buf = port, timeout, None, b""

    def _line(self):
        while b"\r\n" not in self.buf:
            chunk = self.sock.recv(65536)
            if not chunk:
                raise ClientError("closed")
            self.buf += chunk
        line, self.buf = self.buf.split(b"\r\n", 1)
        return line

    def _exchange(self, data, read):
        try:
            if self.sock is None:
                self.sock = socket.create_connection(("127.0.0.1", self.port), self.timeout)
                self.sock.settimeout(self.timeout)
                self.buf = b""
            self.sock.sendall(data)
            return read()
        except (OSError, ClientError, ValueError) as e:
            self.close()
            raise ClientError(str(e) or type(e).__name__)

    def command(self, data):
        return self._exchange(data, self._line)

    def get(self, keys):
        """{key: int version} of the keys that hit."""
        def read():
            got = {}
            while True:
                line = self._line()
                if line == b"END":
                    return got
                word, key, _flags, size = line.split(b" ")[:4]
                if word != b"VALUE" or key not in keys:
                    raise ClientError("unexpected reply %r" % line[:80])
                while len(self.buf) < int(size) + 2:
                    chunk = self.sock.recv(65536)
                    if not chunk:
                        raise ClientError("closed")
                    self.buf += chunk
                got[key] = int(self.buf[:int(size)])
                self.buf = self.buf[int(size) + 2:]
        return self._exchange(b"get " + b" ".join(keys) + b"\r\n", read)

    def close(self):
        if self.sock:
            self.sock.close()
        self.sock = None


def key_name(k):
    return b"stale:%d" % k


class Tally:
    """One thread's counts, merged after the run (no lock on the hot path).
    by_tenth: read outcomes per 100 ms of send time, for the windows."""

    def __init__(self):
        self.n = Counter()
        self.by_tenth = Counter()
        self.stale_at = []


class Cell:
    """Shared state of one run: acked[k] = (version, monotonic time) of the
    newest acknowledged write of key k. Only k's writer assigns it; a
    reader copies it before sending, which is the "acknowledged before the
    read was sent" of the definition."""

    def __init__(self, args):
        self.args = args
        self.acked = [(0, 0.0)] * args.keys
        self.stop = threading.Event()
        self.t0 = time.monotonic()


def pace(next_at, interval, stop):
    next_at += interval
    delay = next_at - time.monotonic()
    if delay > 0:
        stop.wait(delay)
    return max(next_at, time.monotonic() - 1.0)  # no burst after a long stall


def writer(cell, w, port, tally):
    a = cell.args
    conn = Conn(port, a.client_timeout)
    rng = random.Random(w)
    version = {k: 1 for k in range(w, a.keys, a.writers)}  # prefill wrote version 1
    interval = a.writers / a.write_rate
    next_at = time.monotonic()
    while not cell.stop.is_set():
        for k in version:
            if cell.stop.is_set():
                break
            version[k] += 1
            v = version[k]
            # A delete is a write too: a value older than an acknowledged
            # delete must not come back either.
            if rng.random() < a.delete_share:
                req, ok = b"delete %s\r\n" % key_name(k), (b"DELETED", b"NOT_FOUND")
                tally.n["deletes"] += 1
            else:
                data = b"%d" % v
                req, ok = b"set %s 0 0 %d\r\n%s\r\n" % (key_name(k), len(data), data), (b"STORED",)
            try:
                reply = conn.command(req)
            except ClientError:
                tally.n["write_errors"] += 1
            else:
                if reply in ok:
                    cell.acked[k] = (v, time.monotonic())
                    tally.n["acked"] += 1
                else:  # SERVER_ERROR: not acknowledged; it may still land later
                    tally.n["write_errors"] += 1
            next_at = pace(next_at, interval, cell.stop)
    conn.close()


def reader(cell, r, port, tally):
    a = cell.args
    conn = Conn(port, a.client_timeout)
    rng = random.Random(1000 + r)
    interval = 1.0 / a.read_rate
    next_at = time.monotonic()
    while not cell.stop.is_set():
        # A quarter of the reads are multi-gets, which memshard splits by server.
        keys = rng.sample(range(a.keys), 4 if rng.random() < 0.25 else 1)
        sent = time.monotonic()
        floor = [cell.acked[k] for k in keys]
        try:
            got = conn.get([key_name(k) for k in keys])
        except ClientError:
            tally.n["read_errors"] += 1
        else:
            tenth = int((sent - cell.t0) * 10)
            for k, (acked_version, _) in zip(keys, floor):
                v = got.get(key_name(k))
                if v is None:
                    tally.n["misses"] += 1
                    tally.by_tenth[(tenth, "miss")] += 1
                    continue
                tally.n["hits"] += 1
                tally.by_tenth[(tenth, "hit")] += 1
                if v < acked_version:
                    tally.n["stale"] += 1
                    tally.stale_at.append(sent - cell.t0)
        next_at = pace(next_at, interval, cell.stop)
    conn.close()


def prefill(port, keys, tries=5):
    """Version 1 of every key, pipelined, so that reads hit from the start.
    Tried again (a set is idempotent here) when a write times out: on a
    loaded machine a 200 ms backend timeout is not a failure of the run."""
    for attempt in range(tries):
        with socket.create_connection(("127.0.0.1", port), 5) as s:
            s.sendall(b"".join(b"set %s 0 0 1\r\n1\r\n" % key_name(k) for k in range(keys)))
            data = b""
            while data.count(b"\r\n") < keys:
                chunk = s.recv(65536)
                if not chunk:
                    raise RuntimeError("memshard closed during the prefill")
                data += chunk
        if data == b"STORED\r\n" * keys:
            return
        if attempt + 1 < tries:
            time.sleep(1.0)
    raise RuntimeError("prefill failed %d times: %r" % (tries, data[:200]))


def curr_items(port):
    with socket.create_connection(("127.0.0.1", port), 2) as s:
        s.sendall(b"stats\r\n")
        data = b""
        while not data.endswith(b"END\r\n"):
            data += s.recv(65536)
    for line in data.split(b"\r\n"):
        if line.startswith(b"STAT curr_items "):
            return int(line.split()[2])
    return 0


def nemesis(mode, victim, relays, down):
    """One failure of the victim, `down` seconds long; returns when the
    server is back (memshard still has to probe it back in)."""
    if mode == "freeze":
        victim.signal(signal.SIGSTOP)
        time.sleep(down)
        victim.signal(signal.SIGCONT)
    elif mode == "kill":
        victim.kill()
        time.sleep(down)
        victim.start()
    elif mode in ("cut", "split"):
        for r in relays:
            r.cut()
        time.sleep(down)
        for r in relays:
            r.heal()
    elif mode == "warm":
        began = time.time()
        stopped = victim.warm_stop()
        # memcached 1.6 refuses its memory file when restarted within the
        # second it stopped in (its clock delta must be positive).
        time.sleep(max(began + down, int(stopped) + 1.1) - time.time())
        victim.start()
        if curr_items(victim.port) == 0:
            raise RuntimeError("warm restart lost the cache: the run would test a kill")
    else:
        time.sleep(down)


def run_cell(args, kind, mode, instances):
    servers, relays, shards = [], [], []
    try:
        for i in range(SERVERS[kind]):
            servers.append(Memcached(warm=(i == 0 and mode == "warm")))
        victim = servers[0]
        if mode in ("cut", "split"):
            relays = [Relay(victim.port) for _ in range(instances)]
        config = config_for(kind, ["VICTIM"] + [s.address for s in servers[1:]])
        shards = [Memshard(args.memshard, config.replace("VICTIM", relays[i].address if relays
                                                        else victim.address))
                  for i in range(instances)]
        prefill(shards[0].port, args.keys)

        cell = Cell(args)
        for k in range(args.keys):
            cell.acked[k] = (1, cell.t0)
        tallies, threads = [], []
        for role, count, offset in ((writer, args.writers, 0), (reader, args.readers, 1)):
            for i in range(count):
                t = Tally()
                tallies.append(t)
                port = shards[(i + offset) % instances].port
                threads.append(threading.Thread(target=role, args=(cell, i, port, t), daemon=True))
        for t in threads:
            t.start()

        time.sleep(args.warmup)
        began, returns = [], []
        for _ in range(args.rounds):
            began.append(time.monotonic() - cell.t0)
            nemesis(mode, victim, relays[:1] if mode == "split" else relays, args.down)
            returns.append(time.monotonic() - cell.t0)
            time.sleep(args.after)
        cell.stop.set()
        for t in threads:
            t.join(args.client_timeout + 5)
        if any(t.is_alive() for t in threads):
            raise RuntimeError("a client thread did not stop")
        ejections = sum(s.metric_sum("memshard_pool_server_ejections_total") for s in shards)
        if args.verbose:  # memshard's own account: ejections, probes, readmissions
            wall = time.time() - (time.monotonic() - cell.t0)  # wall clock at t0, as in the log
            ended = [wall + r for r in returns]
            print("  %s/%s: the failure ended at %s" % (kind, mode, ", ".join(
                time.strftime("%H:%M:%S", time.localtime(e)) + ".%03d" % (e % 1 * 1000)
                for e in ended)))
            for i, s in enumerate(shards):
                for line in s.log_text().splitlines()[5:]:
                    print("    memshard %d: %s" % (i, line))
    finally:
        for p in shards + servers + relays:
            p.close()

    n = Counter()
    by_tenth = Counter()
    stale_at = []
    for t in tallies:
        n += t.n
        by_tenth += t.by_tenth
        stale_at += t.stale_at
    # Hits and misses of reads sent in the windows after each return.
    window = Counter()
    for r in returns:
        for tenth in range(int(r * 10), int((r + args.after) * 10)):
            for outcome in ("hit", "miss"):
                window[outcome] += by_tenth[(tenth, outcome)]
    # Each stale read is either sent while the server was out, or some
    # time after its latest return.
    during = sum(any(b <= t < r for b, r in zip(began, returns)) for t in stale_at)
    after_return = [t - max(r for r in returns if r <= t) for t in stale_at
                    if any(r <= t for r in returns)]
    return {
        "pool": kind, "mode": mode, "instances": instances,
        "acked": n["acked"], "hits": n["hits"], "misses": n["misses"], "stale": n["stale"],
        "errors": n["write_errors"] + n["read_errors"], "ejections": ejections,
        "window_hits": window["hit"], "window_reads": window["hit"] + window["miss"],
        "stale_until": max(after_return) if after_return else None,
        "stale_during": during,
    }


def ratio(hits, reads):
    return "%.1f%%" % (100.0 * hits / reads) if reads else "-"


def print_table(results):
    head = ("pool", "mode", "inst", "acked", "hits", "misses", "stale", "(while out)", "errors",
            "ejects",
            "hit% after", "hit% no-fail", "stale until")
    rows = []
    for r in results:
        base = next((b for b in results if b["mode"] == "none" and b["pool"] == r["pool"]
                     and b["instances"] == r["instances"]), None)
        until = "-" if r["stale_until"] is None else "+%.1fs" % r["stale_until"]
        rows.append((r["pool"], r["mode"], str(r["instances"]), str(r["acked"]), str(r["hits"]),
                     str(r["misses"]), str(r["stale"]), str(r["stale_during"]), str(r["errors"]),
                     str(r["ejections"]),
                     ratio(r["window_hits"], r["window_reads"]),
                     ratio(base["window_hits"], base["window_reads"]) if base else "-", until))
    widths = [max(len(x) for x in col) for col in zip(head, *rows)]
    for row in [head] + rows:
        print("  ".join(x.rjust(w) if i >= 2 else x.ljust(w)
                        for i, (x, w) in enumerate(zip(row, widths))))
    sys.stdout.flush()


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--short", action="store_true", help="the CI run (the default)")
    p.add_argument("--long", action="store_true",
                   help="60 s after each return, 1 and 3 instances, and split")
    p.add_argument("--pools", default=",".join(POOLS))
    p.add_argument("--modes", default=None,
                   help="default: %s (--long: and split)" % ",".join(DEFAULT_MODES))
    p.add_argument("--instances", default=None, help="e.g. 1,3 (default: 1; --long: 1,3)")
    p.add_argument("--memshard", default=None, help="the binary (default: found under build/)")
    p.add_argument("--expect-zero-stale", action="store_true",
                   help="exit 1 if a single-instance run read anything stale")
    p.add_argument("--keys", type=int, default=300)
    p.add_argument("--writers", type=int, default=4)
    p.add_argument("--readers", type=int, default=4)
    p.add_argument("--write-rate", type=float, default=100.0,
                   help="writes/s of all writers together: each key is rewritten every "
                        "keys/rate seconds, which is how long a stale value can survive")
    p.add_argument("--read-rate", type=float, default=250.0, help="requests/s per reader")
    p.add_argument("--delete-share", type=float, default=0.05)
    p.add_argument("--warmup", type=float, default=None)
    p.add_argument("--down", type=float, default=1.5, help="seconds each failure lasts")
    p.add_argument("--after", type=float, default=None, help="seconds kept after each return")
    p.add_argument("--rounds", type=int, default=None)
    p.add_argument("--client-timeout", type=float, default=1.0)
    p.add_argument("--verbose", action="store_true", help="print memshard's log after each run")
    a = p.parse_args()
    a.warmup = a.warmup if a.warmup is not None else (5.0 if a.long else 0.8)
    a.after = a.after if a.after is not None else (60.0 if a.long else 2.5)
    a.rounds = a.rounds if a.rounds is not None else 1
    a.instances = [int(x) for x in (a.instances or ("1,3" if a.long else "1")).split(",")]
    a.pools = a.pools.split(",")
    a.modes = (a.modes or ",".join(MODES if a.long else DEFAULT_MODES)).split(",")
    for name, given, known in (("pool", a.pools, POOLS), ("mode", a.modes, MODES)):
        bad = [x for x in given if x not in known]
        if bad:
            p.error("unknown %s %s (known: %s)" % (name, ",".join(bad), ",".join(known)))
    if a.memshard is None:
        root = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..")
        a.memshard = os.path.normpath(os.path.join(root, "build", "proxy", "memshard"))
    if not os.access(a.memshard, os.X_OK):
        p.error("no memshard binary at %s (--memshard)" % a.memshard)
    return a


def main():
    a = parse_args()
    began = time.monotonic()
    print("memshard %s; %d keys, %d writers (%.0f writes/s), %d readers (%.0f req/s each); "
          "each failure %.1f s, %.1f s after each return, %d round(s)"
          % (a.memshard, a.keys, a.writers, a.write_rate, a.readers, a.read_rate,
             a.down, a.after, a.rounds))
    results = []
    try:
        for instances in a.instances:
            for kind in a.pools:
                for mode in a.modes:
                    if mode == "split" and instances == 1:
                        continue  # the same as cut
                    r = run_cell(a, kind, mode, instances)
                    results.append(r)
                    print("  %-9s %-6s x%d: %d stale, %d hits, %d misses, %d errors, %d acked"
                          % (kind, mode, instances, r["stale"], r["hits"], r["misses"],
                             r["errors"], r["acked"]), flush=True)
    except Exception as e:  # the harness, not memshard, failed: say so apart from stale reads
        print_table(results)
        print("harness failed: %s: %s" % (type(e).__name__, e))
        return 2
    print()
    print_table(results)
    print("\n%d cells in %.0f s" % (len(results), time.monotonic() - began))
    empty = [r for r in results if r["acked"] == 0 or r["hits"] == 0]
    if empty:
        print("harness failed: no acknowledged write or no hit in %s"
              % ", ".join("%s/%s" % (r["pool"], r["mode"]) for r in empty))
        return 2
    unseen = [r for r in results if r["mode"] != "none" and r["ejections"] == 0]
    if unseen:
        print("note: memshard ejected nothing in %s"
              % ", ".join("%s/%s x%d" % (r["pool"], r["mode"], r["instances"]) for r in unseen))
    stale = [r for r in results if r["instances"] == 1 and r["stale"]]
    if a.expect_zero_stale and stale:
        print("FAIL: stale reads through one memshard in %s"
              % ", ".join("%s/%s (%d)" % (r["pool"], r["mode"], r["stale"]) for r in stale))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
