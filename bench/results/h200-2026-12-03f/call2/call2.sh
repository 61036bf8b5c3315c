#!/bin/bash
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
export PYTHONPATH=/tmp/site:$PWD
O=$OUT; T0=$(date +%s)
el() { echo "=== $1 at $(( $(date +%s) - T0 )) s" | tee -a $O/times.log; }
V="triton_tiled triton_tiled:FULL_TILES=1 triton_tiled:HEAD_TAIL=1"
for t in rmsnorm softmax; do for set in hidden benchmark; do
el $t-$set
timeout 150 python bench/direct.py --hold --copy --set $set --rounds 3 --reps 600 --kernel-time 150 --task $t --seeds $V --out $O/$t-$set > $O/$t-$set.log 2>&1
done; done
for t in rmsnorm softmax; do
el $t-257
timeout 100 python bench/direct.py --hold --copy --rounds 3 --reps 900 --kernel-time 200 --task $t --shape rows=65537,cols=257,dtype=bfloat16 --shape rows=65537,cols=257,dtype=float32 \
  --seeds triton_tiled triton_tiled:FULL_TILES=1 triton_tiled:ROW_VEC_MIN=256 triton_tiled:FULL_TILES=1,SHORT_ROW_TILE=2048 --out $O/$t-257 > $O/$t-257.log 2>&1
done
el end
cd $O && tar czf all.tgz rmsnorm-* softmax-* *.log 2>/dev/null; ls
