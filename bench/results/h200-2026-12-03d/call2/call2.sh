#!/bin/bash
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
export PYTHONPATH=/tmp/site:$PWD
O=$OUT; T0=$(date +%s)
el() { echo "=== $1 at $(( $(date +%s) - T0 )) s" | tee -a $O/times.log; }
D="python bench/direct.py --hold --copy"
el A
$D --reps 100 --task softmax --shape rows=8192,cols=8192,dtype=bfloat16 --shape rows=8192,cols=8192,dtype=float32 --shape rows=4096,cols=6144,dtype=bfloat16 --shape rows=17,cols=8192,dtype=float32 --shape rows=4096,cols=4096,dtype=bfloat16 --shape rows=4099,cols=3000,dtype=float32 --shape rows=1024,cols=32768,dtype=float32 --seeds triton_tiled triton_tiled:ROW_LOOP_BLOCK=0 triton_tiled:HEAD_TAIL=1 triton_tiled:ROW_LOOP_BLOCK=0,HEAD_TAIL=1 triton_tiled:ROW_LOOP_MIN_COLS=4096 triton_tiled:ROW_LOOP_MIN_COLS=4096,ROW_LOOP_BLOCK=2048 triton_tiled:ROW_LOOP_BLOCK=2048 --out $O/a > $O/a.log 2>&1
el B
$D --reps 300 --task softmax --shape rows=17,cols=131073,dtype=bfloat16 --shape rows=1,cols=4099,dtype=float32 --seeds triton_tiled triton_tiled:PDL_EARLY=1 triton_tiled:HEAD_TAIL=1 triton_tiled:PDL_EARLY=1,HEAD_TAIL=1 triton_tiled:ROW_VEC=1 triton_tiled:PDL_EARLY=1,ROW_VEC=1 --out $O/b > $O/b.log 2>&1
el C
$D --reps 100 --task rmsnorm --shape rows=4096,cols=4096,dtype=bfloat16 --shape rows=4099,cols=3000,dtype=float32 --shape rows=4099,cols=3000,dtype=bfloat16 --shape rows=8192,cols=8192,dtype=bfloat16 --seeds triton_tiled triton_tiled:LOOP_MIN_COLS=4096 triton_tiled:LOOP_MIN_COLS=4096,LOOP_BLOCK=2048 triton_tiled:HEAD_TAIL=1 --out $O/c > $O/c.log 2>&1
el E1
timeout 150 python bench/harness_gpu.py --plan seeds --task softmax --mode final --skip-baselines --only triton_tiled --out $O/fs > $O/fs.log 2>&1
el end
cd $O && tar czf all.tgz a b c fs *.log 2>/dev/null; ls
