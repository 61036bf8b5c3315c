#!/bin/bash
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
export PYTHONPATH=/tmp/site:$PWD
O=$OUT; T0=$(date +%s)
el() { echo "=== $1 at $(( $(date +%s) - T0 )) s" | tee -a $O/times.log; }
el E1
timeout 150 python bench/harness_gpu.py --plan seeds --task softmax --mode final --skip-baselines --only triton_tiled --out $O/fs > $O/fs.log 2>&1
el A
python bench/direct.py --hold --copy --reps 300 --task softmax --shape rows=17,cols=131073,dtype=bfloat16 --shape rows=1,cols=4099,dtype=float32 --seeds triton_tiled triton_tiled:STATS_PAIR=0 triton_tiled:HEAD_TAIL=1 triton_tiled:STATS_PAIR=0,HEAD_TAIL=1 --out $O/a > $O/a.log 2>&1
el end
cd $O && tar czf all.tgz fs a *.log 2>/dev/null; ls
