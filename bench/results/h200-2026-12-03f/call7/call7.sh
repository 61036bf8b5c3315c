#!/bin/bash
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
export PYTHONPATH=/tmp/site:$PWD
O=$OUT; T0=$(date +%s)
el() { echo "=== $1 at $(( $(date +%s) - T0 )) s" | tee -a $O/times.log; }
el build
timeout 200 python -c "import sys; sys.path.insert(0,'tmp22'); import cluster_src as c; c.build(); print('built')" > $O/build.log 2>&1
el run
V="triton_tiled _cluster:CLUSTER=1,THREADS=1024 _cluster:CLUSTER=2,THREADS=1024 _cluster:CLUSTER=2,THREADS=512 _cluster:CLUSTER=4,THREADS=256 triton_tiled:HEAD_TAIL=1"
for t in softmax rmsnorm; do
timeout 120 python bench/direct.py --hold --copy --rounds 3 --reps 900 --kernel-time 200 --task $t --shape rows=1,cols=4099,dtype=float32 --seeds $V --out $O/$t > $O/$t.log 2>&1
el $t
done
cd $O && tar czf all.tgz softmax rmsnorm *.log 2>/dev/null; ls
