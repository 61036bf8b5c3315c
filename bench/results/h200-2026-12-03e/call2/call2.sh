#!/bin/bash
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
export PYTHONPATH=/tmp/site:$PWD
O=$OUT; T0=$(date +%s)
el() { echo "=== $1 at $(( $(date +%s) - T0 )) s" | tee -a $O/times.log; }
nvidia-smi --query-gpu=clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv > $O/smi.log 2>&1
V="triton_tiled triton_tiled:HEAD_TAIL=1 triton_tiled:SINGLE_MAX=2048 triton_tiled:SINGLE_MAX=2048,CHUNK=1024 triton_tiled:STREAMING=1 triton_tiled:HEAD_TAIL=0 triton_tiled:NUM_WARPS=16,TILE_WARP_ELEMS=256 triton_tiled:NUM_WARPS=32,TILE_WARP_ELEMS=128 triton_tiled:NUM_WARPS=16,TILE_WARP_ELEMS=256,HEAD_TAIL=1 triton_tiled:NUM_WARPS=32,TILE_WARP_ELEMS=128,HEAD_TAIL=1 triton_tiled:LONE_LOCAL=1,NUM_WARPS=32,TILE_WARP_ELEMS=128 triton_tiled:LONE_LOCAL=1,NUM_WARPS=16,TILE_WARP_ELEMS=256"
SH="--shape rows=1,cols=4099,dtype=float32 --shape rows=1,cols=4099,dtype=bfloat16"
el S
timeout 150 python bench/direct.py --hold --copy --reps 1200 --rounds 6 --task softmax $SH --seeds $V --out $O/s > $O/s.log 2>&1
el R
timeout 150 python bench/direct.py --hold --copy --reps 1200 --rounds 6 --task rmsnorm $SH --seeds $V --out $O/r > $O/r.log 2>&1
el K
K="triton_tiled triton_tiled:SINGLE_MAX=2048 triton_tiled:LONE_LOCAL=1 triton_tiled:NUM_WARPS=16,TILE_WARP_ELEMS=256 triton_tiled:NUM_WARPS=32,TILE_WARP_ELEMS=128"
timeout 60 python tmp21/kprof.py softmax $O/ks.json "rows=1,cols=4099,dtype=float32;rows=17,cols=131073,dtype=bfloat16" $K > $O/ks.log 2>&1
timeout 60 python tmp21/kprof.py rmsnorm $O/kr.json "rows=1,cols=4099,dtype=float32" $K > $O/kr.log 2>&1
el end
cd $O && tar czf all.tgz s r *.json *.log 2>/dev/null; ls
