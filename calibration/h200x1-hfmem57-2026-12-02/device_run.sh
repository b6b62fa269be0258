#!/bin/bash
# Issue 44, session 57 (hfmem57; DEVELOPMENT, not registered): where the Hugging Face Llama's peak allocated memory goes
# on one GPU -- studies/hfmem57_device.py (hfdev55's model, wrappers and engine, imported unchanged) at hfdev55's own
# shapes and points: per configuration the phases' peaks, the allocator trace's live blocks at the step's peak by the line
# that allocated them, and autograd's saved tensors per module and dtype (runs/hfmem57.json: eager, fsdp1;
# runs/hfmem57-z3.json: zero3; runs/quick.json: the tiny shape first, a check of the script on the device).
# Carried (not committed): .device/wheels/hfdev55/*.whl, checked against wheels.sha256 beside this script (hfhook55's
# copy: the deepspeed wheel is the one rebuilt in session 56), installed as hfhook55's device_run.sh does.
# Expected ~90-200 s: 18 configurations of 2 warm-up + 3 measured steps, the allocator trace walked in Python.
#   MAIN_COMMIT=<main> bash calibration/h200x1-hfmem57-2026-12-02/device_run.sh   (nvidia-h200, one GPU; carry .device/wheels)
W=/tmp/hfmem57
BUDGET_S=${BUDGET_S:-300}
. calibration/device_lib.sh
export CUDA_VISIBLE_DEVICES=0
H=calibration/h200x1-hfmem57-2026-12-02
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
guarded quick 60 python3 studies/hfmem57_device.py --device cuda --quick --warmup 1
guarded hfmem57 200 python3 studies/hfmem57_device.py --device cuda --warmup 2 --variants eager,fsdp1
guarded hfmem57-z3 200 python3 studies/hfmem57_device.py --device cuda --warmup 2 --variants zero3
echo "total $((SECONDS - lib_start)) s" | tee -a "$B/status.txt"
pack
