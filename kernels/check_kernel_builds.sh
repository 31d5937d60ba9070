#!/usr/bin/env bash
# Compiles kernels/kda_pre.cu for the three targets (nvcc sm_90a, hipcc gfx90a and gfx940) and
# fails on register spills: ptxas's "spill stores/loads" for sm_90a, scratch (memory) spills for
# the AMD targets. Usage: check_kernel_builds.sh SOURCE_DIR OUT_DIR NVCC HIPCC "NVCC_FLAGS" "HIPCC_FLAGS" [SOURCE]
# (SOURCE, relative to SOURCE_DIR, defaults to kernels/kda_pre.cu; the tests plant a spilling one).
# A missing compiler (NVCC or HIPCC given as "") is reported and the check exits 77 (ctest: skipped).
set -uo pipefail
src=$1 out=$2 nvcc=$3 hipcc=$4 nvcc_flags=$5 hipcc_flags=$6 file=${7:-kernels/kda_pre.cu}
mkdir -p "$out"
status=0 missing=0

if [ -n "$nvcc" ] && [ -x "$nvcc" ]; then
  log=$out/sm_90a.log
  # shellcheck disable=SC2086
  if ! "$nvcc" $nvcc_flags -Xptxas -v -I"$src" -c "$src/$file" -o "$out/kda_pre.sm_90a.o" >"$log" 2>&1; then
    cat "$log"; echo "FAIL: nvcc sm_90a build"; status=1
  else
    grep -A3 "kda_pre_kernel" "$log" | grep -E "registers|spill|stack" | sed 's/^/  sm_90a: /'
    grep -q "Compiling entry function '.*kda_pre_kernel" "$log" || { echo "FAIL: no ptxas report for kda_pre_kernel"; status=1; }
    spills=$(grep -A3 "Compiling entry function '.*kda_pre_kernel" "$log" | grep -oE "[0-9]+ bytes spill (stores|loads)" | awk '{s+=$1} END {print s+0}')
    if [ "$spills" != 0 ]; then echo "FAIL: sm_90a build spills registers ($spills bytes)"; status=1; fi
  fi
else
  echo "nvcc not found: sm_90a build NOT checked"; missing=1
fi

if [ -n "$hipcc" ] && [ -x "$hipcc" ]; then
  for arch in gfx90a gfx940; do
    log=$out/$arch.log
    # shellcheck disable=SC2086
    if ! "$hipcc" -x hip $hipcc_flags --offload-arch=$arch -Rpass-analysis=kernel-resource-usage -I"$src" \
         -c "$src/$file" -o "$out/kda_pre.$arch.o" >"$log" 2>&1; then
      cat "$log"; echo "FAIL: hipcc $arch build"; status=1; continue
    fi
    grep -A12 "Function Name: .*kda_pre_kernel" "$log" | grep -E "VGPRs:|AGPRs:|ScratchSize|Spill|LDS" | sed "s/.*remark: */  $arch: /"
    # one report per kernel instantiation; sum over them
    reports=$(grep -c "Function Name: .*kda_pre_kernel" "$log")
    scratch=$(grep -A12 "Function Name: .*kda_pre_kernel" "$log" | grep -oE "ScratchSize \[bytes/lane\]: [0-9]+" | grep -oE "[0-9]+$" | awk '{s+=$1} END {print s+0}')
    vspill=$(grep -A12 "Function Name: .*kda_pre_kernel" "$log" | grep -oE "VGPRs Spill: [0-9]+" | grep -oE "[0-9]+$" | awk '{s+=$1} END {print s+0}')
    if [ "$reports" = 0 ]; then echo "FAIL: no resource report for kda_pre_kernel on $arch"; status=1;
    elif [ "$scratch" != 0 ] || [ "$vspill" != 0 ]; then echo "FAIL: $arch build spills to scratch ($scratch bytes/lane, $vspill VGPRs)"; status=1; fi
  done
else
  echo "hipcc not found: gfx90a/gfx940 builds NOT checked"; missing=1
fi

if [ $status != 0 ]; then exit 1; fi
if [ $missing != 0 ]; then exit 77; fi
echo "kernel builds: sm_90a, gfx90a, gfx940 compiled without spills"
