#!/usr/bin/env bash
# openloop_smoke (ctest): memshard-openloop against a real memcached and
# through memshard, in its three protocols, its idle connections and its
# closed loop; every run must exit 0 and print the report the bench reads.
# A run whose values are wrong, or whose server is gone, must exit
# non-zero. No timing assertions.
#   openloop_smoke.sh MEMSHARD MEMSHARD_OPENLOOP
set -euo pipefail
memshard=${MEMSHARD_BINARY:-$1}
openloop=$2
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
"$memshard" -c "$tmp/smoke.yml" -s 0 -o "$tmp/memshard.log" &
memshard_pid=$!
pids+=($!)
wait_port "$px"

step() { echo "== openloop_smoke: $*"; }
# check JSON FIELD=VALUE...: the report is one JSON line with these values.
check() {
  python3 - "$@" <<'PY'
import json, sys
r = json.loads(open(sys.argv[1]).read().splitlines()[-1])
for want in sys.argv[2:]:
    k, v = want.split("=")
    assert str(r[k]) == v, (k, r[k], v)
lat = r["latency_us"]["all"]
assert lat["count"] == r["measured"] > 0, r
assert lat["p50"] <= lat["p90"] <= lat["p99"] <= lat["p999"] <= lat["max"], lat
assert r["errors"] == 0 and r["misses"] == 0 and r["hits"] > 0, r
assert len(r["windows"]) >= 2 and sum(w["count"] for w in r["windows"]) >= lat["count"], r["windows"]
print("ok:", r["protocol"], r["mode"], "measured", r["measured"], "p50", lat["p50"], "us")
PY
}

for proto in text meta binary; do
  step "$proto, 10-key multi-gets and sets, through memshard (must pass)"
  "$openloop" -p "$px" -P "$proto" --rate 2000 -c 8 -m 10 -g 0.9 -k 500 -D 1 --warmup 0.3 --window 0.5 \
    --json >"$tmp/$proto.json"
  check "$tmp/$proto.json" protocol="$proto" mode=open
done

step "direct memcached, 100 idle connections every 0.2-0.4 s beside 4 busy ones (must pass)"
"$openloop" -p "$mc1" --rate 1000 -c 4 --idle-conns 100 --idle-interval 0.2-0.4 -k 500 -D 1 --warmup 0.2 \
  --json >"$tmp/idle.json"
check "$tmp/idle.json" idle_conns=100
python3 - "$tmp/idle.json" <<'PY'
import json, sys
r = json.loads(open(sys.argv[1]).read())
assert r["latency_us"]["idle"]["count"] > 100 and r["latency_us"]["busy"]["count"] > 0, r["latency_us"]
PY

step "closed loop through memshard, capped at 3,000 requests (must pass)"
"$openloop" -p "$px" --closed -c 4 -k 500 -D 2 --warmup 0 -n 3000 --json >"$tmp/closed.json"
check "$tmp/closed.json" mode=closed
python3 -c 'import json,sys; r=json.load(open(sys.argv[1])); assert r["dispatched"] <= 3000, r' "$tmp/closed.json"

step "text report (must pass)"
"$openloop" -p "$px" --rate 500 -c 2 -k 100 -D 0.3 --warmup 0 | tee "$tmp/text.out"
grep -q "p99.9" "$tmp/text.out"

step "values written under another seed read back wrong (must fail)"
"$openloop" -p "$mc2" --rate 500 -c 2 -k 100 -D 0.2 --warmup 0 --seed 7 >/dev/null
rc=0
"$openloop" -p "$mc2" --rate 500 -c 2 -k 100 -D 0.3 --warmup 0 --seed 8 --no-populate -g 1 \
  >/dev/null 2>"$tmp/wrong.err" || rc=$?
[ "$rc" -eq 1 ] || { echo "expected exit 1 for wrong values, got $rc" >&2; exit 1; }
grep -q "wrong values" "$tmp/wrong.err"

step "a server that is gone (must fail)"
dead=$(free_port)
rc=0
"$openloop" -p "$dead" --rate 100 -c 1 -D 0.2 --warmup 0 >/dev/null 2>&1 || rc=$?
[ "$rc" -ne 0 ] || { echo "expected a failure against a closed port" >&2; exit 1; }

step "bad usage (exit 2)"
rc=0
"$openloop" -p "$px" --rate 10 --idle-conns 100 -D 0.2 >/dev/null 2>&1 || rc=$?
[ "$rc" -eq 2 ] || { echo "expected exit 2 when the idle connections alone exceed --rate, got $rc" >&2; exit 1; }
kill -0 "$memshard_pid"
echo "openloop_smoke: all passed"
