#!/usr/bin/env bash
# g2-last call 2: base = dc10d80; the working tree (new) and new with x 7 steps ahead (x7), each --g2-last off and 66
set -u
B=.gpu-build; M=$B/monokda
mkdir -p $OUT/ab /tmp/fx
cp $B/provenance.txt $OUT/ab/
date -u > $OUT/ab/date.txt; nvidia-smi --query-gpu=name,serial,driver_version --format=csv >> $OUT/ab/date.txt
i=0
for spec in "1 1 4" "2 1 3 --block-write --layout ds --null-requests 1" "1 4 7 --block-write" "4 2 5 --layout ds" "12 1 2 --null-requests 2" "2 4 4" "5 3 6" "3 8 4" "8 8 4"; do
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
  for v in x7-off x7-66; do
    timeout 60 $B/monokda-x7 gpu $f -o /tmp/fx/$n-$v.out --g2-last ${v#x7-} > $OUT/ab/$n-$v-gpu.txt 2>&1; echo "$n $v gpu rc $?"
    $M compare /tmp/fx/$n-$v.out /tmp/fx/$n-base.out --exact prefix_out,core_out,conv_state,ssm_state,x,proj,qkv,g1,o,blocks > $OUT/ab/$n-$v-base.txt 2>&1; echo "$n $v=base exact rc $?"
    $M compare /tmp/fx/$n-$v.out /tmp/fx/$n-ref.out --exact prefix_out,blocks > $OUT/ab/$n-$v-ref.txt 2>&1; echo "$n $v vs reference rc $?"
  done
done 2>&1 | tee $OUT/ab/check.log
echo "== TRACE"
for v in off 66; do
  MONOKDA_TRACE=$OUT/ab/btrace-1x1-$v.txt timeout 60 $B/monokda-x7 bench --shapes 1x1 --reps 10 --no-stages --g2-last $v -o /tmp/fx/t.json > /dev/null 2>&1; echo "trace 1x1 $v rc $?"
  MONOKDA_TRACE=$OUT/ab/btrace-2x4-$v.txt timeout 60 $B/monokda-x7 bench --shapes 2x4 --reps 10 --no-stages --g2-last $v -o /tmp/fx/t.json > /dev/null 2>&1; echo "trace 2x4 $v rc $?"
done
cd $OUT && tar czf res.tgz ab && cd - > /dev/null
echo "== AB"
SH=1x1,2x1,1x2,1x4,2x2,4x1,1x8,2x4,8x1,3x4,12x1,15x1,2x8,3x8,8x4,8x8,64x1
for r in 1 2 3; do
  for v in base off 66 x7-off x7-66; do
    case $v in base) cmd="$B/monokda-base bench";; x7-*) cmd="$B/monokda-x7 bench --g2-last ${v#x7-}";; *) cmd="$M bench --g2-last $v";; esac
    timeout 200 $cmd --shapes $SH --reps 30 --no-stages -o $OUT/ab/r$r-$v.json > $OUT/ab/r$r-$v.log 2>&1; echo "r$r $v rc $?"
  done
done
date -u >> $OUT/ab/date.txt
cd $OUT && tar czf res.tgz ab && rm -rf ab
