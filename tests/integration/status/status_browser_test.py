#!/usr/bin/python3
"""The status page in a real browser: Debian's headless Chromium driven by
chromedriver (python3-selenium), the real memshard binary, real memcached
servers on 127.0.0.1, light load through it. One browser session for every
check, in order: the page loads with no console error; the numbers shown
are the JSON's; a killed server shows as ejected within 2 s of its
ejection; a refused reload shows; a reload (SIGHUP) that adds a pool shows
it, and the page keeps working.

Run as: status_browser_test.py MEMSHARD_BINARY [unittest args]. Exits 77
(skipped) when chromium, chromedriver or selenium is missing. With
MEMSHARD_STATUS_SCREENSHOT=path, the last check saves a screenshot there
(docs/status-page.png is scripts/screenshot's, from a demo with load)."""

import os
import shutil
import sys
import tempfile
import time
import unittest

import status_util as u
from status_util import Memcached, Memshard

CHROMIUM, CHROMEDRIVER = "/usr/bin/chromium", "/usr/bin/chromedriver"
try:
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service
    from selenium.webdriver.common.by import By
except ImportError:
    webdriver = None


def browser_missing():
    if webdriver is None:
        return "python3-selenium is not installed"
    for path in (CHROMIUM, CHROMEDRIVER):
        if not os.access(path, os.X_OK):
            return path + " is not installed"
    return None


def start_browser(profile):
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    # No outside network here: without these Chromium stalls on refused
    # connections (updates, sync, field trials).
    for flag in ("--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
                 "--no-first-run", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync",
                 "--user-data-dir=" + profile, "--window-size=1280,1500"):
        options.add_argument(flag)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(service=Service(CHROMEDRIVER), options=options)
    driver.set_page_load_timeout(30)
    driver.set_script_timeout(10)
    return driver


class Browser(unittest.TestCase):
    """Checks run in name order on one page of one session."""

    @classmethod
    def setUpClass(cls):
        cls.servers = [Memcached() for _ in range(3)]
        cls.port = u.free_port()
        cls.directives = ("timeout: 300", "auto_eject_hosts: true", "server_failure_limit: 1",
                          "server_retry_timeout: 60000")
        cls.alpha = u.pool_yaml("alpha", cls.port, [
            (cls.servers[0].address, 1), (cls.servers[1].address, 1),
            (cls.servers[2].address, 2, "gamma")], cls.directives)
        cls.proxy = Memshard(cls.alpha, cls.port)
        cls.load = u.Load(cls.port, clients=2, per_second=150, limit=150)
        cls.load.start()
        cls.profile = tempfile.mkdtemp(prefix="memshard-chromium-")
        cls.driver = start_browser(cls.profile)
        cls.driver.get("http://127.0.0.1:%d/status" % cls.proxy.stats_port)

    @classmethod
    def tearDownClass(cls):
        cls.driver.quit()
        cls.load.stop()
        cls.proxy.stop()
        for s in cls.servers:
            s.kill()
        shutil.rmtree(cls.profile, ignore_errors=True)

    # --- reading the page ---------------------------------------------------

    def page(self, script, *args):
        return self.driver.execute_script(script, *args)

    def shown(self, selector):
        """textContent of every element matching a CSS selector."""
        return self.page("return [...document.querySelectorAll(arguments[0])]"
                         ".map(e => e.textContent)", selector)

    def wait_shown(self, pred, limit=10.0, what=""):
        got = u.wait_until(pred, limit=limit, step=0.05)
        self.assertTrue(got, "the page did not show %s within %.0f s" % (what, limit))
        return got

    def console_errors(self):
        return [e for e in self.driver.get_log("browser") if e["level"] in ("SEVERE", "ERROR")]

    def doc(self):
        return u.status_json(self.proxy.stats_port)

    # --- the checks, in order ----------------------------------------------

    def test_1_loads_without_console_errors(self):
        self.wait_shown(lambda: self.shown("#live")[0].startswith("updated"), what="data")
        # Two refreshes: rates are shown from the second on.
        self.wait_shown(lambda: self.shown('#pools tr[data-pool="alpha"] [data-field="rps"]')
                        [0] not in ("", "–"), what="a request rate")
        self.assertEqual(self.page("return document.title"), "memshard status")
        self.assertEqual(self.console_errors(), [])

    def test_2_numbers_match_the_json(self):
        # Fields that hold still while the load runs; read until a refresh
        # lands between the two reads no more.
        def same():
            doc = self.doc()
            alpha = u.pool_of(doc, "alpha")
            page = {
                "generation": self.shown("#generation")[0],
                "clients": self.shown('#pools tr[data-pool="alpha"] [data-field="clients"]')[0],
                "listen": self.shown('#pools tr[data-pool="alpha"] [data-field="listen"]')[0],
                "reloads": self.shown('#config [data-field="reloads"]')[0],
                "switch": self.shown('#config [data-field="pending_switch"]')[0],
            }
            want = {"generation": str(doc["config"]["generation"]),
                    "clients": str(alpha["client_connections"]),
                    "listen": alpha["listen"], "reloads": str(doc["config"]["reloads"]),
                    "switch": "none"}
            for s in alpha["servers"]:
                row = 'tr[data-server="%s"]' % s["address"]
                page[s["address"]] = (self.shown(row + ' [data-field="state"]')[0],
                                      self.shown(row + ' [data-field="weight"]')[0],
                                      self.shown(row + ' [data-field="share"]')[0],
                                      self.shown(row + ' [data-field="shed"]')[0])
                want[s["address"]] = (s["state"], str(s["weight"]),
                                      "%.1f%%" % (100 * s["share"]), str(s["requests_shed"]))
            return page == want or (page, want)
        result = u.wait_until(lambda: same() is True, limit=10)
        self.assertTrue(result, same())
        self.assertEqual(self.shown('#pools tr[data-pool="alpha"] [data-field="clients"]')[0], "2")
        # The load's hot key, shown on loopback.
        self.wait_shown(lambda: "hot" in self.shown("#hotkeys td"), what="the hot key")

    def test_3_killed_server_shows_ejected_within_2_s(self):
        victim = self.servers[2]
        victim.kill()
        # The load's next request for it fails, and auto_eject_hosts takes
        # it out (server_failure_limit: 1). ejected_at is when.
        def ejected_at():
            s = u.server_of(u.pool_of(self.doc(), "alpha"), victim.address)
            return s["ejected_at"] if s["state"] in ("ejected", "probing") else 0
        at = u.wait_until(ejected_at, limit=15)
        self.assertTrue(at, "memshard did not eject the killed server")
        row = 'tr[data-server="%s"]' % victim.address
        self.wait_shown(lambda: self.shown(row + ' [data-field="state"]')[0] in
                        ("ejected", "probing"), limit=5, what="the ejection")
        seen = time.time()
        self.assertLessEqual(seen - at / 1e6, 2.0, "shown %.2f s after the ejection" %
                             (seen - at / 1e6))
        self.assertIn("ejected", self.page("return document.querySelector(arguments[0]).className",
                                           row))
        self.assertTrue(any("server %s ejected" % victim.address in a
                            for a in self.shown("#alerts div")))

    def test_4_refused_reload_shows(self):
        broken = self.alpha.replace("listen: 127.0.0.1:", "listen: 127.0.0.1:99")
        self.assertFalse(self.proxy.reload(broken), "the broken config was taken")
        self.wait_shown(lambda: any(a.startswith("reload refused at ")
                                    for a in self.shown("#alerts div")), what="the refusal")
        self.wait_shown(lambda: self.shown('#reloads tr[data-outcome="refused"]'),
                        what="the refused reload in the history")
        self.assertEqual(self.shown('#config [data-field="reload_failures"]')[0], "1")

    def test_5_reload_adding_a_pool_keeps_the_page_working(self):
        beta_port = u.free_port()
        config = self.alpha + u.pool_yaml("beta", beta_port, [(self.servers[0].address, 1),
                                                              (self.servers[1].address, 1)])
        self.assertTrue(self.proxy.reload(config), self.proxy.log_text()[-2000:])
        beta_load = u.Load(beta_port, clients=1, per_second=100, limit=30)
        beta_load.start()
        try:
            self.wait_shown(lambda: self.shown('#pools tr[data-pool="beta"]'), what="pool beta")
            self.wait_shown(lambda: self.shown("#generation")[0] == "2", what="generation 2")
            self.wait_shown(lambda: len(self.shown('tr[data-pool="beta"][data-server]')) == 2,
                            what="beta's servers")
            self.wait_shown(lambda: self.shown('#pools tr[data-pool="beta"] [data-field="rps"]')
                            [0] not in ("", "–"), what="beta's request rate")
            # The alerts of before still stand: the ejected server.
            self.assertTrue(any("ejected" in a for a in self.shown("#alerts div")))
            self.assertEqual(self.shown("#live")[0][:7], "updated")
            self.assertEqual(self.console_errors(), [])
            screenshot = os.environ.get("MEMSHARD_STATUS_SCREENSHOT")
            if screenshot:
                time.sleep(3)  # a few more points on the charts
                self.driver.save_screenshot(screenshot)
        finally:
            beta_load.stop()

    def test_6_with_a_token_the_browser_gives_it_as_a_password(self):
        token_file = os.path.join(self.profile, "stats-token")
        with open(token_file, "w") as f:
            f.write("tok-%d\n" % os.getpid())
        port = u.free_port()
        guarded = Memshard(u.pool_yaml("alpha", port, [(self.servers[0].address, 1)]), port,
                           ("--stats-token-file", token_file))
        try:
            # What a browser's login prompt sends: Basic credentials, which
            # the page's own reads of /status.json carry as well.
            self.driver.get("http://anyone:tok-%d@127.0.0.1:%d/status" %
                            (os.getpid(), guarded.stats_port))
            self.wait_shown(lambda: self.shown("#live")[0].startswith("updated"),
                            what="data read with the token")
            self.assertEqual(self.shown('#pools tr[data-pool="alpha"] td')[0], "alpha")
            self.assertEqual(self.console_errors(), [])
        finally:
            guarded.stop()

    def test_7_a_routing_pools_routes_show_under_it(self):
        self.driver.get("http://127.0.0.1:%d/status" % self.proxy.stats_port)
        beta_port, front_port = u.free_port(), u.free_port()
        config = (self.alpha +
                  u.pool_yaml("beta", beta_port, [(self.servers[0].address, 1)]) +
                  "front:\n  listen: 127.0.0.1:%d\n  routes:\n"
                  "    - prefix: \"no-such-prefix:\"\n      pool: alpha\n"
                  "    - pool: beta\n" % front_port)
        self.assertTrue(self.proxy.reload(config), self.proxy.log_text()[-2000:])
        load = u.Load(front_port, clients=1, per_second=100, limit=30)
        load.start()
        try:
            default = '#pools tr[data-route-of="front"][data-route="(default)"]'
            self.wait_shown(lambda: self.shown(default), what="front's default route")
            self.wait_shown(lambda: self.shown(default + ' [data-field="rps"]')[0]
                            not in ("", "\u2013"), what="the default route's request rate")
            self.assertEqual(len(self.shown('#pools tr[data-route-of="front"]')), 2)
            self.assertEqual(self.console_errors(), [])
        finally:
            load.stop()


if __name__ == "__main__":
    why = browser_missing()
    if why:
        print("skipped: " + why)
        sys.exit(77)
    # MEMSHARD_BINARY wins: scripts/test-sanitized runs this against another build.
    u.MEMSHARD = os.environ.get("MEMSHARD_BINARY") or sys.argv[1]
    unittest.main(argv=[sys.argv[0]] + sys.argv[2:])
