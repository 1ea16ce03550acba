#!/usr/bin/env python3
"""Summarizes a scripts/bench run: medians over rounds per workload and target,
memshard's ratios to nutcracker, memory per idle connection (staggered and
burst requests), syscalls per request, and memshard's default parallelism
against fixed thread counts, nutcracker and direct (per workload and per
memcaslap client shape, with the targets of issue 25 beside the ratios).

    summarize.py OUT_DIR

reads OUT_DIR/results.jsonl (one line per loadgen run), OUT_DIR/memory.jsonl,
OUT_DIR/syscalls.jsonl, OUT_DIR/memcaslap.jsonl and
OUT_DIR/memcaslap_shapes.jsonl (all optional), OUT_DIR/meta.json; prints the
tables and writes OUT_DIR/summary.json.
"""
import json
import math
import os
import statistics
import sys

import memcaslap_latency
import worker_counts

TARGETS = ["direct", "nutcracker", "memshard"]
MEMORY_MODES = ["staggered", "burst"]
# How close a reported latency percentile is to the true value: memshard-load's
# histogram has 32 linear steps per power of two (tests/bench/loadgen_hist.h).
ADDED_P50_RESOLUTION = 0.03
# Issue 25's targets for memshard's default parallelism, printed beside the
# ratios and never asserted: within 5% of the best fixed thread count
# (throughput at least 0.95x of the fastest, CPU per request at most 1.05x
# of the cheapest), throughput 1.3x nutcracker's (1.5x on the pipelined
# (f)), CPU per request 0.65x nutcracker's on the single-key workloads.
FIXED_THROUGHPUT_MIN = 0.95
FIXED_CPU_MAX = 1.05
NUT_THROUGHPUT_MIN = 1.3
NUT_THROUGHPUT_MIN_BY_WORKLOAD = {"f": 1.5}
NUT_CPU_MAX = 0.65
NUT_CPU_WORKLOADS = {"a", "d", "e", "g", "i"}
# Throughput against memcached itself on those loads (issue 39).
DIRECT_THROUGHPUT_MIN = 0.9
# On memcaslap's loads only: haproxy in mode tcp in front of the direct
# memcached, a mature proxy's hop that forwards bytes and parses nothing.
# Its throughput over direct's is what such a hop costs on this machine,
# where the client, the proxy and the servers share the same cores.
HOP = "haproxy"


def load_lines(path):
    if not os.path.exists(path):
        return []
    with open(path) as f:
        return [json.loads(line) for line in f if line.strip()]


def median(values):
    values = [v for v in values if v is not None and v >= 0]
    return statistics.median(values) if values else None


def fmt(v, spec="{:.1f}", none="-"):
    return none if v is None else spec.format(v)


def ratio(a, b):
    if a is None or b is None or b <= 0:
        return None
    return a / b


def per_request(r, field):
    """Microseconds of r[field] (seconds) per request; None when not measured."""
    v = r.get(field)
    if v is None or v < 0 or not r.get("requests"):
        return None
    return v * 1e6 / r["requests"]


def print_cpu_split(workloads, med, proxies, w_desc):
    """The cpu table split into user space and kernel, with memcached's own
    cpu over nutcracker's; the legend printed below it says why."""
    if not any(m.get("kernel_us_per_req") is not None for m in med.values()):
        return
    shown = ["direct", "nutcracker"] + proxies
    print("cpu us/request split: user + kernel (utime + stime of /proc/PID/stat; medians)")
    cols = " ".join(["{:>14}"] * len(shown))
    head = ("{:<{w}} " + cols + " {:>18} {:>8} {:>14}").format(
        "workload", *shown, "memshard/nut user", "kernel", "memcached/nut", w=w_desc)
    print(head)
    print("-" * len(head))
    for wid, desc in workloads:
        cells = []
        for t in shown:
            m = med.get((wid, t))
            u, k = (m["user_us_per_req"], m["kernel_us_per_req"]) if m else (None, None)
            cells.append(f"{u:.2f} + {k:.2f}" if u is not None and k is not None else "-")
        m, n, d = med.get((wid, "memshard")), med.get((wid, "nutcracker")), med.get((wid, "direct"))
        ru = ratio(m["user_us_per_req"], n["user_us_per_req"]) if m and n else None
        rk = ratio(m["kernel_us_per_req"], n["kernel_us_per_req"]) if m and n else None
        rd = ratio(d["cpu_us_per_req"], n["cpu_us_per_req"]) if d and n else None
        print(("{:<{w}} " + cols + " {:>18} {:>8} {:>14}").format(
            f"({wid}) {desc}", *cells, fmt(ru, "{:.2f}x"), fmt(rk, "{:.2f}x"), fmt(rd, "{:.2f}x"), w=w_desc))
    print("(ratios of the medians. memcached/nut: the direct memcached's cpu per request over nutcracker's.")
    print(" For a single-key request memcached receives once and sends once on the client's socket, as a proxy")
    print(" does on its client side; a proxy then also sends to and receives from a server. Where the kernel is")
    print(" most of everyone's cpu, that socket work, not a proxy's code, sets how low its ratio can go)")
    print()


def judge(value, limit, higher_is_better):
    """A ratio against its target: ' ok', ' LOW' or ' HIGH'; '' without one of them."""
    if value is None or limit is None:
        return ""
    if higher_is_better:
        return " ok" if value >= limit else " LOW"
    return " ok" if value <= limit else " HIGH"


def default_case(wid, per_target, fixed):
    """memshard's default against the best fixed thread count, nutcracker and
    direct, from per_target {target: {"rps": median, "cpu_us_per_req":
    median}}: the ratios of the medians, and the targets they are read
    against (for memcaslap, an operation is a request)."""
    d, n, direct = per_target.get("memshard"), per_target.get("nutcracker"), per_target.get("direct")
    fx = [(t, per_target[t]) for t in fixed if t in per_target]
    fastest = max((x for x in fx if x[1]["rps"] is not None), key=lambda x: x[1]["rps"], default=None)
    cheapest = min((x for x in fx if x[1]["cpu_us_per_req"] is not None),
                   key=lambda x: x[1]["cpu_us_per_req"], default=None)
    dr = d["rps"] if d else None
    dc = d["cpu_us_per_req"] if d else None
    c = {
        "medians": per_target,
        "fastest_fixed": fastest[0] if fastest else None,
        "cheapest_fixed": cheapest[0] if cheapest else None,
        # Throughput: over the fastest fixed target's. CPU per request: over
        # the cheapest one's (lower is better).
        "default_to_best_fixed": {"throughput": ratio(dr, fastest[1]["rps"]) if fastest else None,
                                  "cpu_per_request": ratio(dc, cheapest[1]["cpu_us_per_req"]) if cheapest else None},
        "default_to_nutcracker": {"throughput": ratio(dr, n["rps"]) if n else None,
                                  "cpu_per_request": ratio(dc, n["cpu_us_per_req"]) if n else None},
        "default_to_direct": {"throughput": ratio(dr, direct["rps"]) if direct else None},
    }
    hop = per_target.get(HOP)
    if hop:
        c["hop_to_direct"] = ratio(hop["rps"], direct["rps"]) if direct else None
        c["default_to_hop"] = {"throughput": ratio(dr, hop["rps"]),
                               "cpu_per_request": ratio(dc, hop["cpu_us_per_req"])}
    goals = {
        "best_fixed_throughput_min": FIXED_THROUGHPUT_MIN,
        "best_fixed_cpu_per_request_max": FIXED_CPU_MAX,
        "nutcracker_throughput_min": NUT_THROUGHPUT_MIN_BY_WORKLOAD.get(wid, NUT_THROUGHPUT_MIN),
        "nutcracker_cpu_per_request_max": NUT_CPU_MAX if wid in NUT_CPU_WORKLOADS else None,
        "direct_throughput_min": DIRECT_THROUGHPUT_MIN if wid.startswith("memcaslap") else None,
    }
    values = {
        "best_fixed_throughput_min": c["default_to_best_fixed"]["throughput"],
        "best_fixed_cpu_per_request_max": c["default_to_best_fixed"]["cpu_per_request"],
        "nutcracker_throughput_min": c["default_to_nutcracker"]["throughput"],
        "nutcracker_cpu_per_request_max": c["default_to_nutcracker"]["cpu_per_request"],
        "direct_throughput_min": c["default_to_direct"]["throughput"],
    }
    c["targets"] = {k: {"limit": lim, "met": (None if values[k] is None or lim is None else
                                              (values[k] >= lim if k.endswith("_min") else values[k] <= lim))}
                    for k, lim in goals.items()}
    return c


def per_round_ratios(shape, shapes_runs, fixed, fastest_fixed):
    """memshard's default over the faster fixed target and over direct, in
    each round on its own: a round's targets run minutes apart at most,
    while this machine's speed moves by a third between runs, so the spread
    of these says how far one run's ratio of medians can be trusted. Also
    over `fastest_fixed` (the fixed target faster by median) in each round,
    which pooled() reads."""
    rounds = sorted({x["round"] for x in shapes_runs if x["shape"] == shape})
    out = {"best_fixed": [], "fastest_fixed": [], "direct": [], "hop_to_direct": []}
    for rnd in rounds:
        tps = {x["target"]: x["tps"] for x in shapes_runs
               if x["shape"] == shape and x["round"] == rnd and x.get("tps") is not None}
        d = tps.get("memshard")
        best = max((tps[t] for t in fixed if t in tps), default=None)
        out["best_fixed"].append(ratio(d, best))
        out["fastest_fixed"].append(ratio(d, tps.get(fastest_fixed)))
        out["direct"].append(ratio(d, tps.get("direct")))
        out["hop_to_direct"].append(ratio(tps.get(HOP), tps.get("direct")))
    return out


def pooled(per_run):
    """The default over the fixed setting, pooled over runs of several loads:
    `per_run` holds one ratio per round and load (the default's throughput
    over that of the fixed target faster by median, in the same round).
    Two processes run seconds apart on this machine differ by more than the
    adaptivity target's 5%, so one load's median cannot resolve it in a few
    rounds; together the runs can. Returns the geometric mean, its interval
    of two standard errors either side, a single run's spread (the standard
    deviation of the log ratio) and the rounds one load would need for its
    own interval to be 5% either side; None with fewer than two runs."""
    logs = [math.log(x) for x in per_run if x]
    if len(logs) < 2:
        return None
    mean, sd = statistics.mean(logs), statistics.stdev(logs)
    se = sd / math.sqrt(len(logs))
    return {"runs": len(logs), "geomean": math.exp(mean), "low": math.exp(mean - 2 * se),
            "high": math.exp(mean + 2 * se), "run_sd": sd,
            "rounds_for_5pct": math.ceil((2 * sd / math.log(1 / FIXED_THROUGHPUT_MIN)) ** 2)}


def print_pooled(label, p):
    if not p:
        return
    print(f"  {label}: {p['runs']} runs, geometric mean {p['geomean']:.3f}x "
          f"(two standard errors: {p['low']:.3f}x to {p['high']:.3f}x); one run's ratio spreads by "
          f"{p['run_sd'] * 100:.1f}% (sd), so one load alone needs about {p['rounds_for_5pct']} rounds "
          f"to resolve {(1 - FIXED_THROUGHPUT_MIN) * 100:.0f}%")


def counts_by_round(default_runs, fixed_runs, fastest_fixed, medians, log_changes):
    """The default's worker count while each round's run was measured
    (worker_counts.py; None: it changed within the run), and its throughput
    over the fixed target at that count in the same round. default_runs:
    {round: (measured window, throughput)}; fixed_runs: {target: {round:
    throughput}}; medians: {target: {"rps": median}}, for how far apart the
    fixed settings are. None when a run has no window."""
    workers, same = [], []
    for rnd in sorted(default_runs):
        window, tput = default_runs[rnd]
        if not window:
            return None  # a run from before the windows were written
        n = worker_counts.count_over(log_changes, window)
        workers.append(n)
        same.append(ratio(tput, fixed_runs.get(f"memshard-{n}t", {}).get(rnd)) if n else None)
    fixed = sorted(m["rps"] for t, m in medians.items() if t in fixed_runs and m.get("rps"))
    return {"workers": workers, "same_count": same, "faster_count": worker_counts.fixed_count(fastest_fixed),
            "fixed_gap": fixed[-1] / fixed[0] - 1 if len(fixed) > 1 else None}


def counts_together(cases):
    """Over several loads' counts_by_round(): in how many runs the default
    was at the count of the fixed setting faster by median, at another, or
    changing; and its throughput over the fixed setting at its own count,
    pooled by count."""
    at_faster = at_other = changing = 0
    # Where the choice matters: loads whose fixed settings' medians differ by
    # more than the adaptivity target (within it, either count meets it).
    apart_runs = apart_at_faster = 0
    same = {}
    for c in cases:
        apart = c["fixed_gap"] is not None and c["fixed_gap"] > 1 / FIXED_THROUGHPUT_MIN - 1
        for n, r in zip(c["workers"], c["same_count"]):
            if n is None:
                changing += 1
            elif n == c["faster_count"]:
                at_faster += 1
            else:
                at_other += 1
            if apart:
                apart_runs += 1
                apart_at_faster += n is not None and n == c["faster_count"]
            if n is not None and r:
                same.setdefault(n, []).append(r)
    return {"runs": at_faster + at_other + changing, "at_faster_count": at_faster, "at_other_count": at_other,
            "changing": changing, "apart_runs": apart_runs, "apart_at_faster_count": apart_at_faster,
            "same_count": {str(n): pooled(rs) for n, rs in sorted(same.items())}}


def print_counts_together(label, t, name):
    if not t or not t["runs"]:
        return
    print(f"  {label}: at the faster fixed setting's count in {t['at_faster_count']} of {t['runs']} runs, at the "
          f"other's in {t['at_other_count']}, changing while measured in {t['changing']}; where the fixed "
          f"settings' medians differ by more than {1 / FIXED_THROUGHPUT_MIN - 1:.1%}, at the faster one's "
          f"in {t['apart_at_faster_count']} of {t['apart_runs']}")
    for n, p in t["same_count"].items():
        if p:
            print(f"    {name} over memshard-{n}t at {n} worker(s), same round: {p['runs']} runs, geometric mean "
                  f"{p['geomean']:.3f}x (two standard errors: {p['low']:.3f}x to {p['high']:.3f}x)")


def print_default_case(title, unit, c, shown, name):
    """One workload's (or memcaslap shape's) table: throughput and CPU per
    request of each target, then memshard's default over the others, each
    ratio with its target beside it."""
    print(title)
    w = max(22, len(name) + len(" / nutcracker"), len(f"  rounds, {name} / best fixed"))
    cols = " ".join(["{:>12}"] * len(shown))
    med = c["medians"]
    print(("  {:<{w}} " + cols).format("", *shown, w=w))
    print(("  {:<{w}} " + cols).format(
        "req/s" if unit == "req" else "ops/s", *[fmt(med[t]["rps"] if t in med else None, "{:.0f}") for t in shown],
        w=w))
    print(("  {:<{w}} " + cols).format(w=w, *[
        f"cpu us/{unit}"] + [fmt(med[t]["cpu_us_per_req"] if t in med else None, "{:.2f}") for t in shown]))
    # memcaslap's latency: estimates from its power-of-two histogram
    # (memcaslap_latency.py); memshard-load's are in the tables above.
    for key, label in (("p50_us", "p50 us (log2 est.)"), ("p99_us", "p99 us (log2 est.)")):
        if any(med[t].get(key) is not None for t in shown if t in med):
            print(("  {:<{w}} " + cols).format(w=w, *[label] + [
                fmt(med[t].get(key) if t in med else None, "{:.0f}") for t in shown]))
    if any(med[t].get("machine_cpu_us") is not None for t in shown if t in med):
        for key, label in (("user_cpu_us", "  of it user space"), ("backends_cpu_us", "backends cpu us/op"),
                           ("machine_cpu_us", "machine cpu us/op"), ("server_reads", "server reads/op"),
                           ("server_sleeps", "server sleeps/op")):
            print(("  {:<{w}} " + cols).format(w=w, *[label] + [
                fmt(med[t].get(key) if t in med else None, "{:.2f}") for t in shown]))
        print(("  {:<{w}} " + cols).format(w=w, *["machine cores busy"] + [
            fmt(med[t]["machine_cpu_us"] * med[t]["rps"] / 1e6
                if t in med and med[t].get("machine_cpu_us") is not None and med[t]["rps"] else None, "{:.2f}")
            for t in shown]))
    g = c["targets"]

    def cell(v, key=None, higher=True):
        lim = g[key]["limit"] if key else None
        goal = ""
        if lim is not None:
            goal = f"  ({'>=' if higher else '<='} {lim:.2f}x:{judge(v, lim, higher) or ' -'})"
        # Three decimals: a ratio a hair under its target must not print as it.
        return fmt(v, "{:.3f}x") + goal

    row = "  {:<%d} {:<29} {}" % w
    print(row.format("", "throughput", f"cpu/{unit} (lower is better)"))
    bf = c["default_to_best_fixed"]
    if c["fastest_fixed"] or c["cheapest_fixed"]:
        print(row.format(f"{name} / best fixed", cell(bf["throughput"], "best_fixed_throughput_min"),
                         cell(bf["cpu_per_request"], "best_fixed_cpu_per_request_max", False)
                         + f"    (fastest fixed: {c['fastest_fixed'] or '-'}, cheapest: {c['cheapest_fixed'] or '-'})"))
    nut = c["default_to_nutcracker"]
    if "nutcracker" in med:
        print(row.format(f"{name} / nutcracker", cell(nut["throughput"], "nutcracker_throughput_min"),
                         cell(nut["cpu_per_request"], "nutcracker_cpu_per_request_max", False)))
    else:
        why = c.get("no_nutcracker_because", "not measured")
        print(row.format(f"{name} / nutcracker", f"- (no nutcracker run: {why})", "").rstrip())
    print(row.format(f"{name} / direct", cell(c["default_to_direct"]["throughput"], "direct_throughput_min"),
                     "").rstrip())
    if "hop_to_direct" in c:
        print(row.format(f"{HOP} / direct", fmt(c["hop_to_direct"], "{:.3f}x"),
                         "(a mature proxy's hop that only forwards bytes: no parsing, routing or batching)"))
        hop = c["default_to_hop"]
        print(row.format(f"{name} / {HOP}", fmt(hop["throughput"], "{:.3f}x"),
                         fmt(hop["cpu_per_request"], "{:.3f}x")))
    counts = c.get("workers")
    if counts:
        print(row.format(f"  rounds, {name}'s workers",
                         " ".join(fmt(n, "{:d}", "changing") for n in counts["workers"]), "").rstrip())
        print(row.format("  rounds, over fixed at that count",
                         " ".join(fmt(v, "{:.3f}x") for v in counts["same_count"]), "").rstrip())
    for key, label in (("best_fixed", f"{name} / best fixed"), ("direct", f"{name} / direct"),
                       ("hop_to_direct", f"{HOP} / direct")):
        vs = (c.get("per_round") or {}).get(key) or []
        if any(v is not None for v in vs):
            print(row.format(f"  rounds, {label}", " ".join(fmt(v, "{:.3f}x") for v in vs), "").rstrip())
    # On a machine whose cores are all busy, throughput goes as the
    # machine's CPU per operation. Through a proxy that cost nothing, that
    # would be the machine's CPU per operation less the proxy's own: the
    # ceiling any proxy reaches against direct here, with these backends.
    d, m = med.get("direct", {}), med.get("memshard", {})
    if d.get("machine_cpu_us") and m.get("machine_cpu_us") and m.get("cpu_us_per_req") is not None:
        rest = m["machine_cpu_us"] - m["cpu_us_per_req"]
        if rest > 0:
            print(row.format("free-proxy ceiling", fmt(d["machine_cpu_us"] / rest, "{:.3f}x"),
                             "(direct's machine cpu/op over memshard's run's, less memshard's own)"))
        # Less only memshard's user-space time: what no change to its own
        # code can pass, its sockets' kernel work staying what it is.
        if m.get("user_cpu_us") is not None:
            rest = m["machine_cpu_us"] - m["user_cpu_us"]
            if rest > 0:
                print(row.format("no-user-space ceiling", fmt(d["machine_cpu_us"] / rest, "{:.3f}x"),
                                 "(the same, less only memshard's user-space cpu)"))


def main():
    out = sys.argv[1]
    meta = json.load(open(os.path.join(out, "meta.json")))
    runs = load_lines(os.path.join(out, "results.jsonl"))
    memory = load_lines(os.path.join(out, "memory.jsonl"))
    syscalls = load_lines(os.path.join(out, "syscalls.jsonl"))
    workloads = meta["workloads"]  # [[id, description], ...]
    global TARGETS
    # memshard-Nt: memshard with --threads N, beside memshard as started
    # without --threads (its default) or, when meta's threads is set, with
    # that. Runs from before fixed_threads had one alt_threads target.
    fixed_ns = meta.get("fixed_threads")
    if fixed_ns is None:
        alt = meta.get("alt_threads", 0)
        fixed_ns = [alt] if alt else []
    fixed = [f"memshard-{n}t" for n in fixed_ns]
    TARGETS = TARGETS + fixed
    proxies = [t for t in TARGETS if t.startswith("memshard")]

    med = {}
    for wid, _ in workloads:
        for t in TARGETS:
            rs = [r["r"] for r in runs if r["workload"] == wid and r["target"] == t and r.get("r")]
            if not rs:
                continue
            med[(wid, t)] = {
                "rps": median([r["rps"] for r in rs]),
                "keys_per_s": median([r["keys_per_s"] for r in rs]),
                "p50_us": median([r["p50_us"] for r in rs]),
                "p99_us": median([r["p99_us"] for r in rs]),
                "cpu_us_per_req": median([r["cpu_us_per_req"] for r in rs]),
                # Split as /proc/PID/stat splits it; absent from older runs.
                "user_us_per_req": median([per_request(r, "cpu_user_s") for r in rs]),
                "kernel_us_per_req": median([per_request(r, "cpu_kernel_s") for r in rs]),
                "runs": len(rs),
            }

    print()
    threads = meta.get("threads")
    print("memshard bench: {rounds} round(s) x {duration} s (+{warmup} s warmup) per run; memshard {ms}{fx}; "
          "loadgen {lg_threads} threads; medians over rounds".format(
              ms=f"--threads {threads}" if threads else "with its default threads (no --threads)",
              fx="".join(f", {t}: --threads {n}" for t, n in zip(fixed, fixed_ns)), **meta))
    print("cpu us/req = the target process's utime+stime over the measured window / requests "
          "(for direct: memcached's own)")
    la = [meta.get("loadavg_start"), meta.get("loadavg_end")]
    if all(v is not None for v in la):
        note = ""
        if max(la) > meta.get("cores", 2):
            note = ("  WARNING: the machine was busy with other work (load above its cores): "
                    "throughput and latency are noisy, cpu/request less so")
        print(f"load average at start {la[0]:.2f}, at end {la[1]:.2f} on {meta.get('cores')} cores{note}")
    probe = meta.get("wake_probe")
    if probe and probe.get("same_cpu"):
        same, cross = probe["same_cpu"], probe.get("cross_cpu")
        line = f"wake-ups here (memshard-wake-probe): a round trip between two processes costs {same['cpu_us']:.2f} us of CPU on one CPU"
        if cross:
            line += f", {cross['cpu_us']:.2f} us across CPUs ({cross['cpu_us'] / max(same['cpu_us'], 0.01):.0f}x)"
        print(line)
    print()
    w_desc = max((len(d) for _, d in workloads), default=0) + 4
    head = "{:<{w}} {:<12} {:>10} {:>10} {:>9} {:>9} {:>11}".format(
        "workload", "target", "req/s", "keys/s", "p50 us", "p99 us", "cpu us/req", w=w_desc)
    for wid, desc in workloads:
        if wid == workloads[0][0]:
            print(head)
            print("-" * len(head))
        first = True
        for t in TARGETS:
            m = med.get((wid, t))
            if not m:
                continue
            label = f"({wid}) {desc}" if first else ""
            first = False
            print("{:<{w}} {:<12} {:>10} {:>10} {:>9} {:>9} {:>11}".format(
                label, t, fmt(m["rps"], "{:.0f}"), fmt(m["keys_per_s"], "{:.0f}"), fmt(m["p50_us"]),
                fmt(m["p99_us"]), fmt(m["cpu_us_per_req"], "{:.2f}"), w=w_desc))
    if workloads:
        print()
        print_cpu_split(workloads, med, proxies, w_desc)

    # The machine drifts between rounds (the direct memcached alone has
    # varied by 1.6x from one round to the next here), while the targets of
    # one round run back to back. So each ratio is taken within a round,
    # and the median of the rounds' ratios is the figure; the ratio of the
    # medians, which mixes rounds, is shown after it in parentheses.
    def three_ratios(m, n, d):
        tput = ratio(m["rps"], n["rps"])
        # A cpu figure of -1 is the load generator's "not measured".
        cpu = ratio(m["cpu_us_per_req"], n["cpu_us_per_req"]) if m["cpu_us_per_req"] >= 0 else None
        added = None
        if d and d["p50_us"] is not None and m["p50_us"] is not None and n["p50_us"] is not None:
            am, an = m["p50_us"] - d["p50_us"], n["p50_us"] - d["p50_us"]
            # A percentile is within ~3% of the truth (memshard-load's
            # histogram), so a latency nutcracker adds that is smaller than
            # two such steps of direct's p50 is no denominator: the ratio
            # would be noise divided by noise (seen: -9.7x on (f)).
            added = am / an if an > 2 * ADDED_P50_RESOLUTION * d["p50_us"] else None
        return {"throughput": tput, "cpu_per_request": cpu, "added_p50_over_direct": added}

    def run_of(wid, t, rnd):
        for r in runs:
            if r["workload"] == wid and r["target"] == t and r["round"] == rnd and r.get("r"):
                return r["r"]
        return None

    ratios, ratios_of_medians = {}, {}
    keys = ["throughput", "cpu_per_request", "added_p50_over_direct"]
    for proxy in proxies if workloads else []:
        ratios[proxy], ratios_of_medians[proxy] = {}, {}
        head = "{:<{w}} {:>16} {:>16} {:>22}".format(
            f"{proxy} / nutcracker", "throughput", "cpu/request", "added p50 over direct", w=w_desc)
        print(head)
        print("-" * len(head))
        for wid, desc in workloads:
            m, n, d = med.get((wid, proxy)), med.get((wid, "nutcracker")), med.get((wid, "direct"))
            if not m or not n:
                continue
            of_medians = three_ratios(m, n, d)
            per_round = []
            for rnd in sorted({r["round"] for r in runs if r["workload"] == wid}):
                rm, rn = run_of(wid, proxy, rnd), run_of(wid, "nutcracker", rnd)
                if rm and rn:
                    per_round.append(three_ratios(rm, rn, run_of(wid, "direct", rnd)))
            # Not median(): a ratio of added latency is negative when memshard's
            # p50 is below direct's, and that must count.
            paired = {k: statistics.median(v) if (v := [x[k] for x in per_round if x[k] is not None]) else None
                      for k in keys}
            ratios[proxy][wid], ratios_of_medians[proxy][wid] = paired, of_medians
            cells = [fmt(paired[k], "{:.2f}x") + " (" + fmt(of_medians[k], "{:.2f}x") + ")" for k in keys]
            print("{:<{w}} {:>16} {:>16} {:>22}".format(f"({wid}) {desc}", *cells, w=w_desc))
        print()
    if workloads:
        print("(median of the rounds' ratios, and in parentheses the ratio of the medians above;")
        print(" throughput > 1: memshard faster; cpu/request < 1: memshard cheaper; "
              "added p50 < 1: memshard adds less latency than nutcracker; '-' when nutcracker's p50 is not above "
              "direct's by more than the latency histogram's resolution, twice over (6%))")

    # Binary workloads against the text workload of the same shape, through
    # the same target in the same invocation: per round, then the median.
    twins = meta.get("text_twins", {})
    binary_ratios = {}
    pairs = [(b, twins[b]) for b, _ in workloads if b in twins]
    if pairs:
        print()
        shown = ["direct"] + proxies
        cols = " ".join(["{:>16}"] * len(shown))
        head = ("{:<{w}} " + cols).format("binary / text throughput", *shown, w=w_desc)
        print(head)
        print("-" * len(head))
        for b, a in pairs:
            cells = []
            for t in shown:
                per_round = []
                for rnd in sorted({r["round"] for r in runs if r["workload"] == b}):
                    rb, ra = run_of(b, t, rnd), run_of(a, t, rnd)
                    if rb and ra:
                        per_round.append(ratio(rb["rps"], ra["rps"]))
                per_round = [x for x in per_round if x is not None]
                v = statistics.median(per_round) if per_round else None
                binary_ratios.setdefault(t, {})[f"{b}/{a}"] = v
                mark = ""
                if v is not None and t.startswith("memshard"):
                    mark = " ok" if v >= 0.9 else " LOW"
                cells.append(fmt(v, "{:.2f}x") + mark)
            label = f"({b}) / ({a})" + ("" if any(w == a for w, _ in workloads) else " (no (" + a + ") run)")
            print(("{:<{w}} " + cols).format(label, *cells, w=w_desc))
        print("(median of the rounds' ratios of req/s; target: memshard's binary throughput within 10% of its "
              "text throughput, >= 0.90x; printed, never asserted; direct: memcached's own binary/text ratio)")

    memcaslap = load_lines(os.path.join(out, "memcaslap.jsonl"))
    memcaslap_ratio = None
    if memcaslap:
        tps = {p: median([m["tps"] for m in memcaslap if m["protocol"] == p and m.get("tps") is not None])
               for p in ("text", "binary")}
        memcaslap_ratio = ratio(tps["binary"], tps["text"])
        print()
        print(f"memcaslap through memshard (32 conns, 100-byte values, its 90/10 mix): text "
              f"{fmt(tps['text'], '{:.0f}')} ops/s, --binary {fmt(tps['binary'], '{:.0f}')} ops/s: "
              f"binary / text {fmt(memcaslap_ratio, '{:.2f}x')} (target >= 0.90x, not asserted)")

    if syscalls:
        print()
        print("syscalls per request made by the target process (perf stat raw_syscalls:sys_enter, separate run)")
        cols = " ".join(["{:>12}"] * len(TARGETS))
        head = ("{:<{w}} " + cols).format("workload", *TARGETS, w=w_desc)
        print(head)
        print("-" * len(head))
        for wid, desc in workloads:
            row = {s["target"]: s for s in syscalls if s["workload"] == wid}
            if not row:
                continue
            cells = []
            for t in TARGETS:
                s = row.get(t)
                cells.append(fmt(s["syscalls"] / s["requests"] if s and s["requests"] else None, "{:.2f}"))
            print(("{:<{w}} " + cols).format(f"({wid}) {desc}", *cells, w=w_desc))
        if any(s.get("by") for s in syscalls):
            print()
            print("per request, by syscall (cs = context switches, of which slept: waited for work, and preempted:")
            print(" made to give way, typically to a process it had just woken; pf = page faults of the target process;")
            print(" woke = wake-ups it made, ipi = interrupts it sent to another CPU, mostly to wake a task there)")
            for wid, desc in workloads:
                for t in TARGETS:
                    s = next((s for s in syscalls if s["workload"] == wid and s["target"] == t), None)
                    if not s or not s["requests"]:
                        continue
                    n = s["requests"]
                    parts = [f"{k} {v / n:.2f}" for k, v in s.get("by", {}).items() if v / n >= 0.005]
                    if s.get("context_switches") is not None:
                        parts.append(f"cs {s['context_switches'] / n:.2f}")
                    if s.get("slept") is not None:
                        parts.append(f"(slept {s['slept'] / n:.2f}, preempted {s['preempted'] / n:.2f})")
                    if s.get("page_faults") is not None:
                        parts.append(f"pf {s['page_faults'] / n:.2f}")
                    if s.get("woke") is not None:
                        parts.append(f"woke {s['woke'] / n:.2f}")
                    if s.get("ipis") is not None:
                        parts.append(f"ipi {s['ipis'] / n:.3f}")
                    print("  ({}) {:<12} {}".format(wid, t, "  ".join(parts)))

    memory_ratios = {}
    if memory:
        # Two modes (scripts/bench): "staggered", each idle connection sends its
        # get as soon as it has connected (few requests in flight at once), and
        # "burst", all connect first and then all send at once. Lines written
        # before the modes existed are staggered ones.
        modes = [m for m in MEMORY_MODES if any(row.get("mode", "staggered") == m for row in memory)]
        print()
        head = "{:<24} {:>9} {:>10} {:>8} {:>11} {:>8} {:>12}".format(
            f"memory, {memory[0]['conns']} conns", "base KB", "held KB", "KB/conn", "settled KB",
            "KB/conn", "closed KB")
        print(head)
        print("-" * len(head))
        per, per_settled = {}, {}
        for t in ["nutcracker", "memshard"]:
            for mode in modes:
                for mrow in memory:
                    if mrow["target"] != t or mrow.get("mode", "staggered") != mode:
                        continue
                    n = mrow["conns"]
                    kb = (mrow["loaded_kb"] - mrow["base_kb"]) / n if n else None
                    # Lines written before the settled reading existed lack it.
                    settled = mrow.get("settled_kb")
                    kb_settled = (settled - mrow["base_kb"]) / n if n and settled is not None else None
                    per[(t, mode)] = kb
                    per_settled[(t, mode)] = kb_settled
                    print("{:<24} {:>9} {:>10} {:>8} {:>11} {:>8} {:>12}".format(
                        f"{t}, {mode}", mrow["base_kb"], mrow["loaded_kb"], fmt(kb, "{:.2f}"),
                        settled if settled is not None else "-", fmt(kb_settled, "{:.2f}"),
                        mrow.get("after_kb", "-")))
        for mode in modes:
            r = ratio(per.get(("memshard", mode)), per.get(("nutcracker", mode)))
            rs = ratio(per_settled.get(("memshard", mode)), per_settled.get(("nutcracker", mode)))
            memory_ratios[mode] = r
            memory_ratios[mode + "_settled"] = rs
            print(f"memshard / nutcracker KB per connection, {mode}: held {fmt(r, '{:.2f}x')}, "
                  f"settled {fmt(rs, '{:.2f}x')}")
        print("(held: 0.5 s after the last connection's reply; settled: after they idled a few "
              "seconds more, when memshard has parked them)")
        print("(staggered: each connection sends its get once connected, few in flight at once; "
              "burst: all connect, then all send at once)")

    # memshard's default parallelism (issue 25): every workload, then every
    # memcaslap client shape, against the fixed thread counts, nutcracker
    # and direct; ratios of the medians over rounds.
    shapes_runs = load_lines(os.path.join(out, "memcaslap_shapes.jsonl"))
    default_cases = {"workloads": {}, "memcaslap_shapes": {}}
    name = "default" if not threads else f"memshard (--threads {threads})"
    cases = []
    # Per round and load: the default over the fixed target faster by median.
    pooled_runs = {"workloads": [], "memcaslap_shapes": []}
    # The default's worker count over each measured run, from its log: only
    # an adaptive default (no --threads, or more than one) has one to read.
    log_path = os.path.join(out, "memshard.log")
    log_changes = None
    if os.path.exists(log_path) and (not threads or threads > 1):
        log_changes = worker_counts.changes(log_path)
    for wid, desc in workloads:
        per_target = {t: {"rps": m["rps"], "cpu_us_per_req": m["cpu_us_per_req"]}
                      for t in TARGETS if (m := med.get((wid, t)))}
        if "memshard" not in per_target:
            continue
        c = default_case(wid, per_target, fixed)
        default_cases["workloads"][wid] = c
        if log_changes is not None:
            c["workers"] = counts_by_round(
                {r["round"]: (r.get("measured"), r["r"]["rps"]) for r in runs
                 if r["workload"] == wid and r["target"] == "memshard" and r.get("r")},
                {t: {r["round"]: r["r"]["rps"] for r in runs if r["workload"] == wid and r["target"] == t
                     and r.get("r")} for t in fixed},
                c["fastest_fixed"], per_target, log_changes)
        if c["fastest_fixed"]:
            for rnd in sorted({r["round"] for r in runs if r["workload"] == wid}):
                rd, rf = run_of(wid, "memshard", rnd), run_of(wid, c["fastest_fixed"], rnd)
                if rd and rf:
                    pooled_runs["workloads"].append(ratio(rd["rps"], rf["rps"]))
        if wid in twins:
            c["no_nutcracker_because"] = "it speaks text only"
        cases.append((f"({wid}) {desc} (memshard-load)", "req", c))
    for shape in dict.fromkeys(x["shape"] for x in shapes_runs):  # in the order they ran
        # The arguments scripts/bench gave memcaslap for this shape, as it wrote them.
        args = next((x["args"] for x in shapes_runs if x["shape"] == shape and x.get("args")), None)
        cmd = f"memcaslap {args}" if args else f"memcaslap ({shape})"
        per_target = {}
        for t in TARGETS + [HOP]:
            rs = [x for x in shapes_runs if x["shape"] == shape and x["target"] == t and x.get("tps") is not None]
            if rs:
                per_target[t] = {"rps": median([x["tps"] for x in rs]),
                                 "cpu_us_per_req": median([x.get("cpu_us_per_op") for x in rs]), "runs": len(rs),
                                 "backends_cpu_us": median([x.get("backends_cpu_us_per_op") for x in rs]),
                                 "machine_cpu_us": median([x.get("machine_cpu_us_per_op") for x in rs]),
                                 "user_cpu_us": median([x.get("user_cpu_us_per_op") for x in rs]),
                                 "server_reads": median([x.get("server_reads_per_op") for x in rs]),
                                 "server_sleeps": median([x.get("server_sleeps_per_op") for x in rs])}
                lat = [memcaslap_latency.latency(x["log"]) for x in rs if x.get("log")]
                lat = [x for x in lat if x]
                per_target[t]["p50_us"] = median([x["p50_us"] for x in lat])
                per_target[t]["p99_us"] = median([x["p99_us"] for x in lat])
        if "memshard" not in per_target:
            continue
        c = default_case(f"memcaslap {shape}", per_target, fixed)
        c["per_round"] = per_round_ratios(shape, shapes_runs, fixed, c["fastest_fixed"])
        if log_changes is not None:
            ok = [x for x in shapes_runs if x["shape"] == shape and x.get("tps") is not None]
            c["workers"] = counts_by_round(
                {x["round"]: (x.get("measured"), x["tps"]) for x in ok if x["target"] == "memshard"},
                {t: {x["round"]: x["tps"] for x in ok if x["target"] == t} for t in fixed},
                c["fastest_fixed"], per_target, log_changes)
        pooled_runs["memcaslap_shapes"] += [x for x in c["per_round"]["fastest_fixed"] if x is not None]
        default_cases["memcaslap_shapes"][shape] = c
        cases.append((f"memcaslap {shape}: {cmd} -X 100, its 90/10 gets/sets "
                      f"(+{meta.get('memcaslap_warmup', 0)} s unmeasured warm-up each)", "op", c))
    if cases:
        print()
        print(f"memshard's default parallelism: {name} beside "
              + (", ".join(fixed) if fixed else "no fixed thread counts") + ", nutcracker and direct")
        print("(medians over rounds, and ratios of the medians; best fixed: throughput over the fastest fixed")
        print(" target's, cpu per request over the cheapest one's; the issue's targets in parentheses, printed,")
        print(" never asserted)")
        for title, unit, c in cases:
            print()
            print_default_case(title, unit, c, [t for t in TARGETS + [HOP] if t in c["medians"]], name)
        together = {k: pooled(v) for k, v in pooled_runs.items()}
        default_cases["pooled"] = together
        if any(together.values()):
            print()
            print(f"{name} over the fixed setting faster by median, each round and load together (one load's "
                  f"median above is a draw from this spread):")
            print_pooled("memshard-load's workloads", together["workloads"])
            print_pooled("memcaslap's loads", together["memcaslap_shapes"])
        if log_changes is not None:
            counted = {k: counts_together([c["workers"] for c in default_cases[k].values() if c.get("workers")])
                       for k in ("workloads", "memcaslap_shapes")}
            default_cases["worker_counts"] = counted
            if any(t["runs"] for t in counted.values()):
                print()
                print(f"{name}'s worker count while each run was measured (memshard.log), each round and "
                      f"load together: did it choose the faster count, and what did it cost at that count?")
            print_counts_together("memshard-load's workloads", counted["workloads"], name)
            print_counts_together("memcaslap's loads", counted["memcaslap_shapes"], name)
        failed_shapes = [x for x in shapes_runs if x.get("rc", 0) != 0]
        if failed_shapes:
            print()
            print(f"{len(failed_shapes)} memcaslap run(s) exited non-zero or printed no TPS:")
            for x in failed_shapes:
                print(f"  {x['shape']} on {x['target']} round {x['round']}: exit {x['rc']}, see {x['log']}")

    failures = [r for r in runs if r["rc"] != 0] + [m for m in memory if m.get("rc", 0) != 0]
    print()
    if failures:
        print(f"{len(failures)} loadgen run(s) FAILED (errors, wrong values or connection failures):")
        for f in failures:
            what = f.get("workload") or f"memory ({f.get('mode', 'staggered')})"
            print(f"  workload {what} target {f['target']} round {f.get('round', '-')}"
                  f" exit {f['rc']}: see {f.get('log', '')}")
    else:
        print(f"all {len(runs) + len(memory)} loadgen runs verified every value: no errors")

    with open(os.path.join(out, "summary.json"), "w") as f:
        json.dump({"meta": meta, "medians": {f"{w}/{t}": v for (w, t), v in med.items()},
                   "ratios_memshard_to_nutcracker": ratios,
                   "ratios_of_medians_memshard_to_nutcracker": ratios_of_medians, "memory": memory,
                   "memory_kb_per_conn_ratio_memshard_to_nutcracker": memory_ratios, "syscalls": syscalls,
                   "binary_to_text_throughput": binary_ratios, "memcaslap": memcaslap,
                   "memcaslap_binary_to_text": memcaslap_ratio, "memcaslap_shapes": shapes_runs,
                   "default_parallelism": default_cases,
                   "failures": len(failures)}, f, indent=1)


if __name__ == "__main__":
    main()
