#!/bin/bash
# Issue 44, session 55 (hfdev55; REGISTERED before this ran: registered.yaml beside this script, validation/hfdev55.py):
# accelerate's FSDP1 (FULL_SHARD, one unit per decoder layer, bf16 MixedPrecision; torch switches it to NO_SHARD at world
# size 1) and DeepSpeed 0.16.4 ZeRO-3 around a Hugging Face Llama against the same model bare under autocast, on ONE GPU,
# NCCL world size 1 (studies/hfdev55_device.py -> runs/hfdev55.json: eager, fsdp1; runs/hfdev55-z3.json: zero3), then
# its CPU dry-run form (seconds).
# Carried (not committed): .device/wheels/hfdev55/*.whl, deepspeed 0.16.4 built here with DS_BUILD_OPS=0 (no compiled ops)
# and its pure-Python / cp312 dependencies; wheels.sha256 beside this script lists them. Each dependency the device's
# python3 cannot import already, and deepspeed, are installed with --no-deps into /tmp/hfdev55/site (torch untouched).
# Without them the zero3 rows record 'skipped: no deepspeed' and the read-out's Z3 rules read NOT RUN.
# Expected ~100-190 s: the wheels ~5-15 s; eager + fsdp1 (12 configurations, each the model built on the GPU, <= 1.1B
# parameters, 5 warm-up + 15 timed steps of ~10-170 ms) with torch import and NCCL init ~50-90 s; zero3 in its own
# invocation (6 configurations, DeepSpeed's import and init ~10-25 s) ~35-70 s (apart, so that a DeepSpeed hang or crash
# cannot take the other trace with it); the CPU dry run ~15-25 s (60 s on this 2-core CPU machine, loaded).
# Worst case ~335 s: the wheels capped at 30 s, eager + fsdp1 killed at 180 s, zero3 at 120 s (30 + 180 + 120 = 330); a
# run starts only if fewer than BUDGET_S = 220 s have passed (the CPU quick run, limit 90 s, then ends by 310 s), plus
# the records and the packing.
#   MAIN_COMMIT=<main> bash calibration/h200x1-hfdev55-2026-12-01/device_run.sh   (nvidia-h200, one GPU; carry .device/wheels)
W=/tmp/hfdev55
BUDGET_S=${BUDGET_S:-220}   # device_lib's guarded: no run launched after BUDGET_S s
. calibration/device_lib.sh
export CUDA_VISIBLE_DEVICES=0
H=calibration/h200x1-hfdev55-2026-12-01
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
guarded hfdev55 180 python3 studies/hfdev55_device.py --device cuda --warmup 5 --steps 15 --variants eager,fsdp1
guarded hfdev55-z3 120 python3 studies/hfdev55_device.py --device cuda --warmup 5 --steps 15 --variants zero3
export DS_ACCELERATOR=cpu   # the dry run: DeepSpeed on the CPU
guarded hfdev55-cpu-quick 90 python3 studies/hfdev55_device.py --device cpu --quick --warmup 1 --steps 2
echo "total $((SECONDS - lib_start)) s" | tee -a "$B/status.txt"
pack
