#!/bin/bash
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
export PYTHONPATH=/tmp/site:$PWD
O=$OUT; T0=$(date +%s)
el() { echo "=== $1 at $(( $(date +%s) - T0 )) s" | tee -a $O/times.log; }
V="triton_tiled triton_tiled:HEAD_TAIL=1 triton_tiled:SHORT_ROW_TILE=0 triton_tiled:SHORT_ROW_TILE=2048 triton_tiled:SHORT_ROW_TILE=512 triton_tiled:STREAMING=1 triton_tiled:PERSIST=4 triton_tiled:HEAD_TAIL=0"
SH="--shape rows=65537,cols=257,dtype=bfloat16 --shape rows=65537,cols=257,dtype=float32 --shape rows=3,cols=17,dtype=bfloat16"
el R
timeout 200 python bench/direct.py --hold --copy --rounds 3 --reps 900 --kernel-time 200 --task rmsnorm $SH --seeds $V --out $O/r > $O/r.log 2>&1
el S
timeout 200 python bench/direct.py --hold --copy --rounds 3 --reps 900 --kernel-time 200 --task softmax $SH --seeds $V --out $O/s > $O/s.log 2>&1
el end
cd $O && tar czf all.tgz s r *.log 2>/dev/null; ls
