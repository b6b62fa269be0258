#!/bin/bash
# Issue 42 (session 35, helper stor): does a drive give DLIO's CosmoFlow read pattern (one 2.8 MB TFRecord file a sample,
# read through the page cache in preads of transfer_size) less bandwidth than ResNet-50's (143 MB files read the same
# way)? REGISTERED before this run (registered.json, written by `python studies/storage_pattern_probe.py predict`; README.md).
# Standard library only (python3); nothing carried. Run from the repository root on the device machine:
#   bash calibration/h200x1-storage-pattern-2026-11-29/device_run.sh          (run tool: timeout_s 600)
# $OUT comes back: runs.json (machine + every phase), make.json, plan.txt (the phases and the ratios against registered.json).
export PYTHONUNBUFFERED=1
D=calibration/h200x1-storage-pattern-2026-11-29
W=${PROBE_DIR:-$PWD/.storage_probe}
P="python3 studies/storage_pattern_probe.py"
mkdir -p "$W"
{ date -u +%FT%TZ; git rev-parse HEAD 2>/dev/null; uname -a; findmnt -T "$W"; df -B1 "$W"; lsblk -o NAME,SIZE,TYPE,MODEL,TRAN,ROTA;
  nproc; head -3 /proc/meminfo; } > "$OUT/plan.txt" 2>&1
avail=$(df --output=avail -B1 "$W" | tail -1)
if (( avail < 32000000000 )); then
  echo "not run: $avail bytes free under $W, the sets need 27 GB (3,000 x 2.83 MB + 128 x 143 MB) and a margin" >> "$OUT/plan.txt"
  exit 0
fi
timeout 240 $P make --dir "$W" --small 3000 --large 128 > "$OUT/make.json" 2>> "$OUT/plan.txt"
echo "make rc $? at ${SECONDS} s" >> "$OUT/plan.txt"
$P plan --dir "$W" --out "$OUT/runs.json" --seconds 6 --budget $(( 500 - SECONDS )) >> "$OUT/plan.txt" 2>&1
$P read "$OUT/runs.json" $D/registered.json >> "$OUT/plan.txt" 2>&1
rm -rf "$W"
sync; echo 3 > /proc/sys/vm/drop_caches 2>/dev/null; [ -f /sys/fs/cgroup/storage_probe/memory.max ] && rmdir /sys/fs/cgroup/storage_probe 2>/dev/null
echo "done at ${SECONDS} s" >> "$OUT/plan.txt"
