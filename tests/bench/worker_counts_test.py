#!/usr/bin/env python3
"""worker_counts.py on lines written as memshard's log writes them: the
count in force over a window, None when it changed within it."""
import datetime
import os
import tempfile
import unittest

import worker_counts

LOG = """\
[2026-12-06 14:03:15.908] NOTICE memshard 0.1.0 started: 1 pool(s), 2 worker thread(s) (as many active as the load needs), reads and writes batched (io_uring)
[2026-12-06 14:03:49.158] INFO   workers: 2 of 2 active (workers saturated (99% busy, 55.1 requests per wake-up): one more)
[2026-12-06 14:03:50.159] INFO   workers: 1 of 2 active (trial, alternating: 1 workers for a second (2 of 6), after 379739 requests/s at 2)
[2026-12-06 14:03:55.159] INFO   workers: 1 of 2 active (one worker more: -3.6% requests/s against one fewer, alternating for 6 s): back
[2026-12-06 14:04:20.000] INFO   pool 'bench': 3 servers
[2026-12-06 14:04:30.500] INFO   workers: 2 of 2 active (workers saturated (97% busy, 8.0 requests per wake-up): one more)
[2026-12-06 14:04:36 ] INFO   workers: not a line of the form
"""


def at(hms):
    return datetime.datetime.strptime("2026-12-06 " + hms, "%Y-%m-%d %H:%M:%S.%f").timestamp()


class WorkerCounts(unittest.TestCase):
    def setUp(self):
        fd, self.path = tempfile.mkstemp()
        with os.fdopen(fd, "w") as f:
            f.write(LOG)
        self.changes = worker_counts.changes(self.path)

    def tearDown(self):
        os.unlink(self.path)

    def test_every_count_line_in_order_and_nothing_else(self):
        self.assertEqual([n for _, n in self.changes], [2, 1, 1, 2])
        self.assertAlmostEqual(self.changes[0][0], at("14:03:49.158"))
        self.assertAlmostEqual(self.changes[3][0], at("14:04:30.500"))

    def test_before_any_change_the_default_runs_one_worker(self):
        self.assertEqual(worker_counts.count_over(self.changes, [at("14:03:20.0"), at("14:03:25.0")]), 1)

    def test_a_change_within_the_window_leaves_no_count(self):
        self.assertIsNone(worker_counts.count_over(self.changes, [at("14:03:45.0"), at("14:03:50.0")]))
        self.assertIsNone(worker_counts.count_over(self.changes, [at("14:04:28.0"), at("14:04:33.0")]))

    def test_a_verdict_that_keeps_the_count_is_no_change(self):
        # 1 from 14:03:50.159; the verdict at 14:03:55.159 says 1 again.
        self.assertEqual(worker_counts.count_over(self.changes, [at("14:03:52.0"), at("14:03:57.0")]), 1)

    def test_the_count_last_set_before_the_window_holds(self):
        self.assertEqual(worker_counts.count_over(self.changes, [at("14:04:00.0"), at("14:04:05.0")]), 1)
        self.assertEqual(worker_counts.count_over(self.changes, [at("14:04:31.0"), at("14:04:36.0")]), 2)

    def test_no_window_no_count(self):
        self.assertIsNone(worker_counts.count_over(self.changes, None))
        self.assertIsNone(worker_counts.count_over(self.changes, []))

    def test_no_log_no_changes(self):
        self.assertEqual(worker_counts.changes(self.path + ".absent"), [])

    def test_a_fixed_memshard_runs_every_worker_from_its_start(self):
        fd, path = tempfile.mkstemp()
        self.addCleanup(os.unlink, path)
        with os.fdopen(fd, "w") as f:
            f.write("[2026-12-06 23:08:50.305] NOTICE memshard 0.1.0 started: 1 pool(s), 2 worker thread(s), "
                    "reads and writes batched (io_uring)\n")
        changes = worker_counts.changes(path)
        self.assertEqual([n for _, n in changes], [2])
        self.assertEqual(worker_counts.count_over(changes, [at("23:09:00.0"), at("23:10:00.0")]), 2)

    def test_fixed_targets_name_their_count(self):
        self.assertEqual(worker_counts.fixed_count("memshard-2t"), 2)
        self.assertEqual(worker_counts.fixed_count("memshard-12t"), 12)
        self.assertIsNone(worker_counts.fixed_count("memshard"))
        self.assertIsNone(worker_counts.fixed_count(None))


if __name__ == "__main__":
    unittest.main()
