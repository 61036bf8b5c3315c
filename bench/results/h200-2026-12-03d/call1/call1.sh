#!/bin/bash
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
export PYTHONPATH=/tmp/site:$PWD
O=$OUT; T0=$(date +%s)
el() { echo "=== $1 at $(( $(date +%s) - T0 )) s" | tee -a $O/times.log; }
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv > $O/smi.log 2>&1
D="python bench/direct.py --hold --copy"
el A
$D --reps 200 --task softmax --shape rows=17,cols=131073,dtype=bfloat16 --shape rows=1,cols=4099,dtype=float32 --shape rows=65537,cols=257,dtype=float32 --shape rows=7777,cols=8191,dtype=bfloat16 --seeds triton_tiled triton_tiled:EXP2=0 triton_tiled:HEAD_TAIL=1 triton_tiled:EXP2=0,HEAD_TAIL=1 triton_tiled:PDL_EARLY=1 triton_tiled:CHUNK=4096 --out $O/a > $O/a.log 2>&1
el B
$D --reps 100 --task softmax --set benchmark --seeds triton_tiled triton_tiled:EXP2=0 triton_tiled:HEAD_TAIL=1 triton_tiled:EXP2=0,HEAD_TAIL=1 --out $O/b > $O/b.log 2>&1
el C
$D --reps 100 --task softmax --match "cols=8192 float32" "cols=8192 bfloat16" --seeds triton_tiled triton_tiled:LOOP_MIN_COLS=8192,LOOP_MAX_COLS=8192,LOOP_BLOCK=4096,LOOP_WARPS=16 triton_tiled:HEAD_TAIL=1 triton_tiled:LOOP_MIN_COLS=8192,LOOP_MAX_COLS=8192,LOOP_BLOCK=4096,LOOP_WARPS=16,EXP2=0 --out $O/c > $O/c.log 2>&1
el E1
timeout 150 python bench/harness_gpu.py --plan seeds --task softmax --mode final --skip-baselines --only triton_tiled --out $O/fs > $O/fs.log 2>&1
el E2
timeout 150 python bench/harness_gpu.py --plan seeds --task rmsnorm --mode final --skip-baselines --only triton_tiled --out $O/fr > $O/fr.log 2>&1
el end
cd $O && tar czf all.tgz a b c fs fr *.log 2>/dev/null; ls
