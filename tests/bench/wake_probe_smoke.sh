#!/usr/bin/env bash
# wake_probe_smoke: memshard-wake-probe measures both cases it can here and
# reports them as scripts/bench reads them (JSON, positive times). No timing
# assertions: only that the numbers exist and are times.
set -euo pipefail
probe=$1
json=$("$probe" --json -n 500)
echo "$json"
python3 - "$json" "$(nproc)" <<'PY'
import json, sys
r = json.loads(sys.argv[1])
cpus = int(sys.argv[2])
assert r["round_trips"] == 500, r
for case in ["same_cpu"] + (["cross_cpu"] if cpus > 1 else []):
    c = r[case]
    assert c is not None, f"{case} not measured"
    assert c["wall_us"] > 0 and c["cpu_us"] > 0, c
    # the CPU a process spends can not exceed the time that passed
    assert c["cpu_us"] <= c["wall_us"] * 1.05 + 1, c
if cpus == 1:
    assert r["cross_cpu"] is None, r
PY
# Bad usage is refused, not measured.
if "$probe" -n 5 >/dev/null 2>&1; then
  echo "memshard-wake-probe accepted -n 5 (below its minimum of 100)" >&2
  exit 1
fi
echo "wake_probe_smoke: ok"
