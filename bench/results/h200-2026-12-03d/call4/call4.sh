#!/bin/bash
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
export PYTHONPATH=/tmp/site:$PWD
O=$OUT; T0=$(date +%s)
el() { echo "=== $1 at $(( $(date +%s) - T0 )) s" | tee -a $O/times.log; }
D="python bench/direct.py --hold --copy"
el A
$D --reps 300 --task softmax --shape rows=17,cols=131073,dtype=bfloat16 --shape rows=64,cols=100000,dtype=float32 --shape rows=33,cols=65536,dtype=bfloat16 --seeds triton_tiled triton_tiled:PDL_EARLY=1 triton_tiled:HEAD_TAIL=1 triton_tiled:PDL_EARLY=1,HEAD_TAIL=1 triton_tiled:CHUNK=1024 triton_tiled:CHUNK=1024,PDL_EARLY=1 --out $O/a > $O/a.log 2>&1
el B
if python tmp20/pick.py $O/a/direct-softmax.json > $O/pick.log 2>&1; then
  sed -i 's/^PDL_EARLY = False  # split path/PDL_EARLY = True  # split path/' kernels/softmax/seeds/triton_tiled.py
fi
grep -n "^PDL_EARLY" kernels/softmax/seeds/triton_tiled.py >> $O/pick.log
timeout 150 python bench/harness_gpu.py --plan seeds --task softmax --mode final --skip-baselines --only triton_tiled --out $O/fs > $O/fs.log 2>&1
el end
cd $O && tar czf all.tgz a fs *.log 2>/dev/null; ls
