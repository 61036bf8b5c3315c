#!/usr/bin/env bash
# Seeds through `cockpit eval --final` in parts (`--shard K/N`), a list of parts per GPU, on
# `nvidia-h200-x2`; merge the parts afterwards on any machine with `cockpit merge`. A QR --final
# evaluation of a torch-level seed takes 10-20 minutes on one GPU (BENCHMARKS.md, session 4), more
# than one device call (600 s), so it goes in parts of ~300 s.
#
#   run(command="GPU0='blocked_wy:1/4 blocked_wy:2/4' GPU1='blocked_wy:3/4 blocked_wy:4/4' \
#       bash bench/h200_seeds.sh", kind="nvidia-h200-x2", timeout_s=595)
#   cockpit merge blocked_wy-*-of-4.json --out blocked_wy.json        # afterwards, anywhere
#   DRY=1 GPU0=… GPU1=… bash bench/h200_seeds.sh                      # print the plan
#
# TASK (default qr); PRE0 / PRE1: a shell line run first on GPU 0 / 1 (a sweep, a timing run; PRE
# is PRE0; it sees $RES, the folder that is packed, for its --out); POST0 / POST1: the same, run
# after the parts, with what is left of LIMIT (put optional work there: the parts go first); LIMIT (seconds per GPU, all
# steps together, default 580); DEVICE (cuda) and MODE (--final; the CPU test runs DEVICE=cpu
# MODE=--quick). Everything comes back as $OUT/h200-seeds.tgz.
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
parts() {  # parts GPU "SEED:K/N SEED:K/N ..."
  local gpu=$1 item seed shard
  for item in $2; do
    seed=${item%%:*} shard=${item#*:}
    step "$gpu" "$seed-${shard%/*}-of-${shard#*/}" python -m cockpit.cli eval "$TASK" \
      "kernels/$TASK/seeds/$seed.py" --device "$DEVICE" "$MODE" --json --shard "$shard"
  done
}
PRE0=${PRE0:-${PRE:-}}
(
  if [ -n "$PRE0" ]; then
    step 0 pre0 bash -c "$PRE0"  # a shell line: chain steps with ';' or '&&'
  fi
  parts 0 "${GPU0:-}"
  if [ -n "${POST0:-}" ]; then
    step 0 post0 bash -c "$POST0"
  fi
) &
(
  if [ -n "${PRE1:-}" ]; then
    step 1 pre1 bash -c "$PRE1"
  fi
  parts 1 "${GPU1:-}"
  if [ -n "${POST1:-}" ]; then
    step 1 post1 bash -c "$POST1"
  fi
) &
wait
if [ -z "${DRY:-}" ]; then
  cat "$RES/steps.log"
  for f in "$RES"/*.log; do echo "== $f"; tail -n 2 "$f"; done
  tar czf "$BASE/h200-seeds.tgz" -C "$BASE" h200-seeds && rm -rf "$RES" && echo "packed"
fi
