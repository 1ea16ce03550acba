#!/usr/bin/env bash
# bench_options_test (ctest): scripts/bench refuses a memcaslap shape it
# cannot run, before building or starting anything, with exit code 2 and
# the shape named.
#   options_test.sh SOURCE_DIR
set -uo pipefail
bench=$1/scripts/bench
for shape in 2y16 x16 2x 1x32d 0x4 "" "1x32,,2x16"; do
  out=$("$bench" --memcaslap-loads --memcaslap-shapes "$shape" --no-build --build-dir /nonexistent 2>&1)
  rc=$?
  if [ "$rc" -ne 2 ] || ! grep -q "bad memcaslap shape" <<<"$out"; then
    echo "--memcaslap-shapes '$shape': exit $rc, output: $out" >&2
    exit 1
  fi
done
echo "every bad shape refused"
