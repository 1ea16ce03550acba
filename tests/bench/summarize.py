#!/usr/bin/env python3
"""Summarizes a scripts/bench run: medians over rounds per workload and target,
memshard's ratios to nutcracker, memory per idle connection (staggered and
burst requests), syscalls per request.

    summarize.py OUT_DIR

reads OUT_DIR/results.jsonl (one line per loadgen run), OUT_DIR/memory.jsonl
and OUT_DIR/syscalls.jsonl (both optional), OUT_DIR/meta.json; prints the
tables and writes OUT_DIR/summary.json.
"""
import json
import os
import statistics
import sys

TARGETS = ["direct", "nutcracker", "memshard"]
MEMORY_MODES = ["staggered", "burst"]
# How close a reported latency percentile is to the true value: memshard-load's
# histogram has 32 linear steps per power of two (tests/bench/loadgen_hist.h).
ADDED_P50_RESOLUTION = 0.03


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


def main():
    out = sys.argv[1]
    meta = json.load(open(os.path.join(out, "meta.json")))
    runs = load_lines(os.path.join(out, "results.jsonl"))
    memory = load_lines(os.path.join(out, "memory.jsonl"))
    syscalls = load_lines(os.path.join(out, "syscalls.jsonl"))
    workloads = meta["workloads"]  # [[id, description], ...]
    global TARGETS
    alt = meta.get("alt_threads", 0)
    if alt:
        TARGETS = TARGETS + [f"memshard-{alt}t"]
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
    print("memshard bench: {rounds} round(s) x {duration} s (+{warmup} s warmup) per run; memshard --threads {threads}{alt}; "
          "loadgen {lg_threads} threads; medians over rounds".format(
              alt=f" (memshard-{alt}t: --threads {alt})" if alt else "", **meta))
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
    w_desc = max(len(d) for _, d in workloads) + 4
    head = "{:<{w}} {:<12} {:>10} {:>10} {:>9} {:>9} {:>11}".format(
        "workload", "target", "req/s", "keys/s", "p50 us", "p99 us", "cpu us/req", w=w_desc)
    print(head)
    print("-" * len(head))
    for wid, desc in workloads:
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
    for proxy in proxies:
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
    print("(median of the rounds' ratios, and in parentheses the ratio of the medians above;")
    print(" throughput > 1: memshard faster; cpu/request < 1: memshard cheaper; "
          "added p50 < 1: memshard adds less latency than nutcracker; '-' when nutcracker's p50 is not above direct's "
          "by more than the latency histogram's resolution, twice over (6%))")

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
                   "memcaslap_binary_to_text": memcaslap_ratio,
                   "failures": len(failures)}, f, indent=1)


if __name__ == "__main__":
    main()
