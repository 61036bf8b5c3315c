#!/bin/bash
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
export PYTHONPATH=/tmp/site:$PWD
O=$OUT; T0=$(date +%s)
el() { echo "=== $1 at $(( $(date +%s) - T0 )) s" | tee -a $O/times.log; }
git log --oneline -1 > $O/commit.txt
el FR
timeout 170 python bench/harness_gpu.py --plan seeds --task rmsnorm --mode final --skip-baselines --only triton_tiled --out $O/fr > $O/fr.log 2>&1
el FS
timeout 170 python bench/harness_gpu.py --plan seeds --task softmax --mode final --skip-baselines --only triton_tiled --out $O/fs > $O/fs.log 2>&1
for i in 1 2; do for t in rmsnorm softmax; do
el $t-$i
timeout 60 python bench/direct.py --hold --copy --rounds 3 --reps 900 --kernel-time 200 --task $t --shape rows=65537,cols=257,dtype=bfloat16 \
  --seeds triton_tiled triton_tiled:FULL_TILES=0 triton_tiled:HEAD_TAIL=1 --out $O/$t-$i > $O/$t-$i.log 2>&1
done; done
el end
cd $O && tar czf all.tgz fr fs rmsnorm-* softmax-* *.log *.txt 2>/dev/null; ls
