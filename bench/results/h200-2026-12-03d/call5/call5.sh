#!/bin/bash
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
export PYTHONPATH=/tmp/site:$PWD
O=$OUT; T0=$(date +%s)
el() { echo "=== $1 at $(( $(date +%s) - T0 )) s" | tee -a $O/times.log; }
D="python bench/direct.py --hold --copy"
el A
$D --reps 200 --task softmax --set hidden --seeds triton_tiled triton_tiled:HEAD_TAIL=1 --out $O/hs > $O/hs.log 2>&1
el B
$D --reps 200 --task rmsnorm --set hidden --seeds triton_tiled triton_tiled:HEAD_TAIL=1 --out $O/hr > $O/hr.log 2>&1
el C
$D --reps 100 --task softmax --set benchmark --baselines compile --seeds triton_tiled --out $O/bs > $O/bs.log 2>&1
el D
$D --reps 100 --task rmsnorm --set benchmark --baselines compile --seeds triton_tiled --out $O/br > $O/br.log 2>&1
el E
$D --reps 300 --task softmax --shape rows=17,cols=131073,dtype=bfloat16 --shape rows=64,cols=100000,dtype=float32 --seeds triton_tiled triton_tiled:STATS_PAIR=1 triton_tiled:HEAD_TAIL=1 triton_tiled:STATS_PAIR=1,HEAD_TAIL=1 --out $O/e > $O/e.log 2>&1
el end
cd $O && tar czf all.tgz hs hr bs br e *.log 2>/dev/null; ls
