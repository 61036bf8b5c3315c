#!/bin/bash
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
export PYTHONPATH=/tmp/site:$PWD
O=$OUT; T0=$(date +%s)
el() { echo "=== $1 at $(( $(date +%s) - T0 )) s" | tee -a $O/times.log; }
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu --format=csv > $O/smi.txt 2>&1
el A
# is it the alignment? the seed at odd (257) against aligned (264, 256) bf16 rows, and the span prototype
timeout 230 python bench/direct.py --hold --copy --rounds 3 --reps 600 --kernel-time 150 --task rmsnorm \
  --shape rows=65537,cols=257,dtype=bfloat16 --shape rows=65536,cols=264,dtype=bfloat16 --shape rows=65536,cols=256,dtype=bfloat16 \
  --seeds triton_tiled triton_tiled:HEAD_TAIL=1 _span:WARPS=4 _span:WARPS=8,GATHER_W=1 _span:WARPS=8 --out $O/a > $O/a.log 2>&1
el S
for i in 1 2 3; do
timeout 100 python bench/direct.py --hold --copy --rounds 3 --reps 900 --kernel-time 200 --task softmax \
  --shape rows=17,cols=131073,dtype=bfloat16 --seeds triton_tiled triton_tiled:ROW_SPLIT=1 triton_tiled:HEAD_TAIL=1 --out $O/s$i > $O/s$i.log 2>&1
el s$i
done
el end
cd $O && tar czf all.tgz a s1 s2 s3 *.log *.txt 2>/dev/null; ls
