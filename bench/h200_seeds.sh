#!/usr/bin/env bash
# Seeds through `cockpit eval --final` in parts (`--shard K/N`) on `nvidia-h200-x2`, one part per
# GPU at a time; merge the parts afterwards on any machine with `cockpit merge`. A QR --final
# evaluation of a torch-level seed takes ~1,300 GPU-seconds (blocked_wy, BENCHMARKS.md session 6),
# more than one device call (600 s), so it goes in parts of ~200 s.
#
# QUEUE='SEED:K/N[@SECONDS] …': parts that any GPU takes as soon as it is free, longest first is
# best (part 1 also verifies the public shapes). A part starts only while its SECONDS (default
# MIN_PART, 30) of LIMIT are left, so one that cannot finish stays unstarted ("skip" in
# steps.log) instead of being cut after spending its time, and a shorter one after it may still
# run. GPU0 / GPU1: parts for that GPU alone, before the queue.
#
#   run(command="QUEUE='cholqr_reconstruct:1/6@340 … householder_torch:6/6' MIN_PART=200 \
#       bash bench/h200_seeds.sh", kind="nvidia-h200-x2", timeout_s=595)
#   cockpit merge cholqr_reconstruct-*-of-6.json --out cholqr.json      # afterwards, anywhere
#   DRY=1 QUEUE=… bash bench/h200_seeds.sh                              # print the plan
#
# TASK (default qr); PRE0 / PRE1: a shell line run first on GPU 0 / 1 (a sweep, a timing run; PRE
# is PRE0; it sees $RES, the folder that is packed, for its --out); POST0 / POST1: the same, run
# after the parts with what is left of LIMIT (optional work: the parts go first); GPUS: the GPU
# indices (default "0 1"; GPUi, PREi and POSTi belong to the i-th); LIMIT (seconds per GPU, all
# steps together, default 580); DEVICE (cuda) and MODE (--final; the CPU tests run DEVICE=cpu
# MODE=--quick). Everything comes back as $OUT/h200-seeds.tgz: never write that name yourself.
set -u
BASE=${OUT:-bench/results}
RES=$BASE/h200-seeds
export RES
mkdir -p "$RES"
TASK=${TASK:-qr}
DEVICE=${DEVICE:-cuda}
MODE=${MODE:---final}
LIMIT=${LIMIT:-580}
T0=$(date +%s)
left() { echo $((LIMIT - ($(date +%s) - T0))); }
step() {  # step GPU NAME COMMAND... (stdout to NAME.json, stderr to NAME.log)
  local gpu=$1 name=$2
  shift 2
  if [ -n "${DRY:-}" ]; then echo "GPU $gpu, $name: $*"; return 0; fi
  local secs
  secs=$(left)
  if [ "$secs" -lt 30 ]; then echo "[$(date +%T)] skip $name (${secs}s left)" >> "$RES/steps.log"; return 0; fi
  echo "[$(date +%T)] start $name (${secs}s left)" >> "$RES/steps.log"
  CUDA_VISIBLE_DEVICES=$gpu timeout "$secs" "$@" > "$RES/$name.json" 2> "$RES/$name.log"
  local rc=$?  # before $(date) resets $?
  echo "[$(date +%T)] end $name rc=$rc" >> "$RES/steps.log"
}
part() {  # part GPU SEED:K/N
  local seed=${2%%:*} shard=${2#*:}
  step "$1" "$seed-${shard%/*}-of-${shard#*/}" python -m cockpit.cli eval "$TASK" \
    "kernels/$TASK/seeds/$seed.py" --device "$DEVICE" "$MODE" --json --shard "$shard"
}
parts() {  # parts GPU "SEED:K/N SEED:K/N ..."
  local item
  for item in $2; do part "$1" "$item"; done
}
pop() {  # the next QUEUE item (empty when none), under a mkdir lock shared by the GPUs
  while ! mkdir "$RES/.queue.lock" 2>/dev/null; do sleep 0.2; done
  head -n 1 "$RES/.queue"
  sed -i 1d "$RES/.queue"
  rmdir "$RES/.queue.lock"
}
drain() {  # drain GPU: take QUEUE parts until none is left; a part that needs more than is left
  # (SEED:K/N@SECONDS, else MIN_PART) is logged as skipped and the next one is tried
  local item need
  [ -n "${DRY:-}" ] && return 0
  while item=$(pop) && [ -n "$item" ]; do
    need=${MIN_PART:-30}
    if [ "${item#*@}" != "$item" ]; then need=${item#*@} item=${item%@*}; fi
    if [ "$(left)" -lt "$need" ]; then
      echo "[$(date +%T)] skip ${item} ($(left)s left, needs ${need}s)" >> "$RES/steps.log"
      continue
    fi
    part "$1" "$item"
  done
}
PRE0=${PRE0:-${PRE:-}}
GPUS=${GPUS:-0 1}
: > "$RES/.queue"
for item in ${QUEUE:-}; do
  echo "$item" >> "$RES/.queue"
  if [ -n "${DRY:-}" ]; then echo "any GPU, $item"; fi
done
i=0
for gpu in $GPUS; do
  (
    pre=PRE$i own=GPU$i post=POST$i  # GPUi, PREi, POSTi: for the i-th GPU of GPUS
    if [ -n "${!pre:-}" ]; then
      step "$gpu" "pre$i" bash -c "${!pre}"  # a shell line: chain steps with ';' or '&&'
    fi
    parts "$gpu" "${!own:-}"
    drain "$gpu"
    if [ -n "${!post:-}" ]; then
      step "$gpu" "post$i" bash -c "${!post}"
    fi
  ) &
  i=$((i + 1))
done
wait
rm -f "$RES/.queue"
if [ -z "${DRY:-}" ]; then
  cat "$RES/steps.log"
  for f in "$RES"/*.log; do echo "== $f"; tail -n 2 "$f"; done
  tar czf "$BASE/h200-seeds.tgz" -C "$BASE" h200-seeds && rm -rf "$RES" && echo "packed"
fi
