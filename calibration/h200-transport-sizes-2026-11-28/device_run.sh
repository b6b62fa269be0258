#!/bin/bash
# Issue 42, session 30: the host network stack's qperf size sweeps (the runner's qperf-sizes tool) on the GPU machine's
# host (16 cores; a quieter host than the 2-core VM whose repeats spread 6-59%), the same five configurations as
# docs/models/nic-and-cpu.md's table: loopback, and the two-namespace lab at 100gbit tbf with offloads none and csum,
# unshaped with csum and with all (TSO/GRO).
#   bash calibration/h200-transport-sizes-2026-11-28/device_run.sh      (device machine, repository root, as root)
# Carried (ignored, not committed): .device-wheels (pydantic, simpy for the runner), .device/netbin (qperf 0.4.11,
# ethtool, ip, tc, taskset from Debian bookworm with their libraries; wrap/ runs each with its own libraries: used
# only where the machine lacks the tool). $OUT gets one tgz per configuration.
export PYTHONUNBUFFERED=1
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .device-wheels/*.whl \
  > $OUT/pip.log 2>&1 || { echo "pip failed"; tail -3 $OUT/pip.log; }
export PYTHONPATH=/tmp/site:$PWD
export PATH="$PATH:$PWD/.device/netbin/wrap"
for t in qperf ethtool ip tc taskset; do echo "$t: $(command -v $t)"; done | tee $OUT/tools.txt
nproc; uname -r
common="--tools qperf-sizes --qperf-time 2 --qperf-repeat 2"
run() {   # name, options...
  local name=$1; shift
  local t0=$SECONDS
  timeout 150 python3 -m simcluster collect $common "$@" --out /tmp/ts/$name > /tmp/ts-$name.log 2>&1
  echo "$name exit $? $((SECONDS - t0)) s" | tee -a $OUT/status.txt
  tail -3 /tmp/ts-$name.log
  cp /tmp/ts-$name.log /tmp/ts/$name/collect.log 2>/dev/null
  tar czf $OUT/$name.tgz -C /tmp/ts $name 2>/dev/null
}
mkdir -p /tmp/ts
run loopback-sizes
run lab-sizes-none --lab --lab-rate 100gbit --lab-offloads none
run lab-sizes-csum --lab --lab-rate 100gbit --lab-offloads csum
run lab-sizes-csum-noshaping --lab --lab-rate none --lab-offloads csum
run lab-sizes-all-noshaping --lab --lab-rate none --lab-offloads all
