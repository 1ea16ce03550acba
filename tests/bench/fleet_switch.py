#!/usr/bin/env python3
"""A fleet of memshard instances changing servers (scripts/bench-fleet).

Starts 4 memcached servers and 3 memshard instances over the first 3, each
instance with its own config file and port, as sidecars of one fleet. Then,
under load, rolls out a config that adds the 4th server: each instance gets
it (and a SIGHUP) in turn, 2 s apart, as a deployment reaches one host after
another. It runs twice:

  plain      reload_warmup alone: each instance moves keys when its reload
             comes, so for the seconds of the rollout the instances disagree
  switch     the same, with reload_switch_at a few seconds after the last
             instance's reload: every instance moves keys at that moment
             (with --skew S, the instances' moments are spread over S
             seconds, as clocks that far apart would put them)
  dns        no rollout: the instances take their servers from DNS
             (servers_srv, docs/discovery.md), answered by a dnsmasq the
             run starts; the 4th server joins the SRV records, and once
             every instance has switched to it, leaves them again (only
             with --only dns, or where dnsmasq is installed)

Load: writers, each owning keys of its own and writing versions 1, 2, 3...
of them, each write through a random instance and waited for; readers,
each read of a random key through a random instance. Every read is checked
against the versions acknowledged before it was sent:

  stale      it returned a version older than one already acknowledged
  lost       it missed a key that had an acknowledged version
  errors     anything but a hit or a miss (SERVER_ERROR, a closed connection)

Prints reads, writes and the three counts per run. Measures, never judges.
"""
import argparse
import datetime
import os
import random
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
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
        self.s = socket.create_connection(("127.0.0.1", port), timeout=5)
        self.s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.buf = b""

    def until(self, suffixes):
        while not any(self.buf.endswith(x) for x in suffixes):
            chunk = self.s.recv(65536)
            if not chunk:
                raise RuntimeError("connection closed")
            self.buf += chunk
        out, self.buf = self.buf, b""
        return out

    def set(self, key, value):
        self.s.sendall(b"set %s 0 0 %d\r\n%s\r\n" % (key, len(value), value))
        return self.until([b"\r\n"])

    def get(self, key):
        self.s.sendall(b"get %s\r\n" % key)
        return self.until([b"END\r\n", b"ERROR\r\n"])


def rfc3339(unix_s):
    """An RFC 3339 time in UTC, to the millisecond."""
    t = datetime.datetime.fromtimestamp(round(unix_s * 1000) / 1000, datetime.timezone.utc)
    return t.strftime("%Y-%m-%dT%H:%M:%S.") + f"{t.microsecond // 1000:03d}Z"


def config(port, mc_ports, switch_at, window_ms=0):
    lines = ["main:", f"  listen: 127.0.0.1:{port}", "  reload_warmup: 60000"]
    if switch_at:
        lines.append(f"  reload_switch_at: {rfc3339(switch_at)}")
        if window_ms:
            lines.append(f"  reload_switch_window: {window_ms}")
    lines.append("  servers:")
    lines += [f"   - 127.0.0.1:{p}:1" for p in mc_ports]
    return "\n".join(lines) + "\n"


class Book:
    """The versions acknowledged per key, and what the reads found."""

    def __init__(self):
        self.lock = threading.Lock()
        self.acked = {}
        self.reads = self.writes = self.stale = self.lost = self.errors = 0
        self.examples = []

    def note(self, what, text):
        with self.lock:
            setattr(self, what, getattr(self, what) + 1)
            if len(self.examples) < 5:
                self.examples.append(f"{what}: {text}")


def writer(book, keys, ports, stop):
    conns = [Conn(p) for p in ports]
    version = {k: 0 for k in keys}
    i = 0
    while not stop.is_set():
        key = keys[i % len(keys)]
        i += 1
        v = version[key] + 1
        try:
            reply = random.choice(conns).set(key, b"%d:%s" % (v, key))
        except Exception as e:  # a closed connection is an error, then reconnect
            book.note("errors", f"set {key!r}: {e}")
            conns = [Conn(p) for p in ports]
            continue
        if reply != b"STORED\r\n":
            book.note("errors", f"set {key!r}: {reply!r}")
            continue
        version[key] = v
        with book.lock:
            book.acked[key] = v
            book.writes += 1


def reader(book, keys, ports, stop):
    conns = [Conn(p) for p in ports]
    while not stop.is_set():
        key = random.choice(keys)
        with book.lock:
            floor = book.acked.get(key, 0)
        try:
            reply = random.choice(conns).get(key)
        except Exception as e:
            book.note("errors", f"get {key!r}: {e}")
            conns = [Conn(p) for p in ports]
            continue
        with book.lock:
            book.reads += 1
        if reply == b"END\r\n":
            if floor > 0:
                book.note("lost", f"{key!r} missed, version {floor} acknowledged")
            continue
        if not reply.startswith(b"VALUE "):
            book.note("errors", f"get {key!r}: {reply[:80]!r}")
            continue
        data = reply.split(b"\r\n")[1]
        got = int(data.split(b":", 1)[0])
        if got < floor:
            book.note("stale", f"{key!r} read version {got}, {floor} acknowledged")


SRV_NAME = "_memcache._tcp.fleet.test"


class Dnsmasq:
    """dnsmasq on 127.0.0.1 on a free port, serving SRV records for SRV_NAME
    (it reads them only when it starts: a change restarts it)."""

    def __init__(self, tmp):
        self.tmp, self.port, self.proc = tmp, free_port(), None

    def serve(self, mc_ports):
        path = os.path.join(self.tmp, "dnsmasq.conf")
        with open(path, "w") as f:
            for i, p in enumerate(mc_ports):
                f.write(f"srv-host={SRV_NAME},mc-{i}.fleet.test,{p},0,10\n")
                f.write(f"host-record=mc-{i}.fleet.test,127.0.0.1\n")
        self.stop()
        self.proc = subprocess.Popen(
            [shutil.which("dnsmasq") or "/usr/sbin/dnsmasq", "--no-daemon", f"--port={self.port}",
             "--listen-address=127.0.0.1", "--bind-interfaces", "--no-resolv", "--no-hosts",
             f"--conf-file={path}", "--pid-file=", "--cache-size=0", "--local=/fleet.test/"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        wait_port(self.port)

    def stop(self):
        if self.proc:
            self.proc.terminate()
            self.proc.wait()
            self.proc = None


def dns_config(port):
    return "\n".join(["main:", f"  listen: 127.0.0.1:{port}", "  reload_warmup: 60000",
                      f"  servers_srv: {SRV_NAME}", "  discovery_refresh: 1000",
                      "  discovery_hold: 2000"]) + "\n"


def proxy_stat(port, name):
    c = Conn(port)
    c.s.sendall(b"stats\r\n")
    for line in c.until([b"END\r\n"]).decode().splitlines():
        parts = line.split(" ")
        if len(parts) == 3 and parts[1] == name:
            return int(parts[2])
    return None


def wait_switches(ports, n, limit=30.0):
    end = time.time() + limit
    while time.time() < end:
        if all(proxy_stat(p, "main:switches") == n for p in ports):
            return True
        time.sleep(0.1)
    return False


def run_dns(binary, tmp, args):
    """The dns run: a server joins through DNS, then leaves."""
    mc_ports = [free_port() for _ in range(4)]
    mcs = [subprocess.Popen(["memcached", "-l", "127.0.0.1", "-p", str(p), "-U", "0", "-m", "64"]
                            + (["-u", "nobody"] if os.geteuid() == 0 else []))
           for p in mc_ports]
    ports = [free_port() for _ in range(args.instances)]
    procs = []
    dns = Dnsmasq(tmp)
    try:
        for p in mc_ports:
            wait_port(p)
        dns.serve(mc_ports[:3])
        for i, port in enumerate(ports):
            path = os.path.join(tmp, f"dns-{i}.yml")
            with open(path, "w") as f:
                f.write(dns_config(port))
            log = open(os.path.join(tmp, f"dns-{i}.log"), "w")
            procs.append(subprocess.Popen(
                [binary, "-c", path, "-s", "0", "-v", "6", "--dns-server", f"127.0.0.1:{dns.port}"],
                stdout=log, stderr=subprocess.STDOUT))
        for port in ports:
            wait_port(port)
        book = Book()
        stop = threading.Event()
        threads = []
        all_keys = []
        for w in range(args.writers):
            keys = [b"%d:w%d" % (i, w) for i in range(args.keys)]
            all_keys += keys
            threads.append(threading.Thread(target=writer, args=(book, keys, ports, stop)))
        for _ in range(args.readers):
            threads.append(threading.Thread(target=reader, args=(book, all_keys, ports, stop)))
        for t in threads:
            t.start()
        time.sleep(args.gap)
        dns.serve(mc_ports)  # the 4th server joins
        joined = wait_switches(ports, 1)
        time.sleep(args.after)
        dns.serve(mc_ports[:3])  # and leaves
        left = wait_switches(ports, 2)
        time.sleep(args.after)
        stop.set()
        for t in threads:
            t.join()
        if not (joined and left):
            book.examples.append("not every instance switched: see the logs")
        return book
    finally:
        dns.stop()
        for p in procs + mcs:
            p.terminate()
        for p in procs + mcs:
            p.wait()


def run(binary, tmp, tag, scheduled, args):
    mc_ports = [free_port() for _ in range(4)]
    mcs = [subprocess.Popen(["memcached", "-l", "127.0.0.1", "-p", str(p), "-U", "0", "-m", "64"]
                            + (["-u", "nobody"] if os.geteuid() == 0 else []))
           for p in mc_ports]
    ports = [free_port() for _ in range(args.instances)]
    procs = []
    try:
        for p in mc_ports:
            wait_port(p)
        for i, port in enumerate(ports):
            path = os.path.join(tmp, f"{tag}-{i}.yml")
            with open(path, "w") as f:
                f.write(config(port, mc_ports[:3], None))
            log = open(os.path.join(tmp, f"{tag}-{i}.log"), "w")
            procs.append(subprocess.Popen([binary, "-c", path, "-s", "0", "-v", "6"], stdout=log,
                                          stderr=subprocess.STDOUT))
        for port in ports:
            wait_port(port)
        book = Book()
        stop = threading.Event()
        threads = []
        all_keys = []
        for w in range(args.writers):
            keys = [b"%d:w%d" % (i, w) for i in range(args.keys)]
            all_keys += keys
            threads.append(threading.Thread(target=writer, args=(book, keys, ports, stop)))
        for _ in range(args.readers):
            threads.append(threading.Thread(target=reader, args=(book, all_keys, ports, stop)))
        for t in threads:
            t.start()
        began = time.time()
        gap = args.gap
        rollout = gap * len(ports)
        # The switch a little after the last reload, on a whole second.
        switch_at = int(began + rollout + 2) + 1 if scheduled else None
        for i, port in enumerate(ports):
            time.sleep(max(0.0, began + gap * (i + 1) - time.time()))
            # A clock skew of S seconds: the instances' moments S apart.
            at = switch_at + args.skew * i / max(1, len(ports) - 1) if scheduled else None
            with open(os.path.join(tmp, f"{tag}-{i}.yml"), "w") as f:
                f.write(config(port, mc_ports, at, args.window))
            procs[i].send_signal(signal.SIGHUP)
        end = (switch_at + args.skew + args.window / 1000 if scheduled else
               began + rollout) + args.after
        time.sleep(max(0.0, end - time.time()))
        stop.set()
        for t in threads:
            t.join()
        return book, switch_at - began if scheduled else None
    finally:
        for p in procs + mcs:
            p.terminate()
        for p in procs + mcs:
            p.wait()


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--binary", required=True)
    ap.add_argument("--instances", type=int, default=3)
    ap.add_argument("--writers", type=int, default=4)
    ap.add_argument("--readers", type=int, default=4)
    ap.add_argument("--keys", type=int, default=50, help="keys per writer")
    ap.add_argument("--gap", type=float, default=2.0, help="seconds between instances' reloads")
    ap.add_argument("--after", type=float, default=5.0,
                    help="seconds of load after the last reload (plain) or the switch")
    ap.add_argument("--window", type=int, default=0,
                    help="reload_switch_window of the switch run, ms (default 0)")
    ap.add_argument("--skew", type=float, default=0.0,
                    help="seconds between the first and the last instance's switch moment, as "
                    "clocks that far apart would make it (default 0)")
    ap.add_argument("--only", choices=["plain", "switch", "dns"])
    ap.add_argument("--seed", type=int, default=36)
    args = ap.parse_args()
    random.seed(args.seed)
    if not shutil.which("memcached"):
        sys.exit("fleet_switch.py: memcached is not installed (scripts/install-deps)")
    tmp = tempfile.mkdtemp(prefix="memshard-bench-fleet.")
    print(f"{args.instances} memshard instances over 3 memcached servers, a 4th added by a "
          f"rolling reload ({args.gap:g} s between instances); {args.writers} writers of "
          f"{args.keys} keys each and {args.readers} readers, each request through a random "
          f"instance; seed {args.seed}"
          + (f"; switch moments spread over {args.skew:g} s (clock skew)" if args.skew else "")
          + (f"; reload_switch_window {args.window} ms" if args.window else "")
          + f"; logs in {tmp}")
    print(f"{'run':<8} {'reads':>8} {'writes':>8} {'stale':>7} {'lost':>7} {'errors':>7}")
    have_dnsmasq = shutil.which("dnsmasq") or os.access("/usr/sbin/dnsmasq", os.X_OK)
    for tag in ["plain", "switch", "dns"]:
        if args.only and tag != args.only:
            continue
        if tag == "dns":
            if not have_dnsmasq:
                print("dns      skipped: dnsmasq is not installed (dnsmasq-base)")
                continue
            book = run_dns(args.binary, tmp, args)
            print(f"{tag:<8} {book.reads:>8} {book.writes:>8} {book.stale:>7} {book.lost:>7} "
                  f"{book.errors:>7}   (a server joined, then left, through DNS)")
            for e in book.examples:
                print(f"         {e}")
            continue
        book, at = run(args.binary, tmp, tag, tag == "switch", args)
        print(f"{tag:<8} {book.reads:>8} {book.writes:>8} {book.stale:>7} {book.lost:>7} "
              f"{book.errors:>7}" + (f"   (switch {at:.1f} s after the start)" if at else ""))
        for e in book.examples:
            print(f"         {e}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
