"""Request latency percentiles from a memcaslap log.

memcaslap run with --stat_freq (-S) ends its output with a "Total
Statistics" block: min, max, mean and a histogram of response times in
microseconds by powers of two ("Log2 Dist"), where bucket r counts the
requests that took more than 2^(r-1) us and at most 2^r us, and a row
labelled k lists buckets k, k+1, k+2 and k+3. It prints no percentiles, so
they are read off that histogram: the bucket that holds the rank, and
within it a point placed geometrically by the rank's share of the bucket.
A figure is therefore an estimate whose bucket spans a factor of two.
"""
import math
import re


def total_histogram(text):
    """The Total Statistics block's buckets, {r: count}; None when absent."""
    start = text.rfind("Total Statistics")
    if start < 0:
        return None
    block = text[start:]
    dist = block.find("Log2 Dist:")
    if dist < 0:
        return None
    buckets = {}
    for line in block[dist + len("Log2 Dist:"):].splitlines():
        m = re.match(r"\s*(\d+):((?:\s+\d+)+)\s*$", line)
        if not m:
            if buckets:
                break  # the histogram's rows are over
            continue
        first = int(m.group(1))
        for i, count in enumerate(m.group(2).split()):
            buckets[first + i] = int(count)
    return buckets or None


def percentile(buckets, q):
    """The q-th quantile (0 < q < 1) in microseconds, from total_histogram()."""
    total = sum(buckets.values())
    if total == 0:
        return None
    rank = q * total
    seen = 0
    for r in sorted(buckets):
        count = buckets[r]
        if count and seen + count >= rank:
            if r == 0:
                return 1.0
            low = 2.0 ** (r - 1)
            return low * math.pow(2.0, (rank - seen) / count)
        seen += count
    return 2.0 ** max(buckets)


def latency(path):
    """{"p50_us", "p99_us"} of the memcaslap log at `path`, or None."""
    try:
        with open(path) as f:
            buckets = total_histogram(f.read())
    except OSError:
        return None
    if not buckets:
        return None
    return {"p50_us": percentile(buckets, 0.50), "p99_us": percentile(buckets, 0.99)}
