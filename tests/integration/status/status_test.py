#!/usr/bin/python3
"""The status page without a browser: the real memshard binary in front of
real memcached servers on 127.0.0.1. /status and / serve one
self-contained HTML page (parsed here: nothing it loads comes from
elsewhere), the JSON it reads agrees with twemproxy's JSON and the config,
the stats token guards every path, bad requests get proper answers,
`memshard top` shows the same numbers, and every metric the Grafana
dashboard queries exists in /metrics.

Run as: status_test.py MEMSHARD_BINARY SOURCE_DIR [unittest args]."""

import html.parser
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import unittest

import status_util as u
from status_util import Memcached, Memshard

SOURCE_DIR = None  # set from argv


class PageParser(html.parser.HTMLParser):
    """Every tag with its attributes, and the inline scripts' text."""

    def __init__(self):
        super().__init__()
        self.tags, self.scripts, self.in_script = [], [], False

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, dict(attrs)))
        if tag == "script":
            self.in_script = True
            self.scripts.append("")

    def handle_endtag(self, tag):
        if tag == "script":
            self.in_script = False

    def handle_data(self, data):
        if self.in_script:
            self.scripts[-1] += data


class Fleet(unittest.TestCase):
    """Three memcached servers and memshard in front of them, pool alpha."""

    directives = ("timeout: 400",)
    extra = ()
    top_level = ""  # lines of the config beside the pool (stats_token)

    @classmethod
    def setUpClass(cls):
        cls.servers = [Memcached() for _ in range(3)]
        cls.port = u.free_port()
        cls.config = u.pool_yaml("alpha", cls.port, [
            (cls.servers[0].address, 1), (cls.servers[1].address, 1),
            (cls.servers[2].address, 2, "gamma")], cls.directives) + cls.top_level
        cls.proxy = Memshard(cls.config, cls.port, cls.extra)

    @classmethod
    def tearDownClass(cls):
        cls.proxy.stop()
        for s in cls.servers:
            s.kill()


class Http(Fleet):
    def test_status_is_one_self_contained_page(self):
        status, headers, body = u.http(self.proxy.stats_port, "/status")
        self.assertEqual(status, 200)
        self.assertEqual(headers["content-type"], "text/html; charset=utf-8")
        self.assertIn("default-src 'none'", headers["content-security-policy"])
        page = PageParser()
        page.feed(body.decode("utf-8"))
        # Nothing is loaded from anywhere: no src, no stylesheet or font
        # link; the only link is the inline (data:) icon.
        for tag, attrs in page.tags:
            self.assertNotIn("src", attrs, tag)
            if tag == "link":
                self.assertEqual(attrs.get("href"), "data:,", attrs)
        text = body.decode("utf-8")
        # The SVG namespace is a name, never fetched.
        outside = set(re.findall(r"(?i)(?:https?:)?//[a-z0-9.-]+\.[a-z]{2,}/[^\s\"')]*", text))
        self.assertEqual(outside - {"http://www.w3.org/2000/svg"}, set())
        self.assertNotIn("@import", text)
        self.assertEqual(len(page.scripts), 1)
        self.assertIn("/status.json", page.scripts[0])
        # Data goes in as text only.
        self.assertNotIn("innerHTML", page.scripts[0])
        self.assertNotIn("eval(", page.scripts[0])
        # Under the budget a page on a stats port should keep to.
        self.assertLess(len(body), 64 * 1024)

    def test_root_is_the_page_for_a_browser_and_json_otherwise(self):
        port = self.proxy.stats_port
        status, headers, body = u.http(port, "/", {"Accept": "text/html,*/*;q=0.8"})
        self.assertEqual((status, headers["content-type"]), (200, "text/html; charset=utf-8"))
        self.assertTrue(body.startswith(b"<!DOCTYPE html>"))
        for accept in (None, "*/*", "application/json"):
            status, headers, body = u.http(port, "/", {"Accept": accept} if accept else {})
            self.assertEqual(headers["content-type"], "application/json", accept)
            self.assertEqual(json.loads(body)["service"], "memshard")
        # A raw reader, nutcracker's way, still gets twemproxy's JSON.
        raw = json.loads(u.raw_read(port))
        self.assertIn("alpha", raw)
        self.assertEqual(json.loads(u.raw_read(port, b"stats\n"))["service"], "memshard")

    def test_status_json_agrees_with_the_config_and_the_stats(self):
        load = u.Load(self.port, clients=2, per_second=400, limit=30)
        load.start()
        try:
            # Hot keys are sampled (1 request in 8, 64 samples at least).
            self.assertTrue(u.wait_until(lambda: u.pool_of(
                u.status_json(self.proxy.stats_port), "alpha")["hot_keys"], limit=20),
                "no hot key")
        finally:
            load.stop()
        doc = u.status_json(self.proxy.stats_port)
        stats = json.loads(u.http(self.proxy.stats_port, "/stats")[2])
        alpha = u.pool_of(doc, "alpha")
        self.assertEqual(alpha["listen"], "127.0.0.1:%d" % self.port)
        self.assertEqual(alpha["requests"], stats["alpha"]["requests"])
        self.assertEqual(alpha["forward_errors"], stats["alpha"]["forward_error"])
        self.assertGreaterEqual(alpha["requests"], load.requests)
        self.assertGreater(alpha["hits"] + alpha["misses"], 0)
        self.assertEqual(sum(alpha["latency"]), alpha["requests"])
        self.assertEqual([s["address"] for s in alpha["servers"]],
                         [s.address for s in self.servers])
        self.assertEqual([s["weight"] for s in alpha["servers"]], [1, 1, 2])
        self.assertEqual(alpha["servers"][2]["name"], "gamma")
        self.assertEqual({s["state"] for s in alpha["servers"]}, {"up"})
        self.assertAlmostEqual(sum(s["share"] for s in alpha["servers"]), 1.0, places=4)
        self.assertGreater(alpha["servers"][2]["share"], alpha["servers"][0]["share"])
        for s in alpha["servers"]:
            name = s["name"]
            self.assertEqual(s["requests"], stats["alpha"][name]["requests"], name)
        self.assertEqual(doc["config"]["generation"], stats["config_generation"])
        self.assertIsNone(doc["config"]["pending_switch"])
        self.assertEqual(doc["config"]["history"][0]["outcome"], "started")
        # On loopback the hot keys are shown; the load's hot key is one.
        self.assertFalse(doc["hot_keys_hidden"])
        self.assertIn("hot", [k["key"] for k in alpha["hot_keys"]])

    def test_bad_requests_get_proper_answers(self):
        port = self.proxy.stats_port
        self.assertEqual(u.http(port, "/nope")[0], 404)
        self.assertEqual(u.http(port, "/status", method="POST")[0], 405)
        status, headers, body = u.http(port, "/status", method="HEAD")
        self.assertEqual((status, body), (200, b""))
        self.assertGreater(int(headers["content-length"]), 1000)
        self.assertEqual(u.http(port, "", raw=b"GET / HTTP/1.1\r\n" + b"X: " + b"a" * 9000)[0], 431)
        self.assertEqual(u.http(port, "", raw=b"GET /\r\n\r\n")[0], 400)
        self.assertEqual(u.http(port, "", raw=b"GET / HTTP/1.1\r\nno colon\r\n\r\n")[0], 400)
        # Still serving after all that.
        self.assertEqual(u.http(port, "/status.json")[0], 200)


class Token(Fleet):
    """--stats-token-file: the token on every path, for top too."""

    @classmethod
    def setUpClass(cls):
        cls.token_dir = tempfile.mkdtemp(prefix="memshard-token-")
        cls.token_file = os.path.join(cls.token_dir, "token")
        with open(cls.token_file, "w") as f:
            f.write("s3cret-token\n")
        cls.extra = ("--stats-token-file", cls.token_file)
        super().setUpClass()

    @classmethod
    def tearDownClass(cls):
        super().tearDownClass()
        shutil.rmtree(cls.token_dir, ignore_errors=True)

    def test_every_path_needs_the_token(self):
        port = self.proxy.stats_port
        good = {"Authorization": "Bearer s3cret-token"}
        for path in ("/", "/status", "/status.json", "/stats", "/metrics"):
            status, headers, body = u.http(port, path, {"Accept": "text/html"})
            self.assertEqual(status, 401, path)
            self.assertIn("Basic", headers["www-authenticate"])
            self.assertNotIn(b"alpha", body)
            self.assertEqual(u.http(port, path, {"Authorization": "Bearer wrong"})[0], 401)
            self.assertEqual(u.http(port, path, good)[0], 200, path)
        # A browser's prompt sends Basic credentials: the token as password.
        basic = {"Authorization": "Basic " + __import__("base64").b64encode(
            b"anyone:s3cret-token").decode()}
        self.assertEqual(u.http(port, "/status", basic)[0], 200)
        # A raw reader cannot give a token: it gets no stats.
        raw = json.loads(u.raw_read(port))
        self.assertIn("error", raw)
        self.assertNotIn("alpha", raw)

    def test_top_reads_with_the_token_and_says_when_it_lacks_it(self):
        args = [u.MEMSHARD, "top", "-s", "127.0.0.1:%d" % self.proxy.stats_port, "--once",
                "-n", "0.2"]
        ok = subprocess.run(args + ["--token-file", self.token_file], capture_output=True,
                            text=True, timeout=30)
        self.assertEqual(ok.returncode, 0, ok.stderr)
        self.assertIn("alpha", ok.stdout)
        refused = subprocess.run(args, capture_output=True, text=True, timeout=30)
        self.assertEqual(refused.returncode, 1)
        self.assertIn("401", refused.stderr)
        self.assertIn("--token-file", refused.stderr)

    def test_a_bad_token_file_stops_the_start(self):
        empty = os.path.join(self.token_dir, "empty")
        open(empty, "w").close()
        r = subprocess.run([u.MEMSHARD, "-c", self.proxy.config, "-s", "0",
                            "--stats-token-file", empty], capture_output=True, text=True,
                           timeout=30)
        self.assertEqual(r.returncode, 1)
        self.assertIn("stats token file", r.stderr)


class ConfigToken(Fleet):
    """The config's stats_token and stats_token_file: in force from the
    start, changed by a reload, kept when a reload cannot read the file."""

    top_level = "stats_token: first-token\n"

    def bearer(self, token):
        return {"Authorization": "Bearer " + token}

    def only(self, token, wrong=()):
        """The stats port takes `token` and refuses none or `wrong` ones."""
        port = self.proxy.stats_port
        for path in ("/status", "/status.json", "/metrics"):
            self.assertEqual(u.http(port, path)[0], 401, path)
            for w in wrong:
                self.assertEqual(u.http(port, path, self.bearer(w))[0], 401, (path, w))
            self.assertEqual(u.http(port, path, self.bearer(token))[0], 200, (path, token))

    def reload(self, config, token):
        """Writes `config`, sends SIGHUP and waits until the reload counters
        move, read with `token`, the one in force after the reload. True when
        the reload was taken."""
        port = self.proxy.stats_port
        before = u.status_json(port, self.bearer(self.token))["config"]
        if config is not None:
            self.proxy.write_config(config)
        self.proxy.proc.send_signal(signal.SIGHUP)
        def moved():
            status, _, body = u.http(port, "/status.json", self.bearer(token))
            if status != 200:
                return False
            c = json.loads(body)["config"]
            return (c["reloads"] + c["reload_failures"] >
                    before["reloads"] + before["reload_failures"]) and c
        after = u.wait_until(moved)
        self.assertTrue(after, "no reload with the token in force:\n" +
                        self.proxy.log_text()[-2000:])
        self.token = token
        return after["reloads"] > before["reloads"]

    def test_a_reload_changes_the_token_and_a_broken_file_keeps_it(self):
        pool = self.config[:-len(self.top_level)]
        self.token = "first-token"
        self.only("first-token")
        self.assertIn("stats port: HTTP requests must carry the stats token, from stats_token "
                      "(%s:" % self.proxy.config, self.proxy.log_text())

        # The token itself, changed in the config.
        self.assertTrue(self.reload(pool + "stats_token: second-token\n", "second-token"))
        self.only("second-token", ["first-token"])
        self.assertIn("stats token, changed, from stats_token", self.proxy.log_text())

        # A file, named relative to the config: its neighbour.
        token_file = os.path.join(self.proxy.dir, "stats.token")
        with open(token_file, "w") as f:
            f.write("third-token\n")
        with_file = pool + "stats_token_file: stats.token\n"
        self.assertTrue(self.reload(with_file, "third-token"))
        self.only("third-token", ["second-token"])
        self.assertIn("from stats_token_file %s" % token_file, self.proxy.log_text())

        # The file changed, the config not: a SIGHUP reads it again.
        with open(token_file, "w") as f:
            f.write("fourth-token\n")
        self.assertTrue(self.reload(None, "fourth-token"))
        self.only("fourth-token", ["third-token"])

        # A broken file: the reload is refused and the token in force stays.
        with open(token_file, "w") as f:
            f.write("two words\n")
        self.assertFalse(self.reload(None, "fourth-token"))
        self.only("fourth-token", ["third-token"])
        last = u.status_json(self.proxy.stats_port, self.bearer("fourth-token"))["config"]
        self.assertEqual(last["reload_failures"], 1)
        self.assertIn("reload refused: %s:%d: stats_token_file:" % (
            self.proxy.config, with_file.count("\n")), self.proxy.log_text())
        self.assertNotIn("two words", self.proxy.log_text())
        # A missing one alike, and `memshard -t` says so too.
        os.unlink(token_file)
        self.assertFalse(self.reload(None, "fourth-token"))
        self.only("fourth-token")
        t = subprocess.run([u.MEMSHARD, "-t", "-c", self.proxy.config], capture_output=True,
                           text=True, timeout=30)
        self.assertEqual(t.returncode, 1)
        self.assertIn("stats_token_file", t.stderr)

        # Neither key: the port asks for no token again.
        self.assertTrue(self.reload(pool, "fourth-token"))  # a token not asked for is ignored
        self.assertEqual(u.http(self.proxy.stats_port, "/status")[0], 200)
        self.assertIn("stats port: now no stats token", self.proxy.log_text())

    def test_the_flag_overrides_the_config(self):
        with tempfile.TemporaryDirectory(prefix="memshard-token-") as d:
            flag_file = os.path.join(d, "token")
            with open(flag_file, "w") as f:
                f.write("flag-token\n")
            port = u.free_port()
            other = Memshard(self.config.replace("127.0.0.1:%d" % self.port,
                                                 "127.0.0.1:%d" % port, 1), port,
                             ("--stats-token-file", flag_file))
            try:
                for path in ("/status.json", "/metrics"):
                    self.assertEqual(u.http(other.stats_port, path)[0], 401)
                    self.assertEqual(u.http(other.stats_port, path,
                                            self.bearer("first-token"))[0], 401)
                    self.assertEqual(u.http(other.stats_port, path,
                                            self.bearer("flag-token"))[0], 200)
            finally:
                other.stop()


class Switch(Fleet):
    """A reload whose new server waits for its reload_switch_at."""

    # md5, not the default fnv1a_64: Load's keys ("key:0" .. "key:499")
    # cluster under fnv1a_64, and with some ports none of them lands on the
    # fourth server (the test then failed about one run in ten).
    directives = ("timeout: 400", "reload_warmup: 60000", "hash: md5")

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.fourth = Memcached()

    @classmethod
    def tearDownClass(cls):
        super().tearDownClass()
        cls.fourth.kill()

    def test_a_server_waiting_for_its_switch_is_joining_not_draining(self):
        at = int(time.time()) + 3600
        servers = [(s.address, 1) for s in self.servers] + [(self.fourth.address, 1)]
        config = u.pool_yaml("alpha", self.port, servers,
                             self.directives + ("reload_switch_at: %d" % at,))
        self.assertTrue(self.proxy.reload(config), self.proxy.log_text()[-2000:])
        # Until the switch, writes delete their keys on the new server too:
        # it has connections and counters, though no share yet.
        load = u.Load(self.port, clients=2, per_second=200, limit=30)
        load.start()
        try:
            self.assertTrue(u.wait_until(lambda: u.server_of(u.pool_of(
                u.status_json(self.proxy.stats_port), "alpha"), self.fourth.address)["requests"] > 0,
                limit=10), "no request reached the waiting server")
        finally:
            load.stop()
        doc = u.status_json(self.proxy.stats_port)
        self.assertEqual(doc["config"]["pending_switch"]["alpha"]["at"], at)
        alpha = u.pool_of(doc, "alpha")
        self.assertEqual([s["address"] for s in alpha["servers"]],
                         [s[0] for s in servers])
        fourth = u.server_of(alpha, self.fourth.address)
        self.assertEqual(fourth["state"], "joining")
        self.assertEqual(fourth["share"], 0)
        self.assertEqual(fourth["weight"], 1)
        self.assertEqual({s["state"] for s in alpha["servers"][:3]}, {"up"})
        self.assertAlmostEqual(sum(s["share"] for s in alpha["servers"]), 1.0, places=4)


class Routes(Fleet):
    """A reload with a pool that only routes to another."""

    def test_the_reload_history_gives_no_keyspace_move_for_a_routing_pool(self):
        front = u.free_port()
        config = self.config + "front:\n  listen: 127.0.0.1:%d\n  routes:\n    - pool: alpha\n" % front
        # Added by the first reload, and in both configs of the second.
        for _ in range(2):
            self.assertTrue(self.proxy.reload(config), self.proxy.log_text()[-2000:])
        last = u.status_json(self.proxy.stats_port)["config"]["history"][-1]
        self.assertEqual(last["outcome"], "applied")
        self.assertEqual(last["moved"], {"alpha": 0}, "a routing pool moves no keys")


class Top(Fleet):
    def test_once_prints_one_plain_frame_with_the_pool_and_its_servers(self):
        r = subprocess.run([u.MEMSHARD, "top", "-s", "127.0.0.1:%d" % self.proxy.stats_port,
                            "--once", "-n", "0.2"], capture_output=True, text=True, timeout=30)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertNotIn("\x1b", r.stdout)
        self.assertIn("generation 1 ", r.stdout)
        self.assertRegex(r.stdout, r"(?m)^alpha +127\.0\.0\.1:%d " % self.port)
        for s in self.servers:
            self.assertRegex(r.stdout, r"(?m)^  %s +up " % re.escape(s.address))
        self.assertIn("last reload: started", r.stdout)

    def test_not_a_terminal_means_one_plain_frame_per_refresh(self):
        p = subprocess.Popen([u.MEMSHARD, "top", "-s", "127.0.0.1:%d" % self.proxy.stats_port,
                              "-n", "0.1"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             text=True)
        try:
            frames = []
            def three():
                frames.append(p.stdout.readline())
                return sum(1 for line in frames if line.startswith("memshard ")) >= 3
            self.assertTrue(u.wait_until(three, limit=20, step=0))
        finally:
            p.terminate()
            p.wait(10)
        self.assertEqual(p.returncode, 0)
        self.assertNotIn("\x1b", "".join(frames))

    def test_an_unreachable_instance_is_an_error(self):
        r = subprocess.run([u.MEMSHARD, "top", "-s", "127.0.0.1:%d" % u.free_port(), "--once"],
                           capture_output=True, text=True, timeout=30)
        self.assertEqual(r.returncode, 1)
        self.assertIn("cannot connect", r.stderr)


class Dashboard(Fleet):
    def test_every_metric_the_dashboard_queries_is_served(self):
        with open(os.path.join(SOURCE_DIR, "packaging/grafana/memshard.json")) as f:
            dashboard = json.load(f)
        queries = []
        def walk(node):
            if isinstance(node, dict):
                for k, v in node.items():
                    if k in ("expr", "definition") and isinstance(v, str):
                        queries.append(v)
                    walk(v)
            elif isinstance(node, list):
                for v in node:
                    walk(v)
        walk(dashboard)
        self.assertGreater(len(queries), 20)
        used = {m for q in queries for m in re.findall(r"\bmemshard_[a-z0-9_]+", q)}
        status, _, body = u.http(self.proxy.stats_port, "/metrics")
        self.assertEqual(status, 200)
        served = set()
        for line in body.decode().splitlines():
            m = re.match(r"# TYPE (\S+) (\S+)", line)
            if m:
                served.add(m.group(1))
                if m.group(2) == "histogram":
                    served |= {m.group(1) + s for s in ("_bucket", "_sum", "_count")}
            elif line and not line.startswith("#"):
                served.add(re.match(r"[a-zA-Z_:][a-zA-Z0-9_:]*", line).group(0))
        self.assertEqual(sorted(used - served), [], "queried but not in /metrics")
        self.assertGreater(len(used), 20)

    def test_every_query_is_valid_promql(self):
        if shutil.which("promtool") is None:
            self.skipTest("promtool is not installed (Debian package prometheus)")
        with open(os.path.join(SOURCE_DIR, "packaging/grafana/memshard.json")) as f:
            text = f.read()
        exprs = re.findall(r'"expr": ("(?:[^"\\]|\\.)*")', text)
        rules = {"groups": [{"name": "dashboard", "rules": [
            {"record": "dashboard:query%d" % i,
             "expr": json.loads(e).replace("$__rate_interval", "5m").replace("$instance", ".*")
                                 .replace("$pool", ".*")}
            for i, e in enumerate(exprs)]}]}
        with tempfile.NamedTemporaryFile("w", suffix=".yml", delete=False) as f:
            json.dump(rules, f)  # JSON is YAML
        try:
            r = subprocess.run(["promtool", "check", "rules", f.name], capture_output=True,
                               text=True, timeout=60)
        finally:
            os.unlink(f.name)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)


if __name__ == "__main__":
    # MEMSHARD_BINARY wins: scripts/test-sanitized runs this against another build.
    u.MEMSHARD = os.environ.get("MEMSHARD_BINARY") or sys.argv[1]
    SOURCE_DIR = sys.argv[2]
    unittest.main(argv=[sys.argv[0]] + sys.argv[3:])
