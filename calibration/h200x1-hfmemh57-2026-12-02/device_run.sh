#!/bin/bash
# Issue 44, session 57 (hfmemh57; REGISTERED before this ran: registered.yaml beside this script, validation/hfmemh57.py):
# the HF frameworks' peak allocated memory at held-out shapes -- studies/hfmemh57_device.py (hfmem57's measurement at
# hfhook55's sizes and three points), fsdp1 and zero3, EACH CONFIGURATION IN ITS OWN PROCESS (runs/<size>-<point>-<variant>.json).
# Carried (not committed): .device/wheels/hfdev55/*.whl (hfhook55's set, checked against wheels.sha256; numpy's left
# behind where the device imports numpy already), installed as hfhook55's device_run.sh does.
# Expected ~150-260 s: 9 fsdp1 processes of ~8-15 s (torch import, NCCL init, 3 steps), 9 zero3 of ~12-25 s; the tiny
# shape first as a check. Worst case: BUDGET_S 300 + the largest limit 60.
#   MAIN_COMMIT=<main> bash calibration/h200x1-hfmemh57-2026-12-02/device_run.sh   (nvidia-h200, one GPU; carry .device/wheels)
W=/tmp/hfmemh57
BUDGET_S=${BUDGET_S:-300}
. calibration/device_lib.sh
export CUDA_VISIBLE_DEVICES=0
H=calibration/h200x1-hfmemh57-2026-12-02
( cd .device/wheels/hfdev55 2>/dev/null && sha256sum -c "$OLDPWD/$H/wheels.sha256" ) > "$B/wheels.txt" 2>&1
echo "wheels sha256 check rc $?" | tee -a "$B/status.txt"
whl=$(ls .device/wheels/hfdev55/deepspeed-0.16.4-*.whl 2>/dev/null)
for pair in einops:einops hjson:hjson msgpack:msgpack ninja:ninja numpy:numpy packaging:packaging psutil:psutil cpuinfo:py_cpuinfo \
            pydantic:pydantic pydantic_core:pydantic_core annotated_types:annotated_types typing_inspection:typing_inspection \
            typing_extensions:typing_extensions tqdm:tqdm; do
  python3 -c "import ${pair%%:*}" 2>/dev/null || whl="$whl $(ls .device/wheels/hfdev55/${pair#*:}-*.whl 2>/dev/null)"
done
[ -n "$whl" ] && { timeout 30 python3 -m pip install -q --no-deps --no-index --target $W/site $whl >> "$B/wheels.txt" 2>&1 \
  || timeout 30 pip install -q --no-deps --no-index --target $W/site $whl >> "$B/wheels.txt" 2>&1; }
echo "wheels install rc $?" | tee -a "$B/status.txt"
export PYTHONPATH=$W/site:$PWD DS_BUILD_OPS=0
guarded quick 60 python3 studies/hfmemh57_device.py --device cuda --quick --warmup 1 --variants fsdp1,zero3
for v in fsdp1 zero3; do
  for s in s0.2b s0.7b s1.9b; do
    for p in mb2 mb1 mb8; do
      guarded "$s-$p-$v" 60 python3 studies/hfmemh57_device.py --device cuda --warmup 2 --sizes $s --points $p --variants $v
    done
  done
done
echo "total $((SECONDS - lib_start)) s" | tee -a "$B/status.txt"
pack
