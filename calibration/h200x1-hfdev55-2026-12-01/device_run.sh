#!/bin/bash
# Issue 44, session 55 (hfdev55; REGISTERED before this ran: registered.yaml beside this script, validation/hfdev55.py):
# accelerate's FSDP1 (FULL_SHARD, one unit per decoder layer, bf16 MixedPrecision; torch switches it to NO_SHARD at world
# size 1) and DeepSpeed 0.16.4 ZeRO-3 around a Hugging Face Llama against the same model bare under autocast, on ONE GPU,
# NCCL world size 1 (studies/hfdev55_device.py -> runs/hfdev55.json), then its CPU dry-run form (seconds).
# Carried (not committed): .device/wheels/hfdev55/*.whl, deepspeed 0.16.4 built here with DS_BUILD_OPS=0 (no compiled ops)
# and its pure-Python / cp312 dependencies; wheels.sha256 beside this script lists them. Each dependency the device's
# python3 cannot import already, and deepspeed, are installed with --no-deps into /tmp/hfdev55/site (torch untouched).
# Without them the zero3 rows record 'skipped: no deepspeed' and the read-out's Z3 rules read NOT RUN.
# Expected ~70-160 s: the wheels ~5-15 s; torch import and NCCL init ~15-25 s; 3 sizes x 2 points x 3 variants = 18
# configurations, each the model built on the GPU (<= 1.1B parameters, ~1-3 s; DeepSpeed's init ~2-5 s), 5 warm-up + 15
# timed steps of ~10-170 ms (~1-4 s).
# Worst case ~270 s: the wheels are capped at 30 s; the GPU run is killed at 240 s; the CPU quick run (limit 60 s; ~15 s)
# starts only if fewer than BUDGET_S = 200 s have passed (so at most 200 + 60 = 260 s), plus the records and the packing.
#   MAIN_COMMIT=<main> bash calibration/h200x1-hfdev55-2026-12-01/device_run.sh   (nvidia-h200, one GPU; carry .device/wheels)
W=/tmp/hfdev55
BUDGET_S=${BUDGET_S:-200}   # device_lib's guarded: no run launched after BUDGET_S s
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
[ -n "$whl" ] && timeout 30 python3 -m pip install -q --no-deps --no-index --target $W/site $whl >> "$B/wheels.txt" 2>&1
echo "wheels install rc $?" | tee -a "$B/status.txt"
export PYTHONPATH=$W/site:$PWD DS_BUILD_OPS=0
guarded hfdev55 240 python3 studies/hfdev55_device.py --device cuda --warmup 5 --steps 15
export DS_ACCELERATOR=cpu   # the dry run: DeepSpeed on the CPU
guarded hfdev55-cpu-quick 60 python3 studies/hfdev55_device.py --device cpu --quick --warmup 1 --steps 2
echo "total $((SECONDS - lib_start)) s" | tee -a "$B/status.txt"
pack
