#!/usr/bin/env bash
# Kernel v2's de-risking probes in one device call (docs/kernel-v2.md): the GPU, then the in_proj
# probe (residency, stream rate, in_proj, late x, the proj check), the hop probe, the recurrence
# probe and the tail probe (the tail from the plan, bit for bit the reference's, with seam teams of 10 and 2 warps), each log under OUT, and the SASS facts the go/no-go leans on (matrix and fence instructions).
#   BIN  folder holding the four probe binaries (default .gpu-build/bench)
#   OUT  where the logs go (the device tool's $OUT)
set -uo pipefail
bin=${BIN:-.gpu-build/bench}
out=${OUT:?set OUT}
mkdir -p "$out"
nvidia-smi --query-gpu=name,serial,driver_version,clocks.sm,clocks.max.sm,clocks.mem --format=csv >"$out/gpu.txt" 2>&1
cat "$out/gpu.txt"
rc=0
"$bin/monokda-v2-inproj-probe" all 20 2>&1 | tee "$out/inproj.log" || rc=1
"$bin/monokda-v2-hop-probe" 20 2>&1 | tee "$out/hop.log" || rc=1
"$bin/monokda-v2-rec-probe" 10 2>&1 | tee "$out/rec.log" || rc=1
"$bin/monokda-v2-tail-probe" 20 team=10,2 2>&1 | tee "$out/tail.log" || rc=1
for p in inproj hop rec tail; do
  cuobjdump --dump-sass "$bin/monokda-v2-$p-probe" >"$out/sass-$p.txt" 2>&1
  echo "$p SASS: $(grep -c HMMA "$out/sass-$p.txt") HMMA, $(grep -c MEMBAR "$out/sass-$p.txt") MEMBAR ($(grep -o 'MEMBAR[.A-Z]*' "$out/sass-$p.txt" | sort | uniq -c | tr '\n' ' '))"
done
md5sum "$bin"/monokda-v2-*-probe
exit $rc
