#!/bin/bash
# Issue 44, session 55 (hfhook55; REGISTERED before this ran: registered.yaml beside this script, validation/hfhook55.py):
# the Hugging Face hook term's held-out shapes -- hfdev55's measurement (studies/hfdev55_device.py, imported unchanged by
# studies/hfhook55_device.py) at three new sizes x two new points x eager / fsdp1 / zero3, on ONE GPU, NCCL world size 1
# (runs/hfhook55.json: eager, fsdp1; runs/hfhook55-z3.json: zero3). No CPU dry run on the device (hfdev55's ran there).
# Carried (not committed): .device/wheels/hfdev55/*.whl, hfdev55's DeepSpeed 0.16.4 wheel set (DS_BUILD_OPS=0) and its
# pure-Python / cp312 dependencies, checked against wheels.sha256 beside this script (a copy of hfdev55's); each one the
# device's python3 cannot import already, and deepspeed, installed with --no-deps into /tmp/hfhook55/site (torch untouched).
# Without them the zero3 rows record 'skipped: no deepspeed' and RULE TERM reads NOT RUN (TERM-FSDP1 and EAGER still read).
# Expected ~150-230 s: the wheels ~5-15 s; eager + fsdp1 (12 configurations, 0.2-1.9B parameters, 5 warm-up + 15 timed
# steps of ~50-200 ms, the model built on the GPU each time) with torch import and NCCL init ~45-80 s (hfdev55's 12: 40 s);
# zero3 in its own invocation (6 configurations, steps of ~0.25-0.5 s, DeepSpeed's import, init and partitioning) ~80-130 s
# (hfdev55's 6: 89 s).
# Worst case 300 s: the wheels capped at 30 s, eager + fsdp1 killed at 110 s, zero3 at 160 s (30 + 110 + 160); a run starts
# only if fewer than BUDGET_S = 140 s have passed, plus the records and the packing (seconds).
#   MAIN_COMMIT=<main> bash calibration/h200x1-hfhook55-2026-12-01/device_run.sh   (nvidia-h200, one GPU; carry .device/wheels)
W=/tmp/hfhook55
BUDGET_S=${BUDGET_S:-140}   # device_lib's guarded: no run launched after BUDGET_S s
. calibration/device_lib.sh
export CUDA_VISIBLE_DEVICES=0
H=calibration/h200x1-hfhook55-2026-12-01
( cd .device/wheels/hfdev55 2>/dev/null && sha256sum -c "$OLDPWD/$H/wheels.sha256" ) > "$B/wheels.txt" 2>&1
echo "wheels sha256 check rc $?" | tee -a "$B/status.txt"
whl=$(ls .device/wheels/hfdev55/deepspeed-0.16.4-*.whl 2>/dev/null)
for pair in einops:einops hjson:hjson msgpack:msgpack ninja:ninja numpy:numpy packaging:packaging psutil:psutil cpuinfo:py_cpuinfo \
            pydantic:pydantic pydantic_core:pydantic_core annotated_types:annotated_types typing_inspection:typing_inspection \
            typing_extensions:typing_extensions tqdm:tqdm; do
  python3 -c "import ${pair%%:*}" 2>/dev/null || whl="$whl $(ls .device/wheels/hfdev55/${pair#*:}-*.whl 2>/dev/null)"
done
echo "installing: $whl" >> "$B/wheels.txt"
[ -n "$whl" ] && { timeout 30 python3 -m pip install -q --no-deps --no-index --target $W/site $whl >> "$B/wheels.txt" 2>&1 \
  || timeout 30 pip install -q --no-deps --no-index --target $W/site $whl >> "$B/wheels.txt" 2>&1; }
echo "wheels install rc $?" | tee -a "$B/status.txt"
export PYTHONPATH=$W/site:$PWD DS_BUILD_OPS=0
guarded hfhook55 110 python3 studies/hfhook55_device.py --device cuda --warmup 5 --steps 15 --variants eager,fsdp1
guarded hfhook55-z3 160 python3 studies/hfhook55_device.py --device cuda --warmup 5 --steps 15 --variants zero3
echo "total $((SECONDS - lib_start)) s" | tee -a "$B/status.txt"
pack
