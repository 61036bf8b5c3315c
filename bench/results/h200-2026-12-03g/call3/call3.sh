#!/bin/bash
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
export PYTHONPATH=/tmp/site:$PWD
O=$OUT; T0=$(date +%s)
el() { echo "=== $1 at $(( $(date +%s) - T0 )) s" | tee -a $O/times.log; }
git log --oneline -1 > $O/commit.txt; git diff --stat >> $O/commit.txt
nvidia-smi --query-gpu=clocks.sm,clocks.mem,temperature.gpu --format=csv > $O/smi.log
el FR
timeout 170 python bench/harness_gpu.py --plan seeds --task rmsnorm --mode final --skip-baselines --only triton_tiled --out $O/fr > $O/fr.log 2>&1
el FS
timeout 170 python bench/harness_gpu.py --plan seeds --task softmax --mode final --skip-baselines --only triton_tiled --out $O/fs > $O/fs.log 2>&1
for i in 1 2; do for t in softmax rmsnorm; do
el $t-$i
timeout 100 python bench/direct.py --hold --copy --rounds 3 --reps 900 --kernel-time 200 --task $t --shape rows=1,cols=4099,dtype=float32 --shape rows=1,cols=4099,dtype=bfloat16 \
  --seeds triton_tiled triton_tiled:LONE_SPLIT=1 triton_tiled:HEAD_TAIL=1 triton_tiled:LONE_SPLIT=1,HEAD_TAIL=1 --out $O/$t-$i > $O/$t-$i.log 2>&1
done; done
el end
cd $O && tar czf all.tgz fr fs rmsnorm-* softmax-* *.log *.txt 2>/dev/null; ls
