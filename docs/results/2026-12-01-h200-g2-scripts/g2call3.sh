#!/usr/bin/env bash
# g2-last call 4: where a gemv step's time goes (clock sums of thread 0 and thread 32, trace words 40-47)
set -u
B=.gpu-build
mkdir -p $OUT/ab
cp $B/provenance.txt $OUT/ab/
date -u > $OUT/ab/date.txt; nvidia-smi --query-gpu=name,serial,driver_version,clocks.max.sm --format=csv >> $OUT/ab/date.txt
for v in off 66; do for s in 1x1 2x4 8x1; do
  MONOKDA_TRACE=$OUT/ab/dtrace-$s-$v.txt timeout 60 $B/monokda-diag bench --shapes $s --reps 10 --no-stages --g2-last $v -o /tmp/t.json > /dev/null 2>&1; echo "trace $s $v rc $?"
done; done
date -u >> $OUT/ab/date.txt
cd $OUT && tar czf res.tgz ab && rm -rf ab
