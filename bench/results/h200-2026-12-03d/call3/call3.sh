#!/bin/bash
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
export PYTHONPATH=/tmp/site:$PWD
O=$OUT; T0=$(date +%s)
el() { echo "=== $1 at $(( $(date +%s) - T0 )) s" | tee -a $O/times.log; }
D="python bench/direct.py --hold --copy"
el A
$D --reps 300 --task softmax --shape rows=17,cols=131073,dtype=bfloat16 --shape rows=64,cols=100000,dtype=float32 --seeds triton_tiled triton_tiled:CHUNK_WARP_ELEMS=2048 triton_tiled:CHUNK=4096,CHUNK_WARP_ELEMS=2048 triton_tiled:CHUNK=4096,CHUNK_WARP_ELEMS=4096 triton_tiled:CHUNK=1024 triton_tiled:HEAD_TAIL=1 triton_tiled:CHUNK_WARP_ELEMS=2048,HEAD_TAIL=1 triton_tiled:CHUNK_WARP_ELEMS=2048,PDL_EARLY=1 --out $O/a > $O/a.log 2>&1
el B
$D --reps 100 --task rmsnorm --shape rows=4096,cols=6144,dtype=bfloat16 --shape rows=4096,cols=6144,dtype=float32 --shape rows=2048,cols=5000,dtype=float32 --shape rows=8192,cols=8192,dtype=float32 --seeds triton_tiled triton_tiled:LOOP_BLOCK=0 triton_tiled:LOOP_BLOCK=4096 triton_tiled:HEAD_TAIL=1 --out $O/b > $O/b.log 2>&1
el C
$D --reps 300 --task softmax --shape rows=17,cols=131073,dtype=bfloat16 --seeds triton_tiled:CHUNK_WARP_ELEMS=2048 triton_tiled triton_tiled:CHUNK=4096,CHUNK_WARP_ELEMS=2048 triton_tiled:HEAD_TAIL=1 triton_tiled:CHUNK_WARP_ELEMS=2048,HEAD_TAIL=1 --out $O/c > $O/c.log 2>&1
el end
cd $O && tar czf all.tgz a b c *.log 2>/dev/null; ls
