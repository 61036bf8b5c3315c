#!/bin/bash
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
export PYTHONPATH=/tmp/site:$PWD
O=$OUT; T0=$(date +%s)
el() { echo "=== $1 at $(( $(date +%s) - T0 )) s" | tee -a $O/times.log; }
nvidia-smi --query-gpu=clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv > $O/smi.log 2>&1
el S
timeout 220 python bench/direct.py --hold --copy --set hidden --rounds 3 --reps 900 --kernel-time 200 --task softmax --seeds triton_tiled --out $O/s > $O/s.log 2>&1
el R
timeout 220 python bench/direct.py --hold --copy --set hidden --rounds 3 --reps 900 --kernel-time 200 --task rmsnorm --seeds triton_tiled --out $O/r > $O/r.log 2>&1
el end
cd $O && tar czf all.tgz s r *.log 2>/dev/null; ls
