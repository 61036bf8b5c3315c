#!/bin/bash
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
export PYTHONPATH=/tmp/site:$PWD
O=$OUT; T0=$(date +%s)
el() { echo "=== $1 at $(( $(date +%s) - T0 )) s" | tee -a $O/times.log; }
nvidia-smi --query-gpu=clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv > $O/smi.log 2>&1
el S
timeout 100 python bench/direct.py --hold --copy --reps 1800 --rounds 6 --task softmax --shape rows=1,cols=4099,dtype=float32 --shape rows=1,cols=4099,dtype=bfloat16 --shape rows=17,cols=131073,dtype=bfloat16 --seeds triton_tiled triton_tiled:HEAD_TAIL=1 triton_tiled:LONE_LOCAL=1 triton_tiled:LONE_LOCAL=1,HEAD_TAIL=1 --out $O/s > $O/s.log 2>&1
el R
timeout 100 python bench/direct.py --hold --copy --reps 1800 --rounds 6 --task rmsnorm --shape rows=1,cols=4099,dtype=float32 --shape rows=1,cols=4099,dtype=bfloat16 --shape rows=17,cols=131073,dtype=float32 --shape rows=17,cols=131073,dtype=bfloat16 --seeds triton_tiled triton_tiled:HEAD_TAIL=1 triton_tiled:LONE_LOCAL=1 triton_tiled:LONE_LOCAL=1,HEAD_TAIL=1 --out $O/r > $O/r.log 2>&1
el Q
QUEUE='triton_fused:2/2' MIN_PART=100 GPUS=0 LIMIT=300 bash bench/h200_seeds.sh > $O/q.log 2>&1
el end
cd $O && tar czf all.tgz s r *.log 2>/dev/null; ls
