#!/usr/bin/env bash
# QR seeds through the harness in --final, one seed per GPU (issue #2), on `nvidia-h200-x2`.
# A QR --final evaluation takes 300-600 s, so each call runs one seed per GPU; an optional
# short step runs first on GPU 0. Everything comes back as one tarball ($OUT/h200-seeds.tgz).
#
#   run(command="PRE='python bench/timing_modes.py --processes 5' bash bench/h200_seeds.sh \
#       cholqr_reconstruct triton_panel_wy", kind="nvidia-h200-x2", timeout_s=595)
#   DRY=1 bash bench/h200_seeds.sh A B     # print the plan
set -u
BASE=${OUT:-bench/results}
RES=$BASE/h200-seeds
mkdir -p "$RES"
LIMIT=${LIMIT:-580}  # seconds per GPU, all steps together
step() {  # step GPU SECONDS NAME COMMAND...
  local gpu=$1 secs=$2 name=$3
  shift 3
  if [ -n "${DRY:-}" ]; then echo "GPU $gpu, ${secs}s, $name: $*"; return 0; fi
  echo "[$(date +%T)] start $name" >> "$RES/steps.log"
  CUDA_VISIBLE_DEVICES=$gpu timeout "$secs" "$@" > "$RES/$name.out" 2> "$RES/$name.log"
  echo "[$(date +%T)] end $name rc=$?" >> "$RES/steps.log"
}
seed_final() {  # seed_final GPU SECONDS SEED
  step "$1" "$2" "final-$3" python bench/harness_gpu.py --plan seeds --task qr --mode final \
    --skip-baselines --only "$3" --out "$RES/$3"
}
T0=$(date +%s)
(
  if [ -n "${PRE:-}" ]; then
    # shellcheck disable=SC2086
    step 0 90 pre $PRE --out "$RES/pre"
  fi
  seed_final 0 $((LIMIT - ($(date +%s) - T0))) "$1"
) &
( [ -n "${2:-}" ] && seed_final 1 "$LIMIT" "$2" ) &
wait
if [ -z "${DRY:-}" ]; then
  cat "$RES/steps.log"
  tail -n 4 "$RES"/*.out
  tar czf "$BASE/h200-seeds.tgz" -C "$BASE" h200-seeds && rm -rf "$RES" && echo "packed"
fi
