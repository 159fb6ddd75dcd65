#!/usr/bin/env bash
# The tree a lent GPU gets for a training run (the device tool carries tracked and untracked-not-ignored files and
# the named carry paths, 64 MiB in all): `out` takes the tracked folders training does not read out of git's index
# and moves them beside the repository, `back` puts them back and restores the index. Between the two, call the
# device tool with carry [".gpu/<pack>"] (bench/gpu_pack.py, bench/gpu_distill.sh). Prints what would travel.
#   bash bench/gpu_travel.sh out && <device call> ; bash bench/gpu_travel.sh back
case "${1:-}" in -h|--help) sed -n '2,/^[^#]/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//'; exit 0;; esac  # the header above
set -euo pipefail
cd "$(dirname "$0")/.."
FOLDERS=(models/lid docs tests sample)
STASH=${STASH:-../gpu-travel-stash}
case "${1:-}" in
    out)
        if [ -e "$STASH" ]; then echo "$STASH exists: run 'back' first" >&2; exit 1; fi
        git diff --quiet HEAD -- "${FOLDERS[@]}" || { echo "uncommitted changes under ${FOLDERS[*]}: commit them first" >&2; exit 1; }
        mkdir -p "$STASH/models"
        git rm -r -q --cached "${FOLDERS[@]}"
        for folder in "${FOLDERS[@]}"; do mv "$folder" "$STASH/$folder"; done
        tracked=$(git ls-files -z | xargs -0 du -cb 2>/dev/null | tail -1 | cut -f1)
        untracked=$(git ls-files -z --others --exclude-standard | xargs -0 -r du -cb 2>/dev/null | tail -1 | cut -f1)
        echo "the tree that travels: $(( (tracked + ${untracked:-0}) / 1048576 )) MiB, plus the carried pack" ;;
    back)
        for folder in "${FOLDERS[@]}"; do
            if [ -e "$STASH/$folder" ]; then mkdir -p "$(dirname "$folder")" && mv "$STASH/$folder" "$folder"; fi
        done
        git reset -q -- "${FOLDERS[@]}"
        rmdir "$STASH/models" "$STASH" 2>/dev/null || true
        git status --short -- "${FOLDERS[@]}" ;;
    *) echo "usage: bash bench/gpu_travel.sh out|back" >&2; exit 2 ;;
esac
