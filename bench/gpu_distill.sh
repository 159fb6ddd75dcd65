#!/usr/bin/env bash
# What a lent GPU machine runs for issue 20's GPU step (the device tool: a working tree, no network, no ../shared).
# It expects .gpu/distill from `python bench/gpu_pack.py` beside the tree (the mixture capped per language, the
# teacher's resources), trains configs/train_distill_mix_gpu.yaml on it and writes to $OUT: the exported encoder
# and the midpoint checkpoint's network (fp16), each as a tar split under the tool's 16 MiB a file, the run's log
# and train_log.jsonl. Extra arguments go to training.train (e.g. --set stages.0.steps=20 for a dry run).
#   here:  python bench/gpu_pack.py --cap 7000 --output .gpu/distill
#   there: OUT=... bash bench/gpu_distill.sh --set run.time_limit_minutes=6.6
#   here:  cat <files_at>/encoder.tar.part-* | tar -x -C models/distill-mix-gpu      (and midpoint.tar.part-*)
# The held-out checks run afterwards on the CPU (the machine has no faiss), so data.heldout is empty there.
# The pack (42 MiB) and the repository (48 MB) together exceed what travels (64 MiB): for the call, the tracked
# folders training does not read (models/cmlm-reference, models/lid, docs, tests, sample) were moved out and taken
# out of git's index (git rm -r --cached), and put back afterwards (git reset); 62.9 MiB travelled on 2026-11-26.
set -euo pipefail
PACK=$(cd "${PACK:-.gpu/distill}" && pwd)
OUT=${OUT:?set OUT to the folder that comes back}
RUN=models/distill-mix-gpu
start=$(date +%s)
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader || true
python3 -c "import torch, transformers, tokenizers; print('torch', torch.__version__, 'transformers',
transformers.__version__, 'tokenizers', tokenizers.__version__)"
tar -xJf "$PACK/data.tar.xz"   # data/train/bitext{,-short}/*.tsv, the names the recipe reads
find data/train/bitext data/train/bitext-short -name '*.tsv' -print0 | xargs -0 -P "$(nproc)" -n 16 gzip -1 -f
echo "data unpacked in $(( $(date +%s) - start )) s"
export PYTHONPATH="$PWD:$PACK/site" PYTHONUNBUFFERED=1 TOKENIZERS_PARALLELISM=true
set +e
python3 -m training.train --config configs/train_distill_mix_gpu.yaml --set 'data.heldout=[]' "$@" \
    2>&1 | tee "$OUT/train.log"
status=${PIPESTATUS[0]}
set -e
echo "training ended (status $status) after $(( $(date +%s) - start )) s"
cp "$RUN/train_log.jsonl" "$OUT/" 2>/dev/null || true
if [ -d "$RUN/encoder" ]; then
    tar -C "$RUN" -cf - encoder | split -b 15M - "$OUT/encoder.tar.part-"
fi
mapfile -t saved < <(ls -d "$RUN"/checkpoints/step-* 2>/dev/null | sort)
if [ "${#saved[@]}" -gt 1 ]; then   # the earliest kept checkpoint (the last is the exported encoder's)
    mid="${saved[0]}"
    mkdir -p /tmp/midpoint && cp "$mid/state.json" /tmp/midpoint/
    python3 -c "import sys, torch; from safetensors.torch import load_file, save_file
w = load_file(sys.argv[1]); save_file({k: v.to(torch.float16) if v.is_floating_point() else v
for k, v in w.items()}, sys.argv[2])" "$mid/model.safetensors" /tmp/midpoint/model.safetensors
    tar -C /tmp -cf - midpoint | split -b 15M - "$OUT/midpoint.tar.part-"
fi
ls -la "$OUT"
exit "$status"
