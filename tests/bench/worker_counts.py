"""The adaptive default's worker count while each run was measured, from its log.

scripts/bench starts memshard at -v 6, so its log says each time the count
of active workers changed, or a trial's verdict kept it ("workers: N of M
active (why)"), and each run's line in results.jsonl or
memcaslap_shapes.jsonl carries the wall-clock window it measured. A run's
count is the one in force over the whole window, or None when it changed
within it (a trial's alternation included).

Read against the fixed target at that count in the same round, this splits
what the default's throughput over the best fixed setting mixes: whether
the governor chose the faster count, and what being adaptive costs at the
count it chose. On this machine one run's ratio to the best fixed setting
spreads by about 15%, so a load's median over a few rounds cannot tell a
wrong choice from noise; the count it ran at can."""
import datetime
import re

# memshard stamps every line to the millisecond (support/log.cc).
_STAMP = r"^\[(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d+)\]\s+\w+\s+"
_LINE = re.compile(_STAMP + r"workers: (\d+) of \d+ active")
# A memshard started with every worker active (--fixed-threads, or one
# thread) says so by leaving out "(as many active as the load needs)": its
# count is that many from the start, and never changes.
_FIXED_START = re.compile(_STAMP + r"memshard \S+ started: .*?(\d+) worker thread\(s\)(?! \(as many active)")


def changes(path):
    """[(seconds since the epoch, active workers)] in log order; [] without
    the log. The log's times are local, as memshard writes them. A fixed
    memshard's start is its one change: every worker, from then on."""
    try:
        with open(path, errors="replace") as f:
            lines = f.readlines()
    except OSError:
        return []
    out = []
    for line in lines:
        m = _LINE.match(line) or _FIXED_START.match(line)
        if m:
            when = datetime.datetime.strptime(m.group(1), "%Y-%m-%d %H:%M:%S.%f")
            out.append((when.timestamp(), int(m.group(2))))
    return out


def count_over(log_changes, window, initial=1):
    """The active workers over window [start, end] (seconds since the
    epoch), or None when the count changed within it or there is no window.
    Before its first change the default runs `initial` workers (one: it
    starts with one and grows)."""
    if not window or len(window) != 2:
        return None
    start, end = window
    before = [n for t, n in log_changes if t <= start]
    n = before[-1] if before else initial
    if any(m != n for t, m in log_changes if start < t <= end):
        return None
    return n


def fixed_count(target):
    """The thread count of a fixed target's name (memshard-2t: 2), else None."""
    m = re.fullmatch(r"memshard-(\d+)t", target or "")
    return int(m.group(1)) if m else None
