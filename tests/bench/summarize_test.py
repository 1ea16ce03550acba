#!/usr/bin/env python3
"""summarize.py on a made-up run of memcaslap's three loads: the ratios it
prints and writes to summary.json, the haproxy hop's among them, come from
the right targets and rounds, and a run without haproxy (older runs, or
--no-haproxy) has none of them; the default over the fixed setting pooled
over rounds is read against the target faster by median; the default's
worker count over each measured run comes from its log."""
import datetime
import json
import math
import os
import statistics
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
META = {"rounds": 2, "duration": 5, "warmup": 5, "threads": None, "fixed_threads": [1, 2],
        "memcaslap_warmup": 5, "lg_threads": 2, "backends": 3, "cores": 2, "loadavg_start": 1.0,
        "loadavg_end": 1.0, "wake_probe": None, "workloads": [], "text_twins": {}}
# ops/s by target, one list entry per round.
TPS = {"direct": [100000, 80000], "nutcracker": [40000, 30000], "memshard": [70000, 60000],
       "memshard-1t": [72000, 50000], "memshard-2t": [50000, 64000], "haproxy": [50000, 44000]}


def write_run(out, targets, shape="1x32", args="-T 1 -c 32", measured=None, extra=None):
    """measured: {round: [start, end]}, the windows scripts/bench writes
    beside each run (older runs have none). extra: {target: {field: [round
    1's, round 2's]}}, fields written beside the others."""
    with open(os.path.join(out, "meta.json"), "w") as f:
        json.dump(META, f)
    with open(os.path.join(out, "memcaslap_shapes.jsonl"), "w") as f:
        for rnd in (1, 2):
            for t in targets:
                tps = TPS[t][rnd - 1]
                row = {"target": t, "shape": shape, "args": args, "round": rnd, "rc": 0, "tps": tps,
                       "ops": tps * 5, "run_s": 5.0, "cpu_s": 1.0, "cpu_us_per_op": 1e6 / (tps * 5),
                       "user_cpu_us_per_op": None, "backends_cpu_us_per_op": None,
                       "machine_cpu_us_per_op": None, "server_reads_per_op": None, "log": ""}
                if measured:
                    row["measured"] = measured[rnd]
                for field, values in (extra or {}).get(t, {}).items():
                    row[field] = values[rnd - 1]
                f.write(json.dumps(row) + "\n")


def run_summarize(out):
    """summarize.py over OUT: what it printed, and its summary.json's default_parallelism."""
    printed = subprocess.run([sys.executable, os.path.join(HERE, "summarize.py"), out],
                             check=True, capture_output=True, text=True).stdout
    with open(os.path.join(out, "summary.json")) as f:
        return printed, json.load(f)["default_parallelism"]


def summarize(targets, shape="1x32", args="-T 1 -c 32"):
    with tempfile.TemporaryDirectory() as out:
        write_run(out, targets, shape, args)
        printed, parallelism = run_summarize(out)
    return printed, parallelism["memcaslap_shapes"][shape]


class HaproxyHop(unittest.TestCase):
    def test_ratios_of_the_medians(self):
        printed, c = summarize(list(TPS))
        # Medians of two rounds: direct 90,000, memshard 65,000, haproxy 47,000.
        self.assertAlmostEqual(c["hop_to_direct"], 47000 / 90000)
        self.assertAlmostEqual(c["default_to_hop"]["throughput"], 65000 / 47000)
        # CPU per op goes as 1 / tps here: memshard's over haproxy's.
        cpu = lambda t: sorted(1e6 / (x * 5) for x in TPS[t])  # noqa: E731
        self.assertAlmostEqual(c["default_to_hop"]["cpu_per_request"],
                               (sum(cpu("memshard")) / 2) / (sum(cpu("haproxy")) / 2))
        self.assertIn("haproxy / direct", printed)
        self.assertIn("default / haproxy", printed)

    def test_round_by_round(self):
        printed, c = summarize(list(TPS))
        self.assertEqual([round(x, 4) for x in c["per_round"]["hop_to_direct"]], [0.5, 0.55])
        self.assertEqual([round(x, 4) for x in c["per_round"]["best_fixed"]],
                         [round(70000 / 72000, 4), round(60000 / 64000, 4)])
        self.assertIn("rounds, haproxy / direct     0.500x 0.550x", printed)

    def test_a_run_without_haproxy_has_no_hop(self):
        printed, c = summarize([t for t in TPS if t != "haproxy"])
        self.assertNotIn("hop_to_direct", c)
        self.assertNotIn("default_to_hop", c)
        self.assertNotIn("haproxy", printed)
        self.assertAlmostEqual(c["default_to_direct"]["throughput"], 65000 / 90000)


class Pooled(unittest.TestCase):
    """The default over the fixed setting, each round and load together."""

    def test_each_round_against_the_target_faster_by_median(self):
        # Medians: memshard-1t 61,000 beats memshard-2t 57,000, so both rounds
        # compare with memshard-1t, though memshard-2t won the second.
        with tempfile.TemporaryDirectory() as out:
            write_run(out, list(TPS))
            printed, parallelism = run_summarize(out)
        p = parallelism["pooled"]
        self.assertIsNone(p["workloads"])
        m = p["memcaslap_shapes"]
        self.assertEqual(m["runs"], 2)
        self.assertAlmostEqual(m["geomean"], math.sqrt(70000 / 72000 * 60000 / 50000))
        logs = [math.log(70000 / 72000), math.log(60000 / 50000)]
        self.assertAlmostEqual(m["run_sd"], statistics.stdev(logs))
        se = statistics.stdev(logs) / math.sqrt(2)
        self.assertAlmostEqual(m["low"], m["geomean"] * math.exp(-2 * se))
        self.assertAlmostEqual(m["high"], m["geomean"] * math.exp(2 * se))
        # Rounds for one load's two standard errors to be 5% either side.
        n = m["rounds_for_5pct"]
        self.assertLessEqual(2 * m["run_sd"] / math.sqrt(n), math.log(1 / 0.95))
        self.assertGreater(2 * m["run_sd"] / math.sqrt(n - 1), math.log(1 / 0.95))
        self.assertIn("memcaslap's loads: 2 runs, geometric mean 1.080x", printed)

    def test_one_run_pools_nothing(self):
        with tempfile.TemporaryDirectory() as out:
            write_run(out, list(TPS))
            path = os.path.join(out, "memcaslap_shapes.jsonl")
            with open(path) as f:
                first_round = [line for line in f if json.loads(line)["round"] == 1]
            with open(path, "w") as f:
                f.writelines(first_round)
            printed, _ = run_summarize(out)
        self.assertNotIn("each round and load together", printed)


def stamp(epoch):
    return datetime.datetime.fromtimestamp(epoch).strftime("%Y-%m-%d %H:%M:%S.%f")[:-3]


class WorkerCounts(unittest.TestCase):
    """The default's worker count while each run was measured, read off its
    log, and its throughput against the fixed setting at that count."""

    T0 = 1_800_000_000.0  # round 1 measured from T0 + 10 to T0 + 15, round 2 from T0 + 40 to T0 + 45
    WINDOWS = {1: [T0 + 10, T0 + 15], 2: [T0 + 40, T0 + 45]}

    def run_with_log(self, lines, measured=None):
        with tempfile.TemporaryDirectory() as out:
            write_run(out, list(TPS), measured=measured or self.WINDOWS)
            with open(os.path.join(out, "memshard.log"), "w") as f:
                for when, n in lines:
                    f.write(f"[{stamp(self.T0 + when)}] INFO   workers: {n} of 2 active (why)\n")
            return run_summarize(out)

    def test_counts_and_the_fixed_setting_at_each(self):
        # One worker through round 1, two from 30 s on through round 2.
        printed, parallelism = self.run_with_log([(1, 2), (7, 1), (30, 2)])
        c = parallelism["memcaslap_shapes"]["1x32"]["workers"]
        self.assertEqual(c["workers"], [1, 2])
        # Each against the fixed target at its own count, in its own round.
        self.assertAlmostEqual(c["same_count"][0], 70000 / 72000)
        self.assertAlmostEqual(c["same_count"][1], 60000 / 64000)
        # memshard-1t is faster by median (61,000 against 57,000): 7% apart.
        self.assertEqual(c["faster_count"], 1)
        self.assertAlmostEqual(c["fixed_gap"], 61000 / 57000 - 1)
        t = parallelism["worker_counts"]["memcaslap_shapes"]
        self.assertEqual((t["at_faster_count"], t["at_other_count"], t["changing"]), (1, 1, 0))
        self.assertEqual((t["apart_at_faster_count"], t["apart_runs"]), (1, 2))
        self.assertEqual(t["same_count"]["2"], None)  # one run pools nothing
        self.assertIn("rounds, default's workers    1 2", printed)
        self.assertIn("at the faster fixed setting's count in 1 of 2 runs, at the other's in 1", printed)

    def test_a_count_that_changed_while_measured_is_no_count(self):
        printed, parallelism = self.run_with_log([(12, 2), (13, 1)])
        c = parallelism["memcaslap_shapes"]["1x32"]["workers"]
        self.assertEqual(c["workers"], [None, 1])
        self.assertEqual(c["same_count"][0], None)
        self.assertIn("rounds, default's workers    changing 1", printed)
        self.assertEqual(parallelism["worker_counts"]["memcaslap_shapes"]["changing"], 1)

    def test_same_count_pooled_by_count(self):
        # One worker in both rounds: 70,000/72,000 and 60,000/50,000.
        _, parallelism = self.run_with_log([])
        p = parallelism["worker_counts"]["memcaslap_shapes"]["same_count"]["1"]
        self.assertEqual(p["runs"], 2)
        self.assertAlmostEqual(p["geomean"], math.sqrt(70000 / 72000 * 60000 / 50000))

    def test_runs_without_windows_say_nothing_of_counts(self):
        with tempfile.TemporaryDirectory() as out:
            write_run(out, list(TPS))
            with open(os.path.join(out, "memshard.log"), "w") as f:
                f.write(f"[{stamp(self.T0 + 1)}] INFO   workers: 2 of 2 active (why)\n")
            printed, parallelism = run_summarize(out)
        self.assertIsNone(parallelism["memcaslap_shapes"]["1x32"]["workers"])
        self.assertNotIn("worker count while", printed)


class ShapesRun(unittest.TestCase):
    def test_a_shape_of_the_users_choice_is_summarized_with_its_command(self):
        # scripts/bench --memcaslap-shapes 4x8d5: not one of the three loads.
        # Its arguments are the ones scripts/bench wrote beside each run.
        printed, c = summarize(list(TPS), "4x8d5", "-T 4 -c 8 -d 5")
        self.assertIn("memcaslap 4x8d5: memcaslap -T 4 -c 8 -d 5 -X 100", printed)
        self.assertAlmostEqual(c["default_to_direct"]["throughput"], 65000 / 90000)

    def test_a_run_that_wrote_no_arguments_is_named_by_its_shape(self):
        printed, _ = summarize(list(TPS), "4x8d5", "")
        self.assertIn("memcaslap 4x8d5: memcaslap (4x8d5) -X 100", printed)


class MachineRows(unittest.TestCase):
    def test_the_servers_sleeps_per_op_are_printed_as_medians(self):
        # A server kept busy by its clients (direct) against three that
        # each sleep after a batch (behind memshard).
        machine = {"machine_cpu_us_per_op": [20.0, 22.0], "backends_cpu_us_per_op": [8.0, 8.0]}
        extra = {"direct": dict(machine, server_sleeps_per_op=[0.01, 0.03]),
                 "memshard": dict(machine, server_sleeps_per_op=[0.2, 0.3])}
        with tempfile.TemporaryDirectory() as out:
            write_run(out, ["direct", "memshard"], extra=extra)
            printed, _ = run_summarize(out)
        row = next(x for x in printed.splitlines() if "server sleeps/op" in x)
        self.assertEqual(row.split()[-2:], ["0.02", "0.25"])


if __name__ == "__main__":
    unittest.main()
