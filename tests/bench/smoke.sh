#!/usr/bin/env bash
# bench_smoke (ctest): memshard-load through memshard against a real memcached.
#   smoke.sh MEMSHARD MEMSHARD_LOAD
# Positive runs (pipelined multi-gets and sets, large values, idle + busy
# connections, idle connections whose gets all go at once, binary protocol)
# must exit 0; runs
# whose values are wrong, or whose server is gone, must exit non-zero. No
# timing assertions.
set -euo pipefail
# MEMSHARD_BINARY wins: scripts/test-sanitized runs this against another build.
memshard=${MEMSHARD_BINARY:-$1}
load=$2
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=tests/bench/lib.sh
source "$here/lib.sh"

tmp=$(mktemp -d)
pids=()
cleanup() {
  local p
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
  rm -rf "$tmp"
}
trap cleanup EXIT

mc1=$(free_port)
mc2=$(free_port)
# shellcheck disable=SC2046
memcached -l 127.0.0.1 -p "$mc1" -t 1 -U 0 -m 64 $(memcached_user_args) &
pids+=($!)
# shellcheck disable=SC2046
memcached -l 127.0.0.1 -p "$mc2" -t 1 -U 0 -m 64 $(memcached_user_args) &
pids+=($!)
wait_port "$mc1"
wait_port "$mc2"
px=$(free_port)
write_pool_config "$tmp/smoke.yml" smoke "$px" "$mc1" "$mc2"
# No stats port: the default (22222) is the demo's, which readme_commands
# holds while it runs, and ctest runs the two side by side.
"$memshard" -c "$tmp/smoke.yml" --threads 2 -s 0 -o "$tmp/memshard.log" &
memshard_pid=$!
pids+=($!)
wait_port "$px"

step() { echo "== bench_smoke: $*"; }

step "pipelined 10-key multi-gets and sets through memshard (must pass)"
"$load" -p "$px" -t 2 -c 8 -d 16 -m 10 -g 0.8 -k 2000 -D 2 --timeout 10

step "16 KiB values, pipelined (must pass)"
"$load" -p "$px" -t 2 -c 4 -d 4 -s 16384 -k 500 -D 0.5 --timeout 10

step "200 idle connections and 2 busy ones, --json, memshard's cpu split (must pass)"
"$load" -p "$px" -c 2 --idle 200 -k 2000 -D 0.5 --json --cpu-pid "$memshard_pid" >"$tmp/out.json"
# The run made memshard work, so it spent cpu; its user and kernel parts
# (utime, stime) are what the total is made of.
python3 - "$tmp/out.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
assert r["ok"] is True, r
assert r["requests"] > 0 and r["cpu_s"] > 0, r
assert r["cpu_user_s"] >= 0 and r["cpu_kernel_s"] >= 0, r
assert abs(r["cpu_user_s"] + r["cpu_kernel_s"] - r["cpu_s"]) < 0.001, r
PY

step "300 idle connections whose gets are all sent at once, --idle-burst (must pass)"
"$load" -p "$px" -c 0 --idle 300 --idle-burst -k 2000 -D 0.2 --timeout 10

step "a request-count run (must pass)"
"$load" -p "$px" -c 4 -d 4 -n 2000 -D 30 -k 2000

step "binary protocol: single-key and pipelined 10-key multi-gets and sets through memshard (must pass)"
"$load" -p "$px" -t 2 -c 8 -k 2000 -D 0.5 --timeout 10 --protocol binary --key-prefix bin:
"$load" -p "$px" -t 2 -c 8 -d 16 -m 10 -g 0.8 -k 2000 -D 0.5 --timeout 10 --protocol binary --key-prefix bin:

step "binary protocol: values populated with another seed, and keys never populated (must fail)"
if "$load" -p "$px" -c 2 -m 4 -g 1 -k 2000 -D 0.5 --protocol binary --populate-seed 99 --max-error-lines 2; then
  echo "bench_smoke: FAILED: wrong binary values were not detected" >&2
  exit 1
fi
if "$load" -p "$px" -c 2 -g 1 -k 2000 -D 0.5 --protocol binary --no-populate --key-prefix never-bin: --max-error-lines 2; then
  echo "bench_smoke: FAILED: binary misses were not detected" >&2
  exit 1
fi

step "values populated with another seed (must fail)"
if "$load" -p "$px" -c 2 -m 4 -g 1 -k 2000 -D 0.5 --populate-seed 99 --max-error-lines 2; then
  echo "bench_smoke: FAILED: wrong values were not detected" >&2
  exit 1
fi

step "values populated with another seed, read by an --idle-burst (must fail)"
if "$load" -p "$px" -c 0 --idle 50 --idle-burst -k 2000 -D 0.2 --populate-seed 99 --max-error-lines 2; then
  echo "bench_smoke: FAILED: wrong values read by the burst were not detected" >&2
  exit 1
fi

step "values populated with another size (must fail)"
if "$load" -p "$px" -c 2 -g 1 -k 2000 -D 0.5 --populate-size 99 --max-error-lines 2; then
  echo "bench_smoke: FAILED: wrong value sizes were not detected" >&2
  exit 1
fi

step "keys never populated (misses must fail)"
if "$load" -p "$px" -c 2 -g 1 -k 2000 -D 0.5 --no-populate --key-prefix never-set: --max-error-lines 2; then
  echo "bench_smoke: FAILED: misses were not detected" >&2
  exit 1
fi

step "nothing listening (must fail)"
dead=$(free_port)
if "$load" -p "$dead" -c 2 -D 0.5 --max-error-lines 2; then
  echo "bench_smoke: FAILED: connection failures were not detected" >&2
  exit 1
fi

echo "bench_smoke: ok"
