#!/bin/bash
# Issue 42 (session 35, helper stor2): is the first pattern probe run's small-file loss the kernel's readahead window?
# REGISTERED before this run (registered.json from `python studies/storage_readahead_probe.py predict`; README.md).
# Standard library only (python3); nothing carried; root (writes /sys/block/DEV/queue/read_ahead_kb, restored after).
#   bash calibration/h200x1-storage-readahead-2026-11-29/device_run.sh          (run tool: timeout_s 600)
# $OUT comes back: runs.json (machine + every phase), make.json, plan.txt (the phases, then the read-out).
export PYTHONUNBUFFERED=1
D=calibration/h200x1-storage-readahead-2026-11-29
W=${PROBE_DIR:-$PWD/.storage_probe}
mkdir -p "$W"
{ date -u +%FT%TZ; git rev-parse HEAD 2>/dev/null; uname -a; findmnt -T "$W"; df -B1 "$W"; lsblk -o NAME,SIZE,TYPE,MODEL,TRAN,ROTA;
  nproc; head -3 /proc/meminfo; id -u; } > "$OUT/plan.txt" 2>&1
avail=$(df --output=avail -B1 "$W" | tail -1)
if (( avail < 32000000000 )); then
  echo "not run: $avail bytes free under $W, the sets need 27 GB and a margin" >> "$OUT/plan.txt"
  exit 0
fi
timeout 240 python3 studies/storage_pattern_probe.py make --dir "$W" --small 3000 --large 128 > "$OUT/make.json" 2>> "$OUT/plan.txt"
echo "make rc $? at ${SECONDS} s" >> "$OUT/plan.txt"
python3 studies/storage_readahead_probe.py plan --dir "$W" --out "$OUT/runs.json" --seconds 6 --budget $(( 480 - SECONDS )) >> "$OUT/plan.txt" 2>&1
python3 studies/storage_readahead_probe.py read "$OUT/runs.json" $D/registered.json >> "$OUT/plan.txt" 2>&1
rm -rf "$W"
sync; echo 3 > /proc/sys/vm/drop_caches 2>/dev/null
echo "done at ${SECONDS} s" >> "$OUT/plan.txt"
