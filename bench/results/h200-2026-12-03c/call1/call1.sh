#!/bin/bash
# session 19, call 1: lone-row floors, staged switches, 8192^2 vs compile, 65536 phase test, finals, exploits
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
export PYTHONPATH=/tmp/site:$PWD
for t in rmsnorm softmax; do cp tmp19/diag_lone.py kernels/$t/seeds/; done
O=$OUT; T0=$(date +%s)
el() { echo "=== $1 at $(( $(date +%s) - T0 )) s" | tee -a $O/times.log; }
D="python bench/direct.py --hold --copy --reps 200"
el A1
$D --task rmsnorm --set hidden --match "cols=4099" --seeds triton_tiled triton_tiled:LONE_VEC=1 triton_tiled:W_EARLY=1 triton_tiled:W_EARLY=1,LONE_VEC=1 triton_tiled:LONE_VEC=1,TAIL_FOLD=1 triton_tiled:LONE_VEC=1,W_EARLY=1,TAIL_FOLD=1 diag_lone:MODE=1 diag_lone:MODE=6 diag_lone:MODE=1,VEC=0 diag_lone:MODE=1,VEC=1,WARPS=4 diag_lone:MODE=0 diag_lone:MODE=0,VEC=0 diag_lone:MODE=3 diag_lone:MODE=4 triton_tiled:W_EARLY=1,LONE_VEC=1,HEAD_TAIL=1 triton_tiled:LONE_VEC=1,HEAD_TAIL=1 triton_tiled:HEAD_TAIL=1 --out $O/a1 > $O/a1.log 2>&1
el A2
$D --task softmax --set hidden --match "cols=4099" --seeds triton_tiled triton_tiled:LONE_VEC=1 triton_tiled:LONE_VEC=1,TAIL_FOLD=1 diag_lone:MODE=2 diag_lone:MODE=5 diag_lone:MODE=7 diag_lone:MODE=2,VEC=0 diag_lone:MODE=2,WARPS=4 diag_lone:MODE=5,WARPS=4 diag_lone:MODE=0 diag_lone:MODE=3 diag_lone:MODE=4 triton_tiled:LONE_VEC=1,HEAD_TAIL=1 triton_tiled:HEAD_TAIL=1 --out $O/a2 > $O/a2.log 2>&1
el B1
$D --task rmsnorm --set hidden --match "cols=17 " "cols=131073" --seeds triton_tiled triton_tiled:W_EARLY=1 triton_tiled:PDL_EARLY=1 triton_tiled:W_EARLY=1,PDL_EARLY=1 triton_tiled:W_EARLY=1,PDL_EARLY=1,PDL=1 triton_tiled:PDL_EARLY=1,PDL=1 triton_tiled:W_EARLY=1,PDL=1 triton_tiled:PDL=1 --out $O/b1 > $O/b1.log 2>&1
el B2
$D --task softmax --set hidden --match "cols=131073" --seeds triton_tiled triton_tiled:PDL_EARLY=1 triton_tiled:PDL_EARLY=1,PDL=1 triton_tiled:PDL=1 --out $O/b2 > $O/b2.log 2>&1
el C
$D --task rmsnorm --match "cols=8192 bfloat16" "cols=8192 float32" --baselines compile --seeds triton_tiled triton_tiled:LOOP_UNROLL=4 triton_tiled:LOOP_UNROLL=4,LOOP_BLOCK=2048 triton_tiled:LOOP_UNROLL=4,LOOP_BLOCK=2048,LOOP_WARPS=8 triton_tiled:HEAD_TAIL=1 --out $O/c > $O/c.log 2>&1
el D1
S="--shape rows=132,cols=65536,dtype=bfloat16 --shape rows=264,cols=65536,dtype=bfloat16 --shape rows=528,cols=65536,dtype=bfloat16 --shape rows=2048,cols=65536,dtype=bfloat16"
$D --task rmsnorm $S --baselines compile --seeds triton_tiled triton_tiled:WHOLE_ROW_BYTES=65536 triton_tiled:WHOLE_ROW_BYTES=65536,WIDE_LOOP_PERSIST=1 triton_tiled:WHOLE_ROW_BYTES=65536,WIDE_LOOP_PERSIST=4,WIDE_LOOP_WARPS=8 triton_tiled:WHOLE_ROW_BYTES=65536,LOOP_UNROLL=4 triton_tiled:WHOLE_ROW_BYTES=65536,LOOP_UNROLL=4,WIDE_LOOP_PERSIST=1 --out $O/d1 > $O/d1.log 2>&1
el D2
$D --task softmax $S --seeds triton_tiled triton_tiled:LOOP_PERSIST=0 triton_tiled:LOOP_PERSIST=1 triton_tiled:LOOP_PERSIST=4,LOOP_WARPS=8 --out $O/d2 > $O/d2.log 2>&1
rm kernels/*/seeds/diag_lone.py
el E1
timeout 150 python bench/harness_gpu.py --plan seeds --task rmsnorm --mode final --skip-baselines --only triton_tiled --out $O/fr > $O/fr.log 2>&1
el E2
timeout 150 python bench/harness_gpu.py --plan seeds --task softmax --mode final --skip-baselines --only triton_tiled --out $O/fs > $O/fs.log 2>&1
el F
R=$(( 560 - ($(date +%s) - T0) ))
[ $R -gt 60 ] && timeout $R python bench/harness_gpu.py --plan exploits --out $O/ex > $O/ex.log 2>&1
el end
cd $O && tar czf all.tgz a1 a2 b1 b2 c d1 d2 fr fs ex 2>/dev/null; ls
