#!/usr/bin/env bash
# The device machine takes the working tree (tracked files plus carried paths) up to 64 MiB; the tracked gzipped traces
# that no device script reads (Megatron MoE, FSDP2 timeline, DLIO, the 1-GPU sets' profiled steps) push it over.
#   bash calibration/device_tree.sh slim [KEEP_PATTERN]   # remove tracked calibration files > 200 kB (transport sweeps kept,
#                                                         # and any path matching KEEP_PATTERN, a grep -E pattern)
#   bash calibration/device_tree.sh restore               # put back the tracked files missing under calibration/ (from the
#                                                         # index; an edited tracked file is left as it is)
#   bash calibration/device_tree.sh size                  # MiB of the tracked files present in the working tree
# slim refuses a tree with uncommitted changes under calibration/ other than deleted files (a second slim, or one after a
# partial restore, goes ahead). Paths travel NUL-separated throughout (spaces and newlines in names are safe).
# tests/test_device_tree.py runs it in a temporary git repository.
set -euo pipefail
cd "$(dirname "$0")/.."
tracked_mib() { { git ls-files -z | xargs -0 -r stat -c '%s' 2> /dev/null || true; } | awk '{s += $1} END {printf "%.1f\n", s / 1048576}'; }
case "${1:-}" in
    slim)
        if [ -n "$(git diff --name-only --diff-filter=d HEAD -- calibration)" ]; then
            echo "device_tree: calibration/ has uncommitted changes; commit them first (restore would drop them)" >&2
            exit 2
        fi
        keep="${2:-^$}"
        removed=0
        while IFS= read -r -d '' line; do
            size="${line%% *}" path="${line#* }"
            [ "$size" -gt 200000 ] || continue
            case "$path" in *transport*) continue;; esac
            if printf '%s\n' "$path" | grep -q -E -- "$keep"; then continue; fi
            rm -f -- "$path"
            removed=$((removed + 1))
        done < <(git ls-files -z calibration | xargs -0 -r stat --printf '%s %n\0' 2> /dev/null || true)
        echo "device_tree: removed $removed files; tracked files now $(tracked_mib) MiB (limit 64 MiB with the carried paths)";;
    restore)
        git ls-files -d -z calibration | xargs -0 -r git checkout --
        echo "device_tree: restored, tracked files $(tracked_mib) MiB";;
    size)
        echo "$(tracked_mib) MiB";;
    *)
        echo "usage: bash calibration/device_tree.sh slim [KEEP_PATTERN] | restore | size" >&2
        exit 2;;
esac
