"""memshard's default against the fixed settings in interleaved slices.

scripts/bench --interleave starts one load generator per target and stops
(SIGSTOP) all but one at a time: each target in turn gets the machine for a
short slice, and its throughput over the slice is read off its own request
counters (memcached's `stats`: cmd_get + cmd_set). One run per target, each
in its own seconds, reads the load's drift on this 2-vCPU machine as the
target's doing: one run's ratio spreads by about 14% there, so one load's
median over six rounds cannot resolve the 5% the adaptivity target asks
for. Slices a few hundred milliseconds apart share the drift, which cancels
in each cycle's ratio (the governor's alternating trial rests on the same
fact): 30 cycles put one load's ratio within about 3% either side.

What it measures is the default at the count it settled on with its load
alone just before the slices began (its trial ran then; scripts/bench warms
it up last, since a default left idle for 4 s shrinks to one worker),
against each fixed setting, in the same seconds. A stopped load's
connections stay open: the same clients, paused, for under a second at the
defaults (memshard parks a connection idle for 1 s). While slices
alternate, no tick of the governor sees two seconds of steady load, which
a growth and a kept growth's recheck both wait for, so the count holds;
the summary prints it from memshard's log (changing, if it moved).

It does not remove what stays the same through one pass (where each
target's connections were placed when they connected, perhaps): two passes
of (a) read two fixed workers at 1.11x of one and at 0.83x, each within
about 3%, while two identical one-worker targets read 0.99x of each other.
So a load's verdict still wants several passes, each a precise one.

  interleave.py run --label L --slices N --slice S --settle S --out FILE NAME=PORT:PID ...
  interleave.py summary FILE [MEMSHARD_LOG]
  interleave.py passes OUT_DIR...

`passes`: several passes' --out directories (each with interleave.jsonl and
memshard.log), each load pass by pass and pooled over them.

`run`: the first target is the default, the others the fixed settings; PID
is each one's load generator, started and stopped by the caller. Each cycle
visits every target once, the first one in turn, so that no target always
follows the same other. Appends one JSON line to FILE."""
import argparse
import json
import math
import os
import signal
import socket
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import summarize  # noqa: E402
import worker_counts  # noqa: E402


def visit_order(n, cycle):
    """Target indices for cycle `cycle` of `n` targets: rotated by one each
    cycle."""
    return [(cycle + k) % n for k in range(n)]


def paired(reference, other):
    """The reference's slices over the other's, cycle by cycle (the two were
    measured within one cycle, a second or two apart): pooled as
    summarize.pooled pools runs, or None with fewer than two cycles."""
    return summarize.pooled([a / b for a, b in zip(reference, other) if a > 0 and b > 0])


class Counter:
    """A target's requests so far, over one connection held open (a new one
    per reading would be accepted, and counted, by the proxy each time)."""

    def __init__(self, port):
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=10)

    def read(self):
        self.sock.sendall(b"stats\r\n")
        buf = b""
        while not buf.endswith(b"END\r\n"):
            chunk = self.sock.recv(65536)
            if not chunk:
                raise RuntimeError("stats connection closed")
            buf += chunk
        stats = {}
        for line in buf.decode(errors="replace").splitlines():
            parts = line.split()
            if len(parts) == 3 and parts[0] == "STAT":
                stats[parts[1]] = parts[2]
        return int(stats.get("cmd_get", 0)) + int(stats.get("cmd_set", 0))


def run_slices(targets, slices, slice_s, settle_s):
    """`targets`: [(name, port, pid)]. Every load is stopped on entry and on
    return. Returns {name: [requests/s per slice]} and the wall-clock window
    the slices took."""
    counters = [Counter(port) for _, port, _ in targets]
    rates = {name: [] for name, _, _ in targets}
    for _, _, pid in targets:
        os.kill(pid, signal.SIGSTOP)
    start = time.time()
    try:
        for cycle in range(slices):
            for i in visit_order(len(targets), cycle):
                name, _, pid = targets[i]
                os.kill(pid, signal.SIGCONT)
                try:
                    # Settle: the load's first requests after a stop find
                    # the proxy cold (a parked connection wakes).
                    time.sleep(settle_s)
                    c0, t0 = counters[i].read(), time.monotonic()
                    time.sleep(slice_s)
                    c1, t1 = counters[i].read(), time.monotonic()
                finally:
                    os.kill(pid, signal.SIGSTOP)
                rates[name].append((c1 - c0) / (t1 - t0))
    finally:
        for c in counters:
            c.sock.close()
    return rates, [start, time.time()]


def cmd_run(argv):
    ap = argparse.ArgumentParser(prog="interleave.py run")
    ap.add_argument("--label", required=True)
    ap.add_argument("--slices", type=int, default=30)
    ap.add_argument("--slice", type=float, default=0.3)
    ap.add_argument("--settle", type=float, default=0.1)
    ap.add_argument("--out", required=True)
    ap.add_argument("targets", nargs="+", help="NAME=PORT:PID, the default first")
    a = ap.parse_args(argv)
    targets = []
    for spec in a.targets:
        name, _, rest = spec.partition("=")
        port, _, pid = rest.partition(":")
        targets.append((name, int(port), int(pid)))
    rates, window = run_slices(targets, a.slices, a.slice, a.settle)
    line = {"label": a.label, "slices": a.slices, "slice": a.slice, "settle": a.settle,
            "targets": [t[0] for t in targets], "window": window, "rates": rates}
    with open(a.out, "a") as f:
        f.write(json.dumps(line) + "\n")
    print(describe(line, None))


def describe(line, log_changes):
    """One load's line: each target's mean, and the default over each fixed
    setting and over the faster of them, with two standard errors."""
    rates = line["rates"]
    names = line["targets"]
    default = names[0]
    mean = {n: sum(rates[n]) / len(rates[n]) for n in names if rates[n]}
    parts = [f"  {line['label']}: " + ", ".join(f"{n} {mean.get(n, 0):.0f}/s" for n in names)]
    for n in names[1:]:
        p = paired(rates[default], rates[n])
        if p:
            parts.append(f"    {default} over {n}: {p['geomean']:.3f}x "
                         f"({p['low']:.3f}x to {p['high']:.3f}x), one slice's ratio spreads by "
                         f"{p['run_sd'] * 100:.1f}%")
    best = best_fixed(line)
    if best:
        parts.append(f"    faster fixed setting: {best}")
    if log_changes is not None:
        n = worker_counts.count_over(log_changes, line.get("window"))
        parts.append(f"    {default}'s workers through the slices: "
                     f"{n if n is not None else 'changing'}")
    return "\n".join(parts)


def best_fixed(line):
    """The fixed setting with the higher mean over its slices."""
    rates = line["rates"]
    fixed = [n for n in line["targets"][1:] if rates.get(n)]
    return max(fixed, key=lambda n: sum(rates[n]) / len(rates[n])) if fixed else None


def summary(lines, log_changes):
    """Per load, the default over the faster fixed setting; and over all
    loads, the geometric mean of those (each load's own ratio already pooled
    over its cycles). Returns (per_load [(label, ratio, low, high, workers)],
    pooled geometric mean or None)."""
    per_load = []
    for line in lines:
        best = best_fixed(line)
        p = paired(line["rates"][line["targets"][0]], line["rates"][best]) if best else None
        if not p:
            continue
        n = worker_counts.count_over(log_changes, line.get("window")) if log_changes else None
        per_load.append((line["label"], p["geomean"], p["low"], p["high"], n))
    if not per_load:
        return per_load, None
    g = math.exp(sum(math.log(r) for _, r, _, _, _ in per_load) / len(per_load))
    return per_load, g


def cmd_summary(argv):
    path = argv[0]
    log_changes = worker_counts.changes(argv[1]) if len(argv) > 1 else []
    lines = [json.loads(x) for x in open(path) if x.strip()]
    for line in lines:
        print(describe(line, log_changes if len(argv) > 1 else None))
    per_load, g = summary(lines, log_changes)
    if g is None:
        return
    print("default over the faster fixed setting, interleaved (two standard errors of its cycles):")
    for label, r, lo, hi, n in per_load:
        flag = "" if r >= summarize.FIXED_THROUGHPUT_MIN else "  (below 0.95x)"
        workers = f", at {n} worker(s)" if n is not None else ""
        print(f"  {label:<36} {r:.3f}x ({lo:.3f}x to {hi:.3f}x){workers}{flag}")
    print(f"  all {len(per_load)} loads: geometric mean {g:.3f}x")


def passes(per_pass):
    """Several passes of the same loads, each pass's summary() per_load in
    `per_pass`: per load (in the order first met), its ratio and worker
    count in each pass (None where a pass lacks the load), and its ratios
    pooled over the passes (summarize.pooled: what holds through one pass,
    and so does not cancel within it, spreads the passes)."""
    labels = []
    for per_load in per_pass:
        labels += [x[0] for x in per_load if x[0] not in labels]
    rows = []
    for label in labels:
        found = [next((x for x in per_load if x[0] == label), None) for per_load in per_pass]
        ratios = [x[1] if x else None for x in found]
        workers = [x[4] if x else None for x in found]
        rows.append((label, ratios, workers, summarize.pooled([r for r in ratios if r])))
    return rows


def cmd_passes(argv):
    per_pass, logged = [], []
    for d in argv:
        with open(os.path.join(d, "interleave.jsonl")) as f:
            lines = [json.loads(x) for x in f if x.strip()]
        log = os.path.join(d, "memshard.log")
        logged.append(os.path.exists(log))
        per_pass.append(summary(lines, worker_counts.changes(log) if logged[-1] else [])[0])
    print(f"default over the faster fixed setting, pass by pass (its workers; ~: changing), "
          f"then pooled over the passes (two standard errors): {' '.join(argv)}")
    logs, below = [], 0
    for label, ratios, workers, p in passes(per_pass):
        cells = []
        for r, n, has_log in zip(ratios, workers, logged):
            if r is None:
                cells.append(f"{'-':<11}")
                continue
            logs.append(math.log(r))
            is_below = r < summarize.FIXED_THROUGHPUT_MIN
            below += is_below
            flag = "*" if is_below else " "
            count = f"({n if n is not None else '~'})" if has_log else "   "
            cells.append(f"{r:.3f}x{flag}{count}")
        pooled = f"  {p['geomean']:.3f}x ({p['low']:.3f}x to {p['high']:.3f}x)" if p else ""
        print(f"  {label:<36} " + " ".join(cells) + pooled)
    if logs:
        print(f"  {len(logs) - below} of {len(logs)} within {(1 - summarize.FIXED_THROUGHPUT_MIN) * 100:.0f}% "
              f"(* below); geometric mean {math.exp(sum(logs) / len(logs)):.3f}x")


def main():
    commands = {"run": cmd_run, "summary": cmd_summary, "passes": cmd_passes}
    if len(sys.argv) < 2 or sys.argv[1] not in commands:
        print(__doc__, file=sys.stderr)
        return 2
    commands[sys.argv[1]](sys.argv[2:])
    return 0


if __name__ == "__main__":
    sys.exit(main())
