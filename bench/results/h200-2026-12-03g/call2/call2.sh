#!/bin/bash
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
export PYTHONPATH=/tmp/site:$PWD
O=$OUT; T0=$(date +%s)
el() { echo "=== $1 at $(( $(date +%s) - T0 )) s" | tee -a $O/times.log; }
cp tmp23/_lsplit.py kernels/softmax/seeds/_lsplit.py
cp tmp23/_lsplit.py kernels/rmsnorm/seeds/_lsplit.py
nvidia-smi --query-gpu=clocks.sm,clocks.mem,temperature.gpu --format=csv > $O/smi.log
for t in softmax rmsnorm; do
M=1; N=4; [ $t = softmax ] && M=2 && N=3
V="triton_tiled _lsplit:MODE=0,K=4 _lsplit:MODE=$M,K=1 _lsplit:MODE=$M,K=4 _lsplit:MODE=$N,K=1 _lsplit:MODE=$N,K=4 _lsplit:MODE=$N,K=4,WARPS=4 _lsplit:MODE=$N,K=4,WARPS=16 _lsplit:MODE=$N,K=2 triton_tiled:HEAD_TAIL=1"
for p in 1 2; do
timeout 200 python bench/direct.py --hold --copy --rounds 3 --reps 900 --kernel-time 200 --task $t --shape rows=1,cols=4099,dtype=float32 --shape rows=1,cols=4099,dtype=bfloat16 --seeds $V --out $O/$t$p > $O/$t$p.log 2>&1
el $t$p
done
done
cd $O && tar czf all.tgz softmax* rmsnorm* *.log 2>/dev/null; ls
