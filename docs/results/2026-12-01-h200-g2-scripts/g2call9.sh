#!/usr/bin/env bash
# g2-last call 9: g2's second pass in fat steps (the working tree) with --g2-last 66, and off, against 813d18c; CHECK, A/B, traces
set -u
B=.gpu-build; M=$B/monokda
mkdir -p $OUT/ab /tmp/fx
cp $B/provenance.txt $OUT/ab/
date -u > $OUT/ab/date.txt; nvidia-smi --query-gpu=name,serial,driver_version --format=csv >> $OUT/ab/date.txt
i=0
for spec in "1 1 4" "1 2 3 --block-write --layout ds" "1 4 7 --block-write" "1 8 4" "3 2 5 --layout ds --null-requests 1" "4 1 2 --null-requests 2" "4 2 8" "2 4 4" "8 8 4"; do
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
  for v in off 66; do
    timeout 60 $M gpu $f -o /tmp/fx/$n-$v.out --g2-last $v > $OUT/ab/$n-$v-gpu.txt 2>&1; echo "$n $v gpu rc $?"
    $M compare /tmp/fx/$n-$v.out /tmp/fx/$n-base.out --exact prefix_out,core_out,conv_state,ssm_state,x,proj,qkv,g1,o,blocks > $OUT/ab/$n-$v-base.txt 2>&1; echo "$n $v=base exact rc $?"
    $M compare /tmp/fx/$n-$v.out /tmp/fx/$n-ref.out --exact prefix_out,blocks > $OUT/ab/$n-$v-ref.txt 2>&1; echo "$n $v vs reference rc $?"
  done
done 2>&1 | tee $OUT/ab/check.log | grep -v 'rc 0$'
echo "check lines not rc 0: $(grep -vc 'rc 0$' $OUT/ab/check.log)"
echo "== TRACE"
for s in 1x1 1x8 4x1; do
  MONOKDA_TRACE=$OUT/ab/btrace-$s-66.txt timeout 60 $M bench --shapes $s --reps 10 --no-stages --g2-last 66 -o /tmp/fx/t.json > /dev/null 2>&1; echo "trace $s rc $?"
  MONOKDA_TRACE=$OUT/ab/btrace-$s-base.txt timeout 60 $B/monokda-base bench --shapes $s --reps 10 --no-stages -o /tmp/fx/t.json > /dev/null 2>&1; echo "trace $s base rc $?"
done
cd $OUT && tar czf res.tgz ab && cd - > /dev/null
echo "== AB"
SH=1x1,1x2,1x4,1x8,3x1,3x2,4x1,4x2,2x1,8x1,2x4,8x8
for r in 1 2 3; do
  for v in base off 66; do
    if [ $v = base ]; then cmd="$B/monokda-base bench"; else cmd="$M bench --g2-last $v"; fi
    timeout 200 $cmd --shapes $SH --reps 30 --no-stages -o $OUT/ab/r$r-$v.json > $OUT/ab/r$r-$v.log 2>&1; echo "r$r $v rc $?"
  done
done
date -u >> $OUT/ab/date.txt
cd $OUT && tar czf res.tgz ab && rm -rf ab
