#!/usr/bin/env bash
# What a lent GPU machine runs for issue 20's GPU step (the device tool: a working tree, no network, no ../shared).
# It expects a pack from `python bench/gpu_pack.py` beside the tree (PACK, default .gpu/distill: the mixture capped
# per language, the teacher's resources), trains each recipe of RECIPES (default configs/train_distill_mix_gpu.yaml)
# on it, side by side, and writes to $OUT/<recipe name>/: the exported encoder as a tar split under the tool's
# 16 MiB a file, and logs.tar (the run's log and train_log.jsonl). Extra arguments go to every training.train (e.g.
# --set stages.0.steps=20 for a dry run).
#   here:  python bench/gpu_pack.py --news-cap 2500 --cap 3500 --monolingual-from configs/train_distill_mono_gpu.yaml \
#              --output .gpu/distill2
#   there: PACK=.gpu/distill2 RECIPES="configs/train_distill_mono_gpu.yaml configs/train_distill_stack_gpu.yaml" \
#              OUT=... bash bench/gpu_distill.sh --set run.time_limit_minutes=6.5
#   here:  cat <files_at>/train_distill_mono_gpu/encoder.tar.part-* | tar -x -C models/distill-mono-gpu
# The held-out checks run afterwards on the CPU (the machine has no faiss), so data.heldout is empty there.
# A pack (40-45 MiB) and the repository (48 MB) together exceed what travels (64 MiB): `bash bench/gpu_travel.sh
# out` takes the tracked folders training does not read (models/lid, docs, tests, sample) out
# of git's index and beside the repository for the call, `bash bench/gpu_travel.sh back` puts them back (61 MiB
# travelled with the 40.2 MiB pack on 2026-11-26).
case "${1:-}" in -h|--help) sed -n '2,/^[^#]/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//'; exit 0;; esac  # the header above
set -euo pipefail
start=$(date +%s)
source "$(dirname "$0")/gpu_unpack.sh"
export TOKENIZERS_PARALLELISM=true OMP_NUM_THREADS=4
# Several recipes train side by side in one call. They do not add up: two runs on the H200 moved as many pairs a
# second together as one alone (the GPU's stream of small kernels is the limit, docs/benchmarks.md), so each runs
# at about half its own speed; what side by side saves is a second call's start and data loading.
read -r -a recipes <<< "${RECIPES:-configs/train_distill_mix_gpu.yaml}"
pids=()
for recipe in "${recipes[@]}"; do
    name=$(basename "$recipe" .yaml)
    mkdir -p "$OUT/$name"
    # each run its own teacher cache: two runs writing one cache's chunks would race on its temporary files
    python3 -m training.train --config "$recipe" --set 'data.heldout=[]' --set "distill.cache=/tmp/teacher-$name" \
        "$@" > "$OUT/$name/train.log" 2>&1 &
    pids+=($!)
done
status=0
for i in "${!recipes[@]}"; do
    wait "${pids[$i]}" || status=$?
    echo "${recipes[$i]}: ended after $(( $(date +%s) - start )) s"; tail -n 3 "$OUT/$(basename "${recipes[$i]}" .yaml)/train.log"
done
for recipe in "${recipes[@]}"; do   # per run: the exported encoder (split under 16 MiB a file) and its logs
    name=$(basename "$recipe" .yaml)
    run=$(python3 -c "import sys; from training.config import load_recipe; print(load_recipe(sys.argv[1]).output)" "$recipe")
    cp "$run/train_log.jsonl" "$OUT/$name/" 2>/dev/null || true
    tar -C "$OUT/$name" -cf "$OUT/$name/logs.tar" --remove-files train.log $(ls "$OUT/$name" | grep -x train_log.jsonl)
    if [ -d "$run/encoder" ]; then
        tar -C "$run" -cf - encoder | split -b 15M - "$OUT/$name/encoder.tar.part-"
    fi
done
ls -laR "$OUT"
exit "$status"
