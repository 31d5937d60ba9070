#!/usr/bin/env bash
# call 11: the A/B of call 10 again (77b3cd8 against 813d18c), on another machine
set -u
B=.gpu-build; M=$B/monokda
mkdir -p $OUT/ab $OUT/sw $OUT/ct $OUT/sa /tmp/fx
cp $B/provenance.txt $OUT/ab/
date -u > $OUT/ab/date.txt; nvidia-smi --query-gpu=name,serial,driver_version --format=csv >> $OUT/ab/date.txt
echo "== AB"
SH=1x1,2x1,1x2,1x4,2x2,4x1,1x8,2x4,8x1,3x4,12x1,15x1,2x8,4x4,16x1,3x8,8x4,32x1,8x8,16x4,64x1
for r in 1 2 3; do
  for v in base new; do
    bin=$B/monokda-$v; [ $v = new ] && bin=$M
    timeout 200 $bin bench --shapes $SH --reps 30 --no-stages -o $OUT/ab/r$r-$v.json > $OUT/ab/r$r-$v.log 2>&1; echo "r$r $v rc $?"
  done
done
cd $OUT && tar czf res.tgz ab && cd - > /dev/null
date -u >> $OUT/ab/date.txt
cd $OUT && tar czf res.tgz ab && rm -rf ab
