"""interleave.py: the order of its slices, the ratios it reads off them, and
its slicing of real load processes against real memcached servers."""
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import interleave  # noqa: E402
from fleet_switch import free_port, wait_port  # noqa: E402


# A load process: sets, one after another, for at most 60 s (bounded even
# when the test dies without killing it).
LOAD = """
import socket, sys, time
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])))
end = time.monotonic() + 60
while time.monotonic() < end:
    s.sendall(b"set k 0 0 1\\r\\nv\\r\\n")
    buf = b""
    while not buf.endswith(b"\\r\\n"):
        buf += s.recv(64)
"""


class Order(unittest.TestCase):
    def test_each_target_leads_a_cycle_in_turn(self):
        self.assertEqual(interleave.visit_order(3, 0), [0, 1, 2])
        self.assertEqual(interleave.visit_order(3, 1), [1, 2, 0])
        self.assertEqual(interleave.visit_order(3, 2), [2, 0, 1])
        self.assertEqual(interleave.visit_order(3, 3), [0, 1, 2])
        firsts = [interleave.visit_order(3, c)[0] for c in range(6)]
        self.assertEqual(sorted(firsts), [0, 0, 1, 1, 2, 2])


class Ratios(unittest.TestCase):
    def test_a_drift_both_share_cancels_cycle_by_cycle(self):
        # The machine's speed swings by a half between cycles; the default
        # is 4% slower than the fixed setting in each.
        drift = [1.0, 1.5, 0.7, 1.2, 0.9, 1.4]
        fixed = [100_000 * d for d in drift]
        default = [0.96 * x for x in fixed]
        p = interleave.paired(default, fixed)
        self.assertAlmostEqual(p["geomean"], 0.96, places=6)
        self.assertAlmostEqual(p["low"], 0.96, places=6)
        self.assertAlmostEqual(p["high"], 0.96, places=6)
        self.assertEqual(p["runs"], 6)

    def test_noise_widens_the_interval_around_the_ratio(self):
        fixed = [100.0, 100.0, 100.0, 100.0]
        default = [90.0, 110.0, 95.0, 105.0]
        p = interleave.paired(default, fixed)
        self.assertLess(p["low"], p["geomean"])
        self.assertGreater(p["high"], p["geomean"])
        self.assertAlmostEqual(p["geomean"], 0.99, delta=0.01)

    def test_one_cycle_or_an_empty_slice_reads_nothing(self):
        self.assertIsNone(interleave.paired([100.0], [90.0]))
        self.assertIsNone(interleave.paired([100.0, 0.0], [90.0, 80.0]))


def line(label, window, default, one, two):
    return {"label": label, "slices": len(default), "slice": 0.6, "settle": 0.15,
            "targets": ["memshard", "memshard-1t", "memshard-2t"], "window": window,
            "rates": {"memshard": default, "memshard-1t": one, "memshard-2t": two}}


class Summary(unittest.TestCase):
    def test_against_the_faster_fixed_setting_at_the_count_it_ran(self):
        lines = [
            # Two workers faster: the default at two, 2% under them.
            line("(a)", [100.0, 200.0], [98.0, 98.0, 98.0], [80.0, 80.0, 80.0], [100.0, 100.0, 100.0]),
            # One worker faster; the default's count changed within the slices.
            line("(c)", [300.0, 400.0], [88.0, 88.0, 88.0], [100.0, 100.0, 100.0], [70.0, 70.0, 70.0]),
        ]
        log_changes = [(50.0, 2), (350.0, 1)]
        per_load, g = interleave.summary(lines, log_changes)
        self.assertEqual([x[0] for x in per_load], ["(a)", "(c)"])
        self.assertAlmostEqual(per_load[0][1], 0.98, places=6)
        self.assertEqual(per_load[0][4], 2)
        self.assertAlmostEqual(per_load[1][1], 0.88, places=6)
        self.assertIsNone(per_load[1][4])
        self.assertAlmostEqual(g, (0.98 * 0.88) ** 0.5, places=6)
        self.assertEqual(interleave.best_fixed(lines[0]), "memshard-2t")
        self.assertEqual(interleave.best_fixed(lines[1]), "memshard-1t")

    def test_the_summary_command_prints_each_load_and_the_pool(self):
        tmp = tempfile.mkdtemp()
        self.addCleanup(shutil.rmtree, tmp)
        path = os.path.join(tmp, "interleave.jsonl")
        with open(path, "w") as f:
            f.write(json.dumps(line("(a)", None, [98.0, 99.0], [80.0, 81.0], [100.0, 100.0])) + "\n")
        out = subprocess.run([sys.executable, interleave.__file__, "summary", path],
                             capture_output=True, text=True, check=True).stdout
        self.assertIn("memshard over memshard-2t: 0.985x", out)
        self.assertIn("all 1 loads: geometric mean 0.985x", out)


class Passes(unittest.TestCase):
    def test_each_load_pass_by_pass_and_pooled_over_the_passes(self):
        first = [("(a)", 0.98, 0.95, 1.01, 2), ("(d)", 0.92, 0.90, 0.94, 1)]
        second = [("(a)", 1.02, 0.99, 1.05, 1), ("(e)", 1.0, 0.98, 1.02, None)]
        rows = interleave.passes([first, second])
        self.assertEqual([r[0] for r in rows], ["(a)", "(d)", "(e)"])
        label, ratios, workers, pooled = rows[0]
        self.assertEqual(ratios, [0.98, 1.02])
        self.assertEqual(workers, [2, 1])
        self.assertAlmostEqual(pooled["geomean"], (0.98 * 1.02) ** 0.5, places=6)
        self.assertLess(pooled["low"], pooled["geomean"])
        # A load one pass lacks: no pool from one pass.
        self.assertEqual(rows[1][1], [0.92, None])
        self.assertIsNone(rows[1][3])
        self.assertEqual(rows[2][1], [None, 1.0])

    def test_the_passes_command_reads_each_out_directory(self):
        dirs = []
        for default in ([98.0, 99.0], [90.0, 91.0]):
            d = tempfile.mkdtemp()
            self.addCleanup(shutil.rmtree, d)
            with open(os.path.join(d, "interleave.jsonl"), "w") as f:
                f.write(json.dumps(line("(a)", None, default, [80.0, 81.0], [100.0, 100.0])) + "\n")
            dirs.append(d)
        out = subprocess.run([sys.executable, interleave.__file__, "passes", *dirs],
                             capture_output=True, text=True, check=True).stdout
        self.assertIn("0.985x", out)
        self.assertIn("0.905x*", out)
        self.assertIn("1 of 2 within 5% (* below)", out)


@unittest.skipUnless(shutil.which("memcached"), "needs memcached")
class Slicing(unittest.TestCase):
    """Two real memcached servers, each with a load process: each load runs
    in its slices only, and none after the slicing."""

    def start(self, argv):
        p = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        self.addCleanup(self.stop, p)
        return p

    @staticmethod
    def stop(p):
        if p.poll() is None:
            os.kill(p.pid, signal.SIGCONT)
            p.kill()
        p.wait()

    def test_each_load_runs_in_its_own_slices_only(self):
        user = ["-u", "root"] if os.getuid() == 0 else []
        targets = []
        for name in ("a", "b"):
            port = free_port()
            self.start(["memcached", "-l", "127.0.0.1", "-p", str(port), "-t", "1", "-U", "0"] + user)
            wait_port(port)
            load = self.start([sys.executable, "-c", LOAD, str(port)])
            targets.append((name, port, load.pid))
        time.sleep(0.3)
        rates, window = interleave.run_slices(targets, slices=3, slice_s=0.2, settle_s=0.05)
        self.assertEqual(sorted(rates), ["a", "b"])
        for name in rates:
            self.assertEqual(len(rates[name]), 3)
            self.assertTrue(all(r > 0 for r in rates[name]), rates)
        self.assertLess(window[0], window[1])
        # Stopped on return: neither counter moves any more.
        counters = [interleave.Counter(port) for _, port, _ in targets]
        before = [c.read() for c in counters]
        time.sleep(0.3)
        self.assertEqual([c.read() for c in counters], before)
        for c in counters:
            c.sock.close()


if __name__ == "__main__":
    unittest.main()
