#!/bin/bash
# Issue 44, session 42 (REGISTERED before this ran: registered.yaml beside this script, validation/eager_drift.py):
# do host-bound eager TP steps slow down across a device call? From the START OF A FRESH CALL (run this first, nothing
# before it in the call): the tpnoise set's 2b 2048:2 TP process (5 warm-up, 10 timed steps) again and again, p01, p02,
# ...; before each process and once at the end, the machine's state (runs/state-NAME.txt: the call's clock, uptime,
# loadavg, per-core MHz, scaling_cur_freq where present, free memory, the top CPU processes, nvidia-smi clocks /
# temperature / power) and a pure-CPU probe (runs/probe-NAME.json, probe.py beside this script, about 3-5 s).
# runs/starts.txt: each process's start on the call's clock (ms). A budget guard stops starting cycles after BUDGET_S:
# worst case BUDGET_S + 15 (probe) + 60 (a process) + 20 (the last state) = 280 s at 185; about 200-230 s expected
# (a one-shape 2b TP process about 18-25 s, a gap about 5 s).
#   MAIN_COMMIT=<main> bash calibration/h200x2-eager-drift-2026-11-30/device_run.sh   (nvidia-h200-x2)
W=/tmp/eager-drift
BUDGET_S=${BUDGET_S:-185}   # device_lib's guarded: no run launched after BUDGET_S s
D=$(dirname "${BASH_SOURCE[0]}")
t0_ms=$(date +%s%3N)
. calibration/device_lib.sh
ms() { echo $(( $(date +%s%3N) - t0_ms )); }
tp="$two -m simcluster.runner.llm_step --warmup 5 --steps 10 --profile 0 --mode tp"
snap() {   # TAG: the machine's state now -> runs/state-TAG.txt, then the CPU probe -> runs/probe-TAG.json
  {
    echo "t_ms $(ms)"
    echo "uptime $(cat /proc/uptime)"
    echo "loadavg $(cat /proc/loadavg)"
    echo "## cpu MHz"; grep -i '^cpu MHz' /proc/cpuinfo
    echo "## scaling_cur_freq"; cat /sys/devices/system/cpu/cpu*/cpufreq/scaling_cur_freq 2>/dev/null || echo "none"
    echo "## free"; free -b
    echo "## ps"; ps -eo pid,pcpu,pmem,etimes,comm --sort=-pcpu | head -12
    echo "## nvidia-smi index, clocks.sm, clocks.mem, temperature.gpu, power.draw, utilization.gpu, memory.used"
    nvidia-smi --query-gpu=index,clocks.sm,clocks.mem,temperature.gpu,power.draw,utilization.gpu,memory.used --format=csv,noheader,nounits
    echo "## nvidia-smi clocks_event_reasons.active"
    nvidia-smi --query-gpu=index,clocks_event_reasons.active --format=csv,noheader 2>&1 | head -4
  } > "$B/state-$1.txt" 2>&1
  timeout 15 python3 "$D/probe.py" "$(ms)" > "$B/probe-$1.json" 2> "$B/probe-$1.stderr.txt"
}
cycle() {   # NAME: state and probe, then the registered process (unless the budget is spent)
  if [ $((SECONDS - lib_start)) -ge "$BUDGET_S" ]; then
    echo "$1 skipped: budget $BUDGET_S s spent" | tee -a "$B/status.txt"; return
  fi
  snap "$1"
  echo "$1 $(ms)" >> "$B/starts.txt"
  guarded "$1" 60 $tp --preset 2b --shapes 2048:2
}
for i in 01 02 03 04 05 06 07 08 09 10 11 12; do cycle "p$i"; done
snap end
echo "total $((SECONDS - lib_start)) s" | tee -a "$B/status.txt"
pack
