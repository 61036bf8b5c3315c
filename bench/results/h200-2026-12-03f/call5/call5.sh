#!/bin/bash
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
export PYTHONPATH=/tmp/site:$PWD
O=$OUT; T0=$(date +%s)
el() { echo "=== $1 at $(( $(date +%s) - T0 )) s" | tee -a $O/times.log; }
for i in 1 2; do
el s$i
timeout 90 python bench/direct.py --hold --copy --rounds 3 --reps 600 --kernel-time 150 --task softmax --shape rows=17,cols=131073,dtype=bfloat16 \
  --seeds triton_tiled triton_tiled:CHUNK=4096 triton_tiled:CHUNK=1024 triton_tiled:CHUNK_WARP_ELEMS=512 triton_tiled:CHUNK_WARP_ELEMS=2048 triton_tiled:CHUNK=4096,CHUNK_WARP_ELEMS=2048 triton_tiled:HEAD_TAIL=1 --out $O/s$i > $O/s$i.log 2>&1
done
for t in rmsnorm softmax; do
el $t
timeout 90 python bench/direct.py --hold --copy --rounds 3 --reps 600 --kernel-time 150 --task $t --shape rows=65537,cols=257,dtype=bfloat16 \
  --seeds triton_tiled triton_tiled:STREAMING=1 triton_tiled:SHORT_ROW_TILE=512 triton_tiled:HEAD_TAIL=1 --out $O/$t > $O/$t.log 2>&1
done
el end
cd $O && tar czf all.tgz s1 s2 rmsnorm softmax *.log 2>/dev/null; ls
