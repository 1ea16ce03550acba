#!/usr/bin/python3
"""TLS on both sides, end to end: Python's ssl module as the client, memshard
in the middle, real memcached -Z servers behind it. Certificates are made at
run time with the openssl command line (a CA, a second CA, server and client
certificates, an expired one); no key is ever committed.

Run as: tls_test.py MEMSHARD_BINARY [unittest args, e.g. a test name].
Every wait is bounded; every load loop is bounded in count and time."""

import hashlib
import json
import os
import random
import shutil
import signal
import socket
import ssl
import subprocess
import sys
import tempfile
import threading
import time
import unittest

MEMSHARD = None  # set from argv


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_listening(port, limit=10.0):
    end = time.time() + limit
    while time.time() < end:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
            return True
        except OSError:
            time.sleep(0.05)
    return False


def openssl(*args, cwd):
    subprocess.run(["openssl", *args], cwd=cwd, check=True, capture_output=True, timeout=30)


class Certs:
    """A CA signing server and client certificates, and a second CA."""

    def __init__(self, d):
        self.dir = d
        self.ca("ca")
        self.ca("otherca")
        self.sign("server", "ca", "localhost", days=2)
        self.sign("server2", "ca", "localhost", days=3)  # the rotated one
        self.sign("client", "ca", "client", days=2)
        self.sign("stranger", "otherca", "client", days=2)
        self.sign("expired", "ca", "localhost", days=0)  # lapses within the second

    def path(self, name):
        return os.path.join(self.dir, name)

    def ca(self, name):
        openssl("req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
                "-keyout", name + ".key", "-out", name + ".crt", "-days", "2", "-subj",
                "/CN=" + name, cwd=self.dir)

    def sign(self, name, ca, cn, days):
        openssl("req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-keyout",
                name + ".key", "-out", name + ".csr", "-subj", "/CN=" + cn, cwd=self.dir)
        with open(self.path(name + ".ext"), "w") as f:
            f.write("subjectAltName=DNS:localhost,IP:127.0.0.1\n")
        openssl("x509", "-req", "-in", name + ".csr", "-CA", ca + ".crt", "-CAkey", ca + ".key",
                "-CAcreateserial", "-out", name + ".crt", "-days", str(days), "-extfile",
                name + ".ext", cwd=self.dir)


class Memcached:
    def __init__(self, certs, tls=True, extra=(), port=None):
        self.port = port or free_port()
        argv = ["memcached", "-l", "127.0.0.1", "-p", str(self.port), "-U", "0", "-t", "1",
                "-m", "64", "-I", "2m"]
        if os.geteuid() == 0:
            argv += ["-u", "nobody"]
        if tls:
            argv += ["-Z", "-o", "ssl_chain_cert=%s,ssl_key=%s" % (certs.path("server.crt"),
                                                                  certs.path("server.key"))]
        argv += list(extra)
        self.proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                     stderr=subprocess.DEVNULL)
        assert wait_listening(self.port), "memcached did not start"

    def stop(self):
        self.proc.kill()
        self.proc.wait(5)


class Memshard:
    def __init__(self, config, log, stats_port=0):
        self.log = log
        self.proc = subprocess.Popen([MEMSHARD, "-c", config, "-s", str(stats_port), "-v", "6"],
                                     stdin=subprocess.DEVNULL, stdout=open(log, "ab"),
                                     stderr=subprocess.STDOUT)

    def reload(self):
        before = self.log_text().count("reload")
        self.proc.send_signal(signal.SIGHUP)
        end = time.time() + 10
        while time.time() < end:
            text = self.log_text()
            if text.count("reload") > before and ("in force" in text.split("reloading")[-1] or
                                                 "refused" in text.split("reloading")[-1]):
                return text.split("reloading")[-1]
            time.sleep(0.05)
        raise AssertionError("no reload in the log")

    def log_text(self):
        with open(self.log, errors="replace") as f:
            return f.read()

    def stop(self):
        self.proc.terminate()
        try:
            self.proc.wait(5)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(5)


class Client:
    """A blocking TLS (or plain) client with bounded reads."""

    def __init__(self, port, ctx=None, session=None, timeout=5.0):
        raw = socket.create_connection(("127.0.0.1", port), timeout=timeout)
        self.sock = ctx.wrap_socket(raw, server_hostname="localhost",
                                    session=session) if ctx else raw
        self.buf = b""

    def send(self, data):
        self.sock.sendall(data)

    def read_until(self, suffix, limit=5.0):
        end = time.time() + limit
        while not self.buf.endswith(suffix):
            if time.time() > end:
                raise AssertionError("timed out waiting for %r; have %r" % (suffix, self.buf[-200:]))
            chunk = self.sock.recv(1 << 20)
            if not chunk:
                raise AssertionError("closed; have %r" % self.buf[-200:])
            self.buf += chunk
        out, self.buf = self.buf, b""
        return out

    def call(self, request, suffix=b"\r\n"):
        self.send(request)
        return self.read_until(suffix)

    def closed_by_peer(self, limit=5.0):
        """True when the peer closes (EOF, reset or a TLS alert) within limit."""
        self.sock.settimeout(limit)
        try:
            while True:
                if not self.sock.recv(4096):
                    return True
        except socket.timeout:
            return False
        except (ssl.SSLError, ConnectionResetError, BrokenPipeError):
            return True

    def close(self):
        self.sock.close()


def client_ctx(certs, cert=None, ca="ca"):
    ctx = ssl.create_default_context(cafile=certs.path(ca + ".crt"))
    if cert:
        ctx.load_cert_chain(certs.path(cert + ".crt"), certs.path(cert + ".key"))
    return ctx


def stats_json(port):
    with socket.create_connection(("127.0.0.1", port), timeout=5) as s:
        data = b""
        while True:
            chunk = s.recv(65536)
            if not chunk:
                break
            data += chunk
    return json.loads(data)


def metrics(port):
    with socket.create_connection(("127.0.0.1", port), timeout=5) as s:
        s.sendall(b"GET /metrics HTTP/1.0\r\n\r\n")
        data = b""
        while True:
            chunk = s.recv(65536)
            if not chunk:
                break
            data += chunk
    return data.decode()


class TlsBase(unittest.TestCase):
    servers_tls = True
    server_count = 3

    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="memshard-tls-")
        self.certs = Certs(self.dir)
        # The listener's certificate is a copy that a test may replace.
        for ext in ("crt", "key"):
            shutil.copy(self.certs.path("server." + ext), self.certs.path("live." + ext))
        self.servers = [Memcached(self.certs, tls=self.servers_tls)
                        for _ in range(self.server_count)]
        self.port = free_port()
        self.plain_port = free_port()
        self.stats_port = free_port()
        self.ms = None

    def tearDown(self):
        if self.ms:
            self.ms.stop()
            if self._outcome.result.errors or self._outcome.result.failures:
                sys.stderr.write(self.ms.log_text()[-4000:])
        for s in self.servers:
            s.stop()
        shutil.rmtree(self.dir, ignore_errors=True)

    def config(self, tls_extra="", server_extra="", plain_pool=True):
        servers = "".join("    - 127.0.0.1:%d:1\n" % s.port for s in self.servers)
        text = ("secure:\n"
                "  listen: 127.0.0.1:%d\n"
                "  timeout: 2000\n"
                "  item_size_max: 2097152\n"
                "  tls_cert_file: live.crt\n"
                "  tls_key_file: live.key\n"
                "%s"
                "  server_tls: %s\n"
                "%s"
                "  servers:\n%s") % (self.port, tls_extra,
                                      "true" if self.servers_tls else "false",
                                      ("  server_tls_ca_file: ca.crt\n" + server_extra)
                                      if self.servers_tls else "", servers)
        if plain_pool:
            # Another pool, plain, on another address, over the same servers.
            text += ("plain:\n  listen: 127.0.0.1:%d\n  timeout: 2000\n"
                     "  item_size_max: 2097152\n  server_tls: %s\n%s  servers:\n%s") % (
                         self.plain_port, "true" if self.servers_tls else "false",
                         "  server_tls_ca_file: ca.crt\n" if self.servers_tls else "", servers)
        path = os.path.join(self.dir, "memshard.yml")
        with open(path, "w") as f:
            f.write(text)
        return path

    def start(self, **kw):
        self.ms = Memshard(self.config(**kw), os.path.join(self.dir, "memshard.log"),
                           self.stats_port)
        self.assertTrue(wait_listening(self.port), self.ms.log_text())
        wait_listening(self.stats_port)

    def tls_client(self, **kw):
        cert = kw.pop("cert", None)
        return Client(self.port, client_ctx(self.certs, cert), **kw)

    def pool_stat(self, name, pool="secure"):
        return stats_json(self.stats_port)[pool][name]


class Commands(TlsBase):
    def test_every_command_over_tls(self):
        self.start()
        c = self.tls_client()
        self.assertEqual(c.sock.version() in ("TLSv1.2", "TLSv1.3"), True)
        self.assertEqual(c.call(b"set a 5 0 3\r\nabc\r\n"), b"STORED\r\n")
        self.assertEqual(c.call(b"get a\r\n", b"END\r\n"), b"VALUE a 5 3\r\nabc\r\nEND\r\n")
        self.assertEqual(c.call(b"add a 0 0 1\r\nx\r\n"), b"NOT_STORED\r\n")
        self.assertEqual(c.call(b"replace a 0 0 1\r\nx\r\n"), b"STORED\r\n")
        self.assertEqual(c.call(b"append a 0 0 2\r\nyz\r\n"), b"STORED\r\n")
        self.assertEqual(c.call(b"prepend a 0 0 1\r\nw\r\n"), b"STORED\r\n")
        gets = c.call(b"gets a\r\n", b"END\r\n")
        self.assertTrue(gets.startswith(b"VALUE a 0 4 "), gets)
        cas = gets.split(b"\r\n")[0].split(b" ")[4]
        self.assertEqual(c.call(b"cas a 0 0 1 " + cas + b"\r\nq\r\n"), b"STORED\r\n")
        self.assertEqual(c.call(b"cas a 0 0 1 " + cas + b"\r\nq\r\n"), b"EXISTS\r\n")
        self.assertEqual(c.call(b"set n 0 0 2\r\n10\r\n"), b"STORED\r\n")
        self.assertEqual(c.call(b"incr n 5\r\n"), b"15\r\n")
        self.assertEqual(c.call(b"decr n 20\r\n"), b"0\r\n")
        self.assertEqual(c.call(b"touch n 100\r\n"), b"TOUCHED\r\n")
        self.assertEqual(c.call(b"gat 100 n\r\n", b"END\r\n"), b"VALUE n 0 2\r\n0 \r\nEND\r\n")
        self.assertEqual(c.call(b"delete n\r\n"), b"DELETED\r\n")
        self.assertEqual(c.call(b"delete n\r\n"), b"NOT_FOUND\r\n")
        self.assertEqual(c.call(b"set q 0 0 1 noreply\r\nz\r\nmn\r\n"), b"MN\r\n")
        self.assertEqual(c.call(b"ms m 2\r\nhi\r\n"), b"HD\r\n")
        self.assertEqual(c.call(b"mg m v\r\n"), b"VA 2\r\nhi\r\n")
        self.assertEqual(c.call(b"md m\r\n"), b"HD\r\n")
        self.assertEqual(c.call(b"mg m v\r\n"), b"EN\r\n")
        self.assertTrue(c.call(b"version\r\n").startswith(b"VERSION "))
        self.assertEqual(c.call(b"bogus\r\n"), b"ERROR\r\n")
        self.assertEqual(c.call(b"flush_all\r\n"), b"OK\r\n")
        self.assertEqual(c.call(b"get a\r\n", b"END\r\n"), b"END\r\n")
        # The plain pool on its own address reaches the same servers.
        p = Client(self.plain_port)
        self.assertEqual(p.call(b"set pa 0 0 1\r\n1\r\n"), b"STORED\r\n")
        self.assertEqual(c.call(b"get pa\r\n", b"END\r\n"), b"VALUE pa 0 1\r\n1\r\nEND\r\n")
        self.assertGreaterEqual(self.pool_stat("tls_handshakes"), 1)
        self.assertEqual(self.pool_stat("tls_handshakes", "plain"), 0)

    def test_multiget_across_servers_and_large_values(self):
        self.start()
        c = self.tls_client()
        # Keys that spread (fnv1a over sequential names clusters on a ring).
        keys = [hashlib.sha1(b"%d" % i).hexdigest().encode() for i in range(300)]
        # Pipelined in one write, far past one TLS record.
        c.send(b"".join(b"set %s 0 0 %d\r\n%s\r\n" % (k, len(k) * 3, k * 3) for k in keys))
        self.assertEqual(c.read_until(b"STORED\r\n" * len(keys)).count(b"STORED"), len(keys))
        reply = c.call(b"get " + b" ".join(keys) + b"\r\n", b"END\r\n")
        expect = b"".join(b"VALUE %s 0 %d\r\n%s\r\n" % (k, len(k) * 3, k * 3) for k in keys)
        self.assertEqual(reply, expect + b"END\r\n")
        # Every server took part.
        for s in self.servers:
            d = Client(s.port, ssl._create_unverified_context())
            items = int(dict(l.split(b" ")[1:3] for l in
                             d.call(b"stats\r\n", b"END\r\n").split(b"\r\n")
                             if l.startswith(b"STAT "))[b"curr_items"])
            self.assertGreater(items, 0, "server %d got none of the keys" % s.port)
        # 1 MB values, both ways, and one right after another request.
        big = os.urandom(1 << 19).hex().encode()  # 1 MiB of text
        self.assertEqual(c.call(b"set big 0 0 %d\r\n%s\r\n" % (len(big), big)), b"STORED\r\n")
        c.send(b"set big2 0 0 %d\r\n%s\r\nget big big2\r\n" % (len(big), big))
        reply = c.read_until(b"END\r\n", 15)
        self.assertEqual(reply, b"STORED\r\nVALUE big 0 %d\r\n%s\r\nVALUE big2 0 %d\r\n%s\r\nEND\r\n"
                         % (len(big), big, len(big), big))


class MutualTls(TlsBase):
    def test_client_certificates(self):
        self.start(tls_extra="  tls_ca_file: ca.crt\n  tls_verify_client: true\n")
        good = self.tls_client(cert="client")
        self.assertEqual(good.call(b"set k 0 0 1\r\n1\r\n"), b"STORED\r\n")
        refused = 0
        for cert in (None, "stranger"):
            try:
                c = self.tls_client(cert=cert)
                c.send(b"get k\r\n")
                self.assertTrue(c.closed_by_peer(), cert)
                refused += 1
            except (ssl.SSLError, ConnectionResetError, BrokenPipeError):
                refused += 1  # refused in the handshake itself
        self.assertEqual(refused, 2)
        self.assertGreaterEqual(self.pool_stat("tls_fail_certificate"), 2)
        self.assertEqual(good.call(b"get k\r\n", b"END\r\n"), b"VALUE k 0 1\r\n1\r\nEND\r\n")


class BadClients(TlsBase):
    server_count = 1

    def test_plaintext_and_garbage_are_closed_and_counted(self):
        self.start()
        p = Client(self.port)
        p.send(b"get a\r\n")
        self.assertTrue(p.closed_by_peer())
        g = Client(self.port)
        # Garbage, but never by chance a TLS handshake record (0x16 first),
        # which would fail as a handshake does, not as "not TLS".
        g.send(b"\x00" + random.Random(600).randbytes(599))
        self.assertTrue(g.closed_by_peer())
        self.assertGreaterEqual(self.pool_stat("tls_fail_not_tls"), 1)
        self.assertGreaterEqual(self.pool_stat("tls_fail_not_tls") +
                                self.pool_stat("tls_fail_other"), 2)
        # The listener still serves TLS clients.
        c = self.tls_client()
        self.assertTrue(c.call(b"version\r\n").startswith(b"VERSION"))

    def test_stalled_handshake_is_closed_after_the_timeout(self):
        self.start()  # timeout: 2000
        silent = Client(self.port)
        half = Client(self.port)
        half.send(b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03")  # a ClientHello's start
        started = time.time()
        self.assertTrue(silent.closed_by_peer(8))
        self.assertTrue(half.closed_by_peer(8))
        self.assertGreaterEqual(time.time() - started, 1.0)  # not before its time
        self.assertEqual(self.pool_stat("tls_fail_timeout"), 2)
        c = self.tls_client()
        self.assertTrue(c.call(b"version\r\n").startswith(b"VERSION"))

    def test_session_resumption(self):
        self.start()
        ctx = client_ctx(self.certs)
        first = Client(self.port, ctx)
        first.call(b"version\r\n")  # TLS 1.3 tickets arrive after the handshake
        session = first.sock.session
        first.close()
        again = Client(self.port, ctx, session=session)
        self.assertTrue(again.sock.session_reused)
        self.assertTrue(again.call(b"version\r\n").startswith(b"VERSION"))
        self.assertEqual(self.pool_stat("tls_resumed"), 1)

    def test_minimum_version(self):
        self.start(tls_extra="  tls_min_version: 1.3\n")
        ctx = client_ctx(self.certs)
        ctx.maximum_version = ssl.TLSVersion.TLSv1_2
        with self.assertRaises((ssl.SSLError, ConnectionResetError)):
            Client(self.port, ctx).call(b"version\r\n")
        self.assertEqual(self.pool_stat("tls_fail_version"), 1)
        self.assertEqual(self.tls_client().sock.version(), "TLSv1.3")


class ServerSide(TlsBase):
    server_count = 1

    def test_server_not_trusted_fails_requests(self):
        # Verification against a CA that did not sign the servers' certificate.
        self.start(server_extra="")
        with open(self.config(), "r") as f:
            text = f.read()
        with open(os.path.join(self.dir, "memshard.yml"), "w") as f:
            f.write(text.replace("server_tls_ca_file: ca.crt", "server_tls_ca_file: otherca.crt"))
        self.assertIn("in force", self.ms.reload())
        c = self.tls_client()
        reply = c.call(b"get a\r\n")
        self.assertTrue(reply.startswith(b"SERVER_ERROR"), reply)
        servers = stats_json(self.stats_port)["secure"]
        failures = sum(v["tls_failures"] for v in servers.values() if isinstance(v, dict))
        self.assertGreaterEqual(failures, 1)

    def test_name_checked_and_client_certificate_sent(self):
        # memcached that demands a client certificate from our CA.
        self.servers[0].stop()
        self.servers = [Memcached(self.certs, extra=[
            "-o", "ssl_verify_mode=2,ssl_ca_cert=" + self.certs.path("ca.crt")])]
        self.start(server_extra="  server_tls_cert_file: client.crt\n"
                   "  server_tls_key_file: client.key\n  server_tls_name: localhost\n")
        c = self.tls_client()
        self.assertEqual(c.call(b"set a 0 0 1\r\n1\r\n"), b"STORED\r\n")
        # A name the certificate does not carry is refused.
        with open(os.path.join(self.dir, "memshard.yml")) as f:
            text = f.read()
        with open(os.path.join(self.dir, "memshard.yml"), "w") as f:
            f.write(text.replace("server_tls_name: localhost", "server_tls_name: elsewhere"))
        self.assertIn("in force", self.ms.reload())
        # The open connection keeps going; once the server restarts, new
        # connections verify the new name and fail.
        self.assertEqual(c.call(b"get a\r\n", b"END\r\n"), b"VALUE a 0 1\r\n1\r\nEND\r\n")
        port = self.servers[0].port
        self.servers[0].stop()
        self.servers = [Memcached(self.certs, port=port, extra=[
            "-o", "ssl_verify_mode=2,ssl_ca_cert=" + self.certs.path("ca.crt")])]
        end, reply = time.time() + 10, b""
        while time.time() < end and not self.server_tls_failures():
            reply = c.call(b"get a\r\n")
            time.sleep(0.1)
        self.assertTrue(reply.startswith(b"SERVER_ERROR"), reply)
        self.assertGreaterEqual(self.server_tls_failures(), 1)

    def server_tls_failures(self):
        servers = stats_json(self.stats_port)["secure"]
        return sum(v["tls_failures"] for v in servers.values() if isinstance(v, dict))


class Rotation(TlsBase):
    server_count = 2

    def peer_serial(self, c):
        return c.sock.getpeercert()["serialNumber"]

    def test_reload_rotates_under_load_without_client_errors(self):
        self.start()
        before = self.tls_client()
        old_serial = self.peer_serial(before)
        errors, done = [], threading.Event()
        counts = [0] * 4

        def load(i):
            try:
                conn, n = self.tls_client(), 0
                end = time.time() + 20
                while not done.is_set() and n < 5000 and time.time() < end:
                    if n % 50 == 0:  # new handshakes all along
                        conn.close()
                        conn = self.tls_client()
                    key = b"r%d_%d" % (i, n)
                    if conn.call(b"set %s 0 0 4\r\nabcd\r\n" % key) != b"STORED\r\n":
                        errors.append("set")
                    if conn.call(b"get %s\r\n" % key, b"END\r\n") != (
                            b"VALUE %s 0 4\r\nabcd\r\nEND\r\n" % key):
                        errors.append("get")
                    n += 1
                    counts[i] = n
            except Exception as e:  # noqa: BLE001 - any failure is the test's
                errors.append(repr(e))

        threads = [threading.Thread(target=load, args=(i,)) for i in range(4)]
        for t in threads:
            t.start()
        time.sleep(1)
        for ext in ("crt", "key"):
            shutil.copy(self.certs.path("server2." + ext), self.certs.path("live." + ext))
        self.assertIn("in force", self.ms.reload())
        time.sleep(1)
        done.set()
        for t in threads:
            t.join(30)
        self.assertEqual(errors, [])
        self.assertTrue(all(n > 50 for n in counts), counts)
        after = self.tls_client()
        self.assertNotEqual(self.peer_serial(after), old_serial)
        # The connection opened before the rotation keeps going.
        self.assertTrue(before.call(b"version\r\n").startswith(b"VERSION"))

    def test_reload_refuses_expired_or_mismatched_certificates(self):
        self.start()
        serial = self.peer_serial(self.tls_client())
        time.sleep(1.1)  # the expired certificate's one second is over
        shutil.copy(self.certs.path("expired.crt"), self.certs.path("live.crt"))
        shutil.copy(self.certs.path("expired.key"), self.certs.path("live.key"))
        out = self.ms.reload()
        self.assertIn("reload refused", out)
        self.assertIn("memshard.yml:5: tls_cert_file:", out)
        self.assertIn("expired", out)
        # A key that is not the certificate's.
        shutil.copy(self.certs.path("server2.crt"), self.certs.path("live.crt"))
        shutil.copy(self.certs.path("server.key"), self.certs.path("live.key"))
        out = self.ms.reload()
        self.assertIn("memshard.yml:6: tls_key_file:", out)
        self.assertIn("does not match", out)
        # Nothing changed: the old certificate still serves.
        self.assertEqual(self.peer_serial(self.tls_client()), serial)
        self.assertEqual(stats_json(self.stats_port)["config_reload_failures"], 2)


class Metrics(TlsBase):
    server_count = 1

    def test_handshakes_and_certificate_expiry_in_metrics(self):
        self.start()
        self.tls_client().call(b"version\r\n")
        text = metrics(self.stats_port)
        self.assertIn('memshard_pool_tls_handshakes_total{pool="secure"} 1', text)
        self.assertIn('memshard_pool_tls_handshake_failures_total{pool="secure",cause="timeout"} 0',
                      text)
        self.assertIn('memshard_pool_tls_version_total{pool="secure",version="1.3"} 1', text)
        line = [l for l in text.splitlines()
                if l.startswith('memshard_tls_certificate_expiry_seconds{pool="secure",side="client"}')]
        self.assertEqual(len(line), 1, text)
        left = float(line[0].split(" ")[-1])
        self.assertTrue(86400 < left <= 2 * 86400 + 60, left)


if __name__ == "__main__":
    # MEMSHARD_BINARY wins: scripts/test-sanitized runs this against another build.
    MEMSHARD = os.environ.get("MEMSHARD_BINARY") or sys.argv[1]
    sys.argv.pop(1)
    # Sockets and logs a test leaves to the collector are not its subject.
    unittest.main(warnings="ignore")
