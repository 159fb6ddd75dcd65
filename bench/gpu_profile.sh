#!/usr/bin/env bash
# Where a GPU training step of the student goes, for the next lent GPU (issue 20/23): bench/bench_training.py's
# distillation + BR step of configs/train_distill_mix_gpu.yaml's network on one language pair of a pack
# (bench/gpu_pack.py), at 1,024, 2,048 and 4,096 pairs a step, each with --profile (device busy time and kernels per
# step, the top device and host ops, the host's collate time). Writes $OUT/profile-<pairs>.json and the printout.
#   here:  python bench/gpu_pack.py ... --output .gpu/distill2 ; bash bench/gpu_travel.sh out
#   there: PACK=.gpu/distill2 OUT=... bash bench/gpu_profile.sh            (carry .gpu/distill2; ~3 minutes)
#   here:  bash bench/gpu_travel.sh back
case "${1:-}" in -h|--help) sed -n '2,/^[^#]/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//'; exit 0;; esac  # the header above
set -euo pipefail
PAIRS=${PAIRS:-"1024 2048 4096"}
source "$(dirname "$0")/gpu_unpack.sh"
BITEXT="$PWD/data/train/bitext/deu_Latn-eng_Latn.tsv.gz"
for pairs in $PAIRS; do
    python3 bench/bench_training.py --recipe configs/train_distill_mix_gpu.yaml --steps "${STEPS:-30}" \
        --profile "${PROFILE_STEPS:-5}" --runs ours:distill+br:auto --set "data.documents=[]" \
        --set "data.bitext=['$BITEXT']" --set "data.bitext_weights=[]" --set "data.heldout=[]" \
        --set "distill.cache=/tmp/teacher-profile" --set "distill.batch_size=$pairs" --set "br.batch_size=$pairs" \
        --output "$OUT/profile-$pairs.json" 2>&1 | grep -v " INFO " | tee -a "$OUT/profile.txt"
done
