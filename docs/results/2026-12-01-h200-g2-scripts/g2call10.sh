#!/usr/bin/env bash
# call 10: the tag from an arrivals counter at entry (77b3cd8) against 813d18c (40a68d0's device code): CHECK, A/B; ctest -L gpu, sanitize, sweep of 77b3cd8
set -u
B=.gpu-build; M=$B/monokda
mkdir -p $OUT/ab $OUT/sw $OUT/ct $OUT/sa /tmp/fx
cp $B/provenance.txt $OUT/ab/
date -u > $OUT/ab/date.txt; nvidia-smi --query-gpu=name,serial,driver_version --format=csv >> $OUT/ab/date.txt
i=0
for spec in "1 1 4" "2 1 3 --block-write --layout ds --null-requests 1" "1 4 7 --block-write" "4 2 5 --layout ds" "12 1 2 --null-requests 2" "5 3 6" "3 8 4" "8 8 4" "64 1 4"; do
  set -- $spec; R=$1; L=$2; NB=$3; shift 3
  $M fixture --config k3 --R $R --L $L --nb $NB "$@" -o /tmp/fx/f$i.st > /dev/null &
  i=$((i+1))
done
wait
echo "== CHECK"
for f in /tmp/fx/f*.st; do
  n=$(basename $f .st)
  $M reference $f -o /tmp/fx/$n-ref.out > /dev/null 2>&1
  timeout 60 $B/monokda-base gpu $f -o /tmp/fx/$n-base.out > /dev/null 2>&1; echo "$n base rc $?"
  timeout 60 $M gpu $f -o /tmp/fx/$n-new.out > $OUT/ab/$n-new-gpu.txt 2>&1; echo "$n new gpu rc $?"
  $M compare /tmp/fx/$n-new.out /tmp/fx/$n-base.out --exact prefix_out,core_out,conv_state,ssm_state,x,proj,qkv,g1,o,blocks > $OUT/ab/$n-new-base.txt 2>&1; echo "$n new=base exact rc $?"
  $M compare /tmp/fx/$n-new.out /tmp/fx/$n-ref.out --exact prefix_out,blocks > $OUT/ab/$n-new-ref.txt 2>&1; echo "$n new vs reference rc $?"
done 2>&1 | tee $OUT/ab/check.log | grep -v 'rc 0$'
echo "check lines not rc 0: $(grep -vc 'rc 0$' $OUT/ab/check.log)"
echo "== AB"
SH=1x1,2x1,1x2,1x4,2x2,4x1,1x8,2x4,8x1,3x4,12x1,15x1,2x8,4x4,16x1,3x8,8x4,32x1,8x8,16x4,64x1
for r in 1 2 3; do
  for v in base new; do
    bin=$B/monokda-$v; [ $v = new ] && bin=$M
    timeout 200 $bin bench --shapes $SH --reps 30 --no-stages -o $OUT/ab/r$r-$v.json > $OUT/ab/r$r-$v.log 2>&1; echo "r$r $v rc $?"
  done
done
cd $OUT && tar czf res.tgz ab && cd - > /dev/null
echo "== CTEST"
OUT=$OUT/ct timeout 200 bash tests/gpu/run_on_device.sh $B ctest > $OUT/ct/ctest-run.log 2>&1; echo "ctest rc $?"; tail -3 $OUT/ct/ctest.log
echo "== SANITIZE"
OUT=$OUT/sa timeout 150 bash tests/gpu/run_on_device.sh $B sanitize > $OUT/sa/san-run.log 2>&1; echo "sanitize rc $?"; tail -2 $OUT/sa/san-run.log
cd $OUT && tar czf res.tgz ab ct sa && cd - > /dev/null
echo "== SWEEP"
MONOKDA_BUILD=$B timeout 150 bash bench/h200-run.sh $OUT/sw sweep.log --commit 77b3cd83f6c9536c3e5b46a484952c87b06fe9b2 -o $OUT/sw/perf-h200.json > /dev/null 2>&1; echo "sweep rc $?"
date -u >> $OUT/ab/date.txt
cd $OUT && tar czf res.tgz ab sw ct sa && rm -rf ab sw ct sa
