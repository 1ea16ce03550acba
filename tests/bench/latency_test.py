"""latency.py's pure parts: when an open-loop run kept up, the table's
cells and marks, and the ratios line; on made-up reports."""
import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import latency  # noqa: E402


def report(p50, p99, p999, achieved=1000.0, timeouts=0, p90=None):
    lat = {"count": 10, "mean": p50, "p50": p50, "p90": p90 if p90 is not None else p99, "p99": p99,
           "p999": p999, "max": p999}
    return {"achieved": achieved, "timeouts": timeouts, "lost": 0,
            "latency_us": {"all": lat, "idle": lat, "busy": lat, "dispatch_lag": lat}}


def run(target, pct, rep, foreign=0.0, rate=1000):
    return {"shape": "busy", "pct": pct, "rate": rate, "target": target, "foreign": foreign,
            "loadavg": 1.0, "report": rep, "rc": 0}


class Sustained(unittest.TestCase):
    def test_kept_up(self):
        self.assertTrue(latency.sustained(report(50, 200, 900, achieved=995, p90=100), 1000))

    def test_too_few_answered(self):
        self.assertFalse(latency.sustained(report(50, 200, 900, achieved=970, p90=100), 1000))

    def test_a_growing_queue(self):
        self.assertFalse(latency.sustained(report(3000, 90000, 99000, achieved=1000, p90=60000), 1000))

    def test_timeouts_or_no_report(self):
        self.assertFalse(latency.sustained(report(50, 200, 900, timeouts=1, p90=100), 1000))
        self.assertFalse(latency.sustained(None, 1000))


class Table(unittest.TestCase):
    def test_rows_and_marks(self):
        runs = [run("direct", 10, report(40, 120, 900)),
                run("memshard", 10, report(60, 200, 1500), foreign=0.5),
                run("direct", 50, report(30, 100, 800)),
                run("memshard", 50, report(9000, 50000, 60000))]
        rows = latency.table(runs, "busy", "all", 0.25)
        self.assertEqual(rows[0], "| rate | direct p50 | p99 | p99.9 | memshard p50 | p99 | p99.9 |")
        self.assertEqual(rows[2], "| 10%: 1,000/s | 40.0 | 120 | 900 | 60.0* | 200* | 1500* |")
        # p50 over 5 ms: the queue grew, marked !
        self.assertEqual(rows[3], "| 50%: 1,000/s | 30.0 | 100 | 800 | 9000! | 50,000! | 60,000! |")

    def test_a_missing_run_is_a_dash(self):
        rows = latency.table([run("direct", 10, report(40, 120, 900)), run("memshard", 30, None)],
                             "busy", "all", 0.25)
        self.assertIn("–", rows[2])

    def test_ratios(self):
        runs = [run("direct", 10, report(40, 100, 1000)), run("nutcracker", 10, report(100, 400, 2000)),
                run("memshard", 10, report(60, 200, 1000))]
        line = latency.ratios(runs, "busy")[0]
        self.assertIn("/direct p50 1.50x p99 2.00x p99.9 1.00x", line)
        self.assertIn("/nutcracker p50 0.60x p99 0.50x p99.9 0.50x", line)


class Formats(unittest.TestCase):
    def test_microseconds(self):
        self.assertEqual(latency.fmt_us(12.34), "12.3")
        self.assertEqual(latency.fmt_us(123.4), "123")
        self.assertEqual(latency.fmt_us(12345.6), "12,346")
        self.assertEqual(latency.fmt_int(1234567.4), "1,234,567")


if __name__ == "__main__":
    unittest.main()
