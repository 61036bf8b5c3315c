#!/bin/bash
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
export PYTHONPATH=/tmp/site:$PWD
O=$OUT; T0=$(date +%s)
el() { echo "=== $1 at $(( $(date +%s) - T0 )) s" | tee -a $O/times.log; }
which nvcc ninja > $O/tools.txt 2>&1; nvcc --version | tail -1 >> $O/tools.txt
el E
timeout 400 python -m cockpit.cli eval softmax tests/unusual/softmax_cuda_inline.py --device cuda --quick --json > $O/ev.json 2> $O/ev.log
echo "rc=$?" >> $O/times.log
el end
cd $O && ls
