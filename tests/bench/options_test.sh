#!/usr/bin/env bash
# bench_options_test (ctest): scripts/bench refuses a memcaslap shape it
# cannot run, and --default-fixed without --threads, before building or
# starting anything, with exit code 2 and what is wrong named.
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
# A copy of a fixed setting in the default's place needs its count.
out=$("$bench" --interleave --default-fixed --no-build --build-dir /nonexistent 2>&1)
rc=$?
if [ "$rc" -ne 2 ] || ! grep -q -- "--default-fixed needs --threads N" <<<"$out"; then
  echo "--default-fixed without --threads: exit $rc, output: $out" >&2
  exit 1
fi
echo "every bad shape refused, and --default-fixed without a count"
