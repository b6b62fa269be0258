#!/usr/bin/env bash
# The device machine takes the working tree (tracked files plus carried paths) up to 64 MiB; the tracked gzipped traces
# that no device script reads (Megatron MoE, FSDP2 timeline, DLIO, the 1-GPU sets' profiled steps) push it over.
#   bash calibration/device_tree.sh slim [KEEP_PATTERN]   # remove tracked calibration files > 200 kB (transport sweeps kept,
#                                                         # and any path matching KEEP_PATTERN, a grep -E pattern)
#   bash calibration/device_tree.sh restore               # put them back from git (git checkout -- calibration)
#   bash calibration/device_tree.sh size                  # MiB of the tracked files present in the working tree
# slim refuses a tree with uncommitted changes under calibration/, so that restore can never drop work.
set -euo pipefail
cd "$(dirname "$0")/.."
tracked_mib() { git ls-files -z | xargs -0 stat -c '%s' 2> /dev/null | awk '{s += $1} END {printf "%.1f\n", s / 1048576}'; }
case "${1:-}" in
    slim)
        if [ -n "$(git status --porcelain --untracked-files=no -- calibration)" ]; then
            echo "device_tree: calibration/ has uncommitted changes; commit them first (restore would drop them)" >&2
            exit 2
        fi
        keep="${2:-^$}"
        git ls-files -z calibration | xargs -0 stat -c '%s %n' | awk '$1 > 200000 {print $2}' \
            | grep -v transport | { grep -v -E "$keep" || true; } | xargs -r rm -f
        echo "device_tree: tracked files now $(tracked_mib) MiB (limit 64 MiB with the carried paths)";;
    restore)
        git checkout -- calibration
        echo "device_tree: restored, tracked files $(tracked_mib) MiB";;
    size)
        echo "$(tracked_mib) MiB";;
    *)
        echo "usage: bash calibration/device_tree.sh slim [KEEP_PATTERN] | restore | size" >&2
        exit 2;;
esac
