"""Helpers of the status page tests: real memcached servers and the real
memshard binary on 127.0.0.1 ports chosen at run time, a config written
for them, plain HTTP and raw reads of the stats port, and a bounded load.
Every wait is bounded; every load loop stops by itself."""

import json
import os
import random
import signal
import socket
import subprocess
import tempfile
import threading
import time

MEMSHARD = None  # set by the test scripts from argv


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_until(pred, limit=10.0, step=0.02):
    """Polls pred until it returns something true or `limit` seconds pass."""
    end = time.time() + limit
    while True:
        got = pred()
        if got or time.time() > end:
            return got
        time.sleep(step)


def listening(port):
    try:
        socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
        return True
    except OSError:
        return False


class Memcached:
    def __init__(self):
        self.port = free_port()
        argv = ["memcached", "-l", "127.0.0.1", "-p", str(self.port), "-U", "0", "-t", "1",
                "-m", "16"]
        if os.geteuid() == 0:
            argv += ["-u", "nobody"]
        self.proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                     stderr=subprocess.DEVNULL)
        assert wait_until(lambda: listening(self.port)), "memcached did not start"

    @property
    def address(self):
        return "127.0.0.1:%d" % self.port

    def kill(self):
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(5)


def pool_yaml(name, port, servers, directives=()):
    """One pool of nutcracker.yml: servers are (address, weight[, name])."""
    lines = ["%s:" % name, "  listen: 127.0.0.1:%d" % port]
    lines += ["  %s" % d for d in directives]
    lines.append("  servers:")
    for s in servers:
        lines.append("   - %s:%d%s" % (s[0], s[1], " " + s[2] if len(s) > 2 else ""))
    return "\n".join(lines) + "\n"


class Memshard:
    """memshard on a config in its own directory, stats on a free port."""

    def __init__(self, config_text, listen_port, extra=(), stats_addr="127.0.0.1"):
        self.dir = tempfile.mkdtemp(prefix="memshard-status-")
        self.config = os.path.join(self.dir, "memshard.yml")
        self.log = os.path.join(self.dir, "memshard.log")
        self.write_config(config_text)
        self.stats_port = free_port()
        self.proc = subprocess.Popen(
            [MEMSHARD, "-c", self.config, "-s", str(self.stats_port), "-a", stats_addr,
             "--threads", "2", "-v", "6", *extra],
            stdin=subprocess.DEVNULL, stdout=open(self.log, "ab"), stderr=subprocess.STDOUT)
        ok = wait_until(lambda: self.proc.poll() is not None or
                        (listening(listen_port) and listening(self.stats_port)))
        assert ok and self.proc.poll() is None, "memshard did not start:\n" + self.log_text()

    def write_config(self, text):
        tmp = self.config + ".tmp"
        with open(tmp, "w") as f:
            f.write(text)
        os.rename(tmp, self.config)

    def log_text(self):
        with open(self.log, errors="replace") as f:
            return f.read()

    def reload(self, text):
        """Writes the config, sends SIGHUP, and returns once memshard said
        whether it took it (its reload counters in /status.json move)."""
        before = status_json(self.stats_port)["config"]
        self.write_config(text)
        self.proc.send_signal(signal.SIGHUP)
        def moved():
            c = status_json(self.stats_port)["config"]
            return (c["reloads"] + c["reload_failures"] >
                    before["reloads"] + before["reload_failures"]) and c
        after = wait_until(moved)
        assert after, "no reload within the deadline:\n" + self.log_text()[-2000:]
        return after["reloads"] > before["reloads"]

    def stop(self):
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(5)
        subprocess.run(["rm", "-rf", self.dir], check=False)


def http(port, path, headers=None, method="GET", raw=None, limit=5.0):
    """(status, {lower-cased header: value}, body bytes) of one request."""
    with socket.create_connection(("127.0.0.1", port), timeout=limit) as s:
        if raw is None:
            lines = ["%s %s HTTP/1.1" % (method, path), "Host: 127.0.0.1:%d" % port]
            lines += ["%s: %s" % kv for kv in (headers or {}).items()]
            raw = ("\r\n".join(lines) + "\r\n\r\n").encode()
        s.sendall(raw)
        # As a browser or curl: read the head and Content-Length bytes of
        # body (or to the close), then close.
        data = read_to_close(s, limit, whole_answer if method != "HEAD" else head_only)
    head, _, body = data.partition(b"\r\n\r\n")
    status_line, *header_lines = head.decode("latin-1").split("\r\n")
    parsed = {}
    for line in header_lines:
        name, _, value = line.partition(":")
        parsed[name.strip().lower()] = value.strip()
    status = int(status_line.split(" ")[1]) if status_line.startswith("HTTP/1.1 ") else 0
    if "content-length" in parsed and method != "HEAD":
        assert len(body) == int(parsed["content-length"]), "short body"
    return status, parsed, body


def head_only(data):
    return b"\r\n\r\n" in data


def whole_answer(data):
    head, sep, body = data.partition(b"\r\n\r\n")
    for line in head.split(b"\r\n"):
        name, _, value = line.partition(b":")
        if sep and name.strip().lower() == b"content-length":
            return len(body) >= int(value)
    return False


def read_to_close(s, limit, complete=lambda data: False):
    end, data = time.time() + limit, b""
    while time.time() < end:
        if complete(data):
            return data
        s.settimeout(max(0.01, end - time.time()))
        try:
            chunk = s.recv(1 << 20)
        except socket.timeout:
            break
        if not chunk:
            return data
        data += chunk
    raise AssertionError("the stats port did not close within %.1f s: %r" % (limit, data[:200]))


def raw_read(port, send=b"", limit=5.0):
    """Twemproxy's way: connect, send `send` (or nothing), half-close, read."""
    with socket.create_connection(("127.0.0.1", port), timeout=limit) as s:
        if send:
            s.sendall(send)
        s.shutdown(socket.SHUT_WR)
        return read_to_close(s, limit)


def status_json(port, headers=None):
    status, _, body = http(port, "/status.json", headers)
    assert status == 200, "status %d: %r" % (status, body[:200])
    return json.loads(body)


def pool_of(doc, name):
    return next(p for p in doc["pools"] if p["name"] == name)


def server_of(pool, address):
    return next(s for s in pool["servers"] if s["address"] == address)


class Load(threading.Thread):
    """`clients` connections sending sets and gets of random keys (and one
    hot key) through a pool until stopped or `limit` seconds pass, at most
    `per_second` requests a second each. Errors from a dead server are
    expected and ignored; a connection that fails is opened again."""

    def __init__(self, port, clients=2, per_second=100, limit=120.0):
        super().__init__(daemon=True)
        self.port, self.clients, self.per_second, self.limit = port, clients, per_second, limit
        self.stopping = threading.Event()
        self.requests = 0

    def stop(self):
        self.stopping.set()
        self.join(10)

    def run(self):
        end = time.time() + self.limit
        socks = [None] * self.clients
        rnd = random.Random(40)
        while not self.stopping.is_set() and time.time() < end:
            started = time.time()
            for i in range(self.clients):
                try:
                    if socks[i] is None:
                        socks[i] = socket.create_connection(("127.0.0.1", self.port), timeout=2)
                    key = "hot" if rnd.random() < 0.3 else "key:%d" % rnd.randrange(500)
                    if rnd.random() < 0.2:
                        socks[i].sendall(b"set %s 0 0 5\r\nvalue\r\n" % key.encode())
                    else:
                        socks[i].sendall(b"get %s\r\n" % key.encode())
                    reply = b""
                    while not reply.endswith(b"\r\n") or not (
                            reply.endswith(b"END\r\n") or reply.startswith((b"STORED", b"SERVER",
                                                                            b"NOT_", b"ERROR",
                                                                            b"CLIENT"))):
                        chunk = socks[i].recv(65536)
                        if not chunk:
                            raise OSError("closed")
                        reply += chunk
                    self.requests += 1
                except OSError:
                    if socks[i] is not None:
                        socks[i].close()
                    socks[i] = None
            time.sleep(max(0.0, 1.0 / self.per_second - (time.time() - started)))
        for s in socks:
            if s is not None:
                s.close()
