#!/usr/bin/env python3
"""memcaslap_latency.py against memcaslap's own output (copied from a run of
memcaslap -T 1 -c 32 -t 3s -S 3s against memcached on this machine)."""
import os
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import memcaslap_latency  # noqa: E402

RUN = """Get Statistics (284558 events)
   Min:        22
   Max:      4899
   Avg:       303
   Geo:    285.58
   Std:    145.77
   Log2 Dist:
       4:        0        3       22     1289
       8:   133775   135936    12968      296
      12:      262        7

Total Statistics (316194 events)
   Min:        22
   Max:      4899
   Avg:       303
   Geo:    285.65
   Std:    149.15
   Log2 Dist:
       4:        0        3       26     1454
       8:   148572   151074    14404      321
      12:      333        7

cmd_get: 284587
cmd_set: 31639

Run time: 3.0s Ops: 316226 TPS: 105382 Net_rate: 25.0M/s
"""


class TotalHistogram(unittest.TestCase):
    def test_reads_the_total_block_not_the_get_block(self):
        b = memcaslap_latency.total_histogram(RUN)
        self.assertEqual(b[7], 1454)
        self.assertEqual(b[8], 148572)
        self.assertEqual(b[9], 151074)
        self.assertEqual(b[13], 7)
        self.assertEqual(sum(b.values()), 316194)

    def test_a_log_without_statistics_has_none(self):
        self.assertIsNone(memcaslap_latency.total_histogram("Run time: 3.0s Ops: 1 TPS: 1\n"))


class Percentile(unittest.TestCase):
    def test_the_rank_falls_in_its_power_of_two_bucket(self):
        b = memcaslap_latency.total_histogram(RUN)
        # Through bucket 8 (<= 256 us): 150,055 of 316,194, under half; through
        # 9 (<= 512 us): 301,129, 95.2%; through 10: 99.79%.
        p50 = memcaslap_latency.percentile(b, 0.50)
        p99 = memcaslap_latency.percentile(b, 0.99)
        self.assertTrue(256 < p50 <= 512, p50)
        self.assertTrue(512 < p99 <= 1024, p99)
        # Geometric within the bucket: (158,097 - 150,055) / 151,074 of it.
        self.assertAlmostEqual(p50, 256 * 2 ** ((0.5 * 316194 - 150055) / 151074), places=6)

    def test_one_bucket_only(self):
        b = {5: 10}
        self.assertAlmostEqual(memcaslap_latency.percentile(b, 0.5), 16 * 2 ** 0.5)
        self.assertAlmostEqual(memcaslap_latency.percentile(b, 0.99), 16 * 2 ** 0.99)

    def test_latency_of_a_file(self):
        with tempfile.NamedTemporaryFile("w", suffix=".log", delete=False) as f:
            f.write(RUN)
        try:
            got = memcaslap_latency.latency(f.name)
        finally:
            os.unlink(f.name)
        self.assertTrue(256 < got["p50_us"] <= 512)
        self.assertTrue(512 < got["p99_us"] <= 1024)
        self.assertIsNone(memcaslap_latency.latency(f.name))  # gone: no figure


if __name__ == "__main__":
    unittest.main()
