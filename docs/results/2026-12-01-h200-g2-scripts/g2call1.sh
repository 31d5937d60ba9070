#!/usr/bin/env bash
# g2-last call 1: base = dc10d80 (HEAD before the change) against the working tree's binary with
# --g2-last off (same plan, the kernel's pass split and band maps), 66 and 76; CHECK, A/B, bench-mode traces
set -u
B=.gpu-build; M=$B/monokda
mkdir -p $OUT/ab /tmp/fx
cp $B/provenance.txt $OUT/ab/
date -u > $OUT/ab/date.txt; nvidia-smi --query-gpu=name,serial,driver_version --format=csv >> $OUT/ab/date.txt
i=0
for spec in "1 1 4" "2 1 3 --block-write --layout ds --null-requests 1" "1 4 7 --block-write" "4 2 5 --layout ds" "12 1 2 --null-requests 2" "2 4 4" "5 3 6" "3 8 4"; do
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
  for v in off 66 76; do
    timeout 60 $M gpu $f -o /tmp/fx/$n-$v.out --g2-last $v > $OUT/ab/$n-$v-gpu.txt 2>&1; echo "$n $v gpu rc $?"
    $M compare /tmp/fx/$n-$v.out /tmp/fx/$n-base.out --exact prefix_out,core_out,conv_state,ssm_state,x,proj,qkv,g1,o,blocks > $OUT/ab/$n-$v-base.txt 2>&1; echo "$n $v=base exact rc $?"
    $M compare /tmp/fx/$n-$v.out /tmp/fx/$n-ref.out --exact prefix_out,blocks > $OUT/ab/$n-$v-ref.txt 2>&1; echo "$n $v vs reference rc $?"
  done
done 2>&1 | tee $OUT/ab/check.log
echo "== TRACE"
for v in off 66 76; do
  MONOKDA_TRACE=$OUT/ab/btrace-1x1-$v.txt timeout 60 $M bench --shapes 1x1 --reps 10 --no-stages --g2-last $v -o /tmp/fx/t.json > /dev/null 2>&1; echo "trace 1x1 $v rc $?"
  MONOKDA_TRACE=$OUT/ab/btrace-2x4-$v.txt timeout 60 $M bench --shapes 2x4 --reps 10 --no-stages --g2-last $v -o /tmp/fx/t.json > /dev/null 2>&1; echo "trace 2x4 $v rc $?"
done
cd $OUT && tar czf res.tgz ab && cd - > /dev/null
echo "== AB"
SH=1x1,2x1,1x2,1x4,2x2,4x1,1x8,2x4,8x1,3x4,12x1,15x1,8x8
for r in 1 2 3; do
  for v in base off 66 76; do
    if [ $v = base ]; then cmd="$B/monokda-base bench"; else cmd="$M bench --g2-last $v"; fi
    timeout 200 $cmd --shapes $SH --reps 30 --no-stages -o $OUT/ab/r$r-$v.json > $OUT/ab/r$r-$v.log 2>&1; echo "r$r $v rc $?"
  done
done
date -u >> $OUT/ab/date.txt
cd $OUT && tar czf res.tgz ab && rm -rf ab
