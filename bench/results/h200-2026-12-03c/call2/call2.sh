#!/bin/bash
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
export PYTHONPATH=/tmp/site:$PWD
O=$OUT; T0=$(date +%s)
el() { echo "=== $1 at $(( $(date +%s) - T0 )) s" | tee -a $O/times.log; }
D="python bench/direct.py --hold --copy --reps 100"
el A
$D --task rmsnorm --shape rows=2048,cols=65536,dtype=bfloat16 --shape rows=2048,cols=65536,dtype=float32 --shape rows=2048,cols=32768,dtype=float32 --shape rows=2048,cols=40000,dtype=bfloat16 --seeds triton_tiled triton_tiled:WHOLE_ROW_BYTES=131072,LOOP_UNROLL=0 triton_tiled:WIDE_UNROLL_PERSIST=2 triton_tiled:WHOLE_ROW_BYTES=131072 triton_tiled:LOOP_UNROLL=4 --out $O/a > $O/a.log 2>&1
el B
$D --task softmax --shape rows=2048,cols=65536,dtype=bfloat16 --shape rows=2048,cols=65536,dtype=float32 --seeds triton_tiled triton_tiled:LOOP_UNROLL=4 triton_tiled:LOOP_UNROLL=4,LOOP_PERSIST=1 triton_tiled:LOOP_UNROLL=4,LOOP_PERSIST=0 triton_tiled:LOOP_PERSIST=0 triton_tiled:LOOP_UNROLL=8,LOOP_BLOCK=8192 triton_tiled:LOOP_UNROLL=8,LOOP_BLOCK=8192,LOOP_PERSIST=1 triton_tiled:HEAD_TAIL=1 --out $O/b > $O/b.log 2>&1
python tmp19/pick.py $O/b/direct-softmax.json > $O/pick.log 2>&1
git diff --stat > $O/diff.log; git diff kernels/softmax >> $O/diff.log
el C
$D --task rmsnorm --match "cols=8192 bfloat16" "cols=8192 float32" --baselines compile --seeds triton_tiled triton_tiled:LOOP_UNROLL=0 triton_tiled:LOOP_WARPS=32 triton_tiled:LOOP_BLOCK=8192 triton_tiled:LOOP_UNROLL=4 --out $O/c > $O/c.log 2>&1
$D --task softmax --match "cols=8192 bfloat16" "cols=8192 float32" --seeds triton_tiled triton_tiled:LOOP_MIN_COLS=8192,LOOP_BLOCK=4096,LOOP_UNROLL=4,LOOP_WARPS=16,LOOP_PERSIST=0 triton_tiled:LOOP_MIN_COLS=8192,LOOP_BLOCK=2048,LOOP_UNROLL=4,LOOP_WARPS=16,LOOP_PERSIST=0 triton_tiled:LOOP_MIN_COLS=8192,LOOP_BLOCK=4096,LOOP_UNROLL=4,LOOP_WARPS=8,LOOP_PERSIST=0 triton_tiled:HEAD_TAIL=1 --out $O/c2 > $O/c2.log 2>&1
el E1
timeout 150 python bench/harness_gpu.py --plan seeds --task rmsnorm --mode final --skip-baselines --only triton_tiled --out $O/fr > $O/fr.log 2>&1
el E2
timeout 150 python bench/harness_gpu.py --plan seeds --task softmax --mode final --skip-baselines --only triton_tiled --out $O/fs > $O/fs.log 2>&1
el end
cd $O && tar czf all.tgz a b c c2 fr fs *.log 2>/dev/null; ls
