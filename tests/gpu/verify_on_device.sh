#!/usr/bin/env bash
# `monokda verify` on the GPU kernel's own outputs, on a machine with a device, from a build folder
# made elsewhere: one k3 fixture a case (the fixture generator's partial null columns and scale
# profiles among them), the kernel's output with its hand-offs, the verdict and JSON report to $OUT.
# Usage: tests/gpu/verify_on_device.sh BUILD_DIR. Exit 1 when a verdict fails.
set -uo pipefail
B=$1
OUT=${OUT:-/tmp/monokda-out}
mkdir -p "$OUT"
rc=0
i=0
while read -r shape; do
  i=$((i + 1)); f=/tmp/v$i.safetensors; g=/tmp/v$i-gpu.safetensors
  echo "=== verify case $i: $shape" | tee -a "$OUT/verify.log"
  "$B/monokda" fixture --config k3 $shape -o $f >/dev/null || { rc=1; continue; }
  timeout 120 "$B/monokda" gpu $f -o $g >> "$OUT/verify.log" 2>&1 || { echo "gpu run failed" | tee -a "$OUT/verify.log"; rc=1; continue; }
  # the kernel's in_proj runs on the matrix unit: SPEC §5's 99.5 % floor for that stage
  timeout 300 "$B/monokda" verify $f $g --in-proj tensor-cores --report "$OUT/verify-$i.json" > /tmp/v.txt 2>&1
  r=$?; grep -vE '^PASS' /tmp/v.txt | tee -a "$OUT/verify.log"; echo "exit $r" | tee -a "$OUT/verify.log"
  [ $r = 0 ] || rc=1
done <<'CASES'
--R 1 --L 1 --nb 1
--R 2 --L 4 --nb 4 --block-write
--R 4 --L 4 --nb 5 --partial-nulls 2 --seed 7
--R 8 --L 8 --nb 8 --partial-nulls 3 --seed 8
--R 2 --L 4 --nb 4 --scale attnres-large --seed 9
--R 2 --L 4 --nb 4 --scale prefix-large --seed 10
--R 2 --L 4 --nb 4 --scale norm-tiny --seed 11
--R 2 --L 4 --nb 4 --scale gate-low --seed 12
--R 64 --L 1 --nb 3 --block-write --layout ds --null-requests 4
CASES
exit $rc
