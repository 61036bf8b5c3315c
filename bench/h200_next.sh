#!/usr/bin/env bash
# The next device session's first call, planned at the end of session 3 (NOTES.md), for the
# `nvidia-h200-x2` machine: one job per GPU, each step with its own timeout and a log, every
# result packed into ONE tarball (the device returns at most 8 files per call).
#
#   run(command="bash bench/h200_next.sh", kind="nvidia-h200-x2", timeout_s=595)
#   DRY=1 bash bench/h200_next.sh      # print the plan, run nothing (works anywhere)
#
# GPU 0: the unmeasured QR loops of triton_fused against triton_panel_wy (the old loops) and the
#        strip update, the profile, then triton_fused through the harness in --final.
# GPU 1: the repeatability experiment, then triton_panel_wy in --final (issue #2). A QR --final
#        evaluation takes ~350 s, so the other missing ones (cholqr_reconstruct, blocked_wy,
#        householder_torch, the geqrf baseline) need two more calls of this shape.
set -u
BASE=${OUT:-bench/results}  # the device's $OUT: only what lies there comes back
RES=$BASE/h200-next
mkdir -p "$RES"
step() {  # step GPU SECONDS NAME COMMAND...
  local gpu=$1 secs=$2 name=$3
  shift 3
  if [ -n "${DRY:-}" ]; then echo "GPU $gpu, ${secs}s, $name: $*"; return 0; fi
  echo "[$(date +%T)] start $name" >> "$RES/steps.log"
  CUDA_VISIBLE_DEVICES=$gpu timeout "$secs" "$@" > "$RES/$name.out" 2> "$RES/$name.log"
  echo "[$(date +%T)] end $name rc=$?" >> "$RES/steps.log"
}
(
  step 0 130 qr_direct python bench/qr_direct.py --seeds triton_fused triton_panel_wy \
    triton_fused:FUSE_UPDATE=1 triton_fused:USE_TF32X3=0 --reps 7 --budget-s 1 --out "$RES/qr"
  step 0 45 qr_profile python bench/qr_profile.py --seed triton_fused --out "$RES/qr"
  step 0 380 qr_final python -m cockpit.cli eval qr kernels/qr/seeds/triton_fused.py \
    --device cuda --final --json
) &
(
  step 1 150 timing_modes python bench/timing_modes.py --processes 5 --out "$RES/timing"
  step 1 400 qr_seeds_final python bench/harness_gpu.py --plan seeds --task qr --mode final \
    --skip-baselines --only triton_panel_wy --out "$RES/seeds"
) &
wait
if [ -z "${DRY:-}" ]; then
  cat "$RES/steps.log"
  tail -n 3 "$RES"/*.out
  tar czf "$BASE/h200-next.tgz" -C "$BASE" h200-next && rm -rf "$RES" && echo "packed $BASE/h200-next.tgz"
fi
