#!/bin/bash
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
export PYTHONPATH=/tmp/site:$PWD
O=$OUT; T0=$(date +%s)
el() { echo "=== $1 at $(( $(date +%s) - T0 )) s" | tee -a $O/times.log; }
nvidia-smi --query-gpu=clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv > $O/smi.txt 2>&1
el R
timeout 480 python bench/harness_gpu.py --plan repeat --task softmax --seed triton_tiled --n 5 --skip-untimed --out $O/rep > $O/rep.log 2>&1
el end
cd $O && tar czf all.tgz rep *.log *.txt 2>/dev/null; ls
