#!/usr/bin/env bash
# g2-last call 6: a step's copies as one 3D box: v2 the weight's, v3 the weight's and x's, v3s x's up to 32 rows; against v0 (2D boxes); CHECK and A/B
set -u
B=.gpu-build
mkdir -p $OUT/ab /tmp/fx
cp $B/provenance.txt $OUT/ab/
date -u > $OUT/ab/date.txt; nvidia-smi --query-gpu=name,serial,driver_version --format=csv >> $OUT/ab/date.txt
i=0
for spec in "1 1 4" "2 1 3 --block-write --layout ds --null-requests 1" "1 4 7 --block-write" "4 2 5 --layout ds" "12 1 2 --null-requests 2" "5 3 6" "3 8 4" "8 8 4" "40 1 3 --null-requests 3" "64 1 4"; do
  set -- $spec; R=$1; L=$2; NB=$3; shift 3
  $B/monokda-v0 fixture --config k3 --R $R --L $L --nb $NB "$@" -o /tmp/fx/f$i.st > /dev/null &
  i=$((i+1))
done
wait
echo "== CHECK"
for f in /tmp/fx/f*.st; do
  n=$(basename $f .st)
  $B/monokda-v0 reference $f -o /tmp/fx/$n-ref.out > /dev/null 2>&1
  timeout 60 $B/monokda-v0 gpu $f -o /tmp/fx/$n-base.out > /dev/null 2>&1; echo "$n v0 rc $?"
  for v in v2 v3 v3s; do
    timeout 60 $B/monokda-$v gpu $f -o /tmp/fx/$n-$v.out > $OUT/ab/$n-$v-gpu.txt 2>&1; echo "$n $v gpu rc $?"
    $B/monokda-v0 compare /tmp/fx/$n-$v.out /tmp/fx/$n-base.out --exact prefix_out,core_out,conv_state,ssm_state,x,proj,qkv,g1,o,blocks > $OUT/ab/$n-$v-base.txt 2>&1; echo "$n $v=v0 exact rc $?"
    $B/monokda-v0 compare /tmp/fx/$n-$v.out /tmp/fx/$n-ref.out --exact prefix_out,blocks > $OUT/ab/$n-$v-ref.txt 2>&1; echo "$n $v vs reference rc $?"
  done
done 2>&1 | tee $OUT/ab/check.log | grep -v 'rc 0$'
echo "check lines not rc 0: $(grep -vc 'rc 0$' $OUT/ab/check.log)"
echo "== AB"
SH=1x1,2x1,1x2,1x4,2x2,4x1,1x8,2x4,8x1,3x4,12x1,15x1,2x8,4x4,16x1,3x8,8x4,32x1,8x8,16x4,64x1
for r in 1 2 3; do
  for v in v0 v2 v3 v3s; do
    timeout 200 $B/monokda-$v bench --shapes $SH --reps 30 --no-stages -o $OUT/ab/r$r-$v.json > $OUT/ab/r$r-$v.log 2>&1; echo "r$r $v rc $?"
  done
done
date -u >> $OUT/ab/date.txt
cd $OUT && tar czf res.tgz ab && rm -rf ab
