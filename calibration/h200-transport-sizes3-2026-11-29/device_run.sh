#!/bin/bash
# Issue 42 (transport6, session 32): the registered third qperf size sweep; README.md beside this file registers the rule
# and the count model's predictions first (fit/host_counts.py). The same five configurations and pinned cores as
# calibration/h200-transport-sizes2-2026-11-28 (device_run.sh there: loopback; the two-namespace lab at 100gbit tbf with
# offloads none and csum; unshaped with csum and with all = TSO/GSO/GRO; client on CPU 2, server on the next core of its
# package), 5 repeats interleaved, qperf -t 1. Sizes:
#   fitted  1K, 2K, 4K (TCP and UDP) and 16K (UDP: the count model's packet / byte train, 4K -> 16K)
#   held out, never measured before on any machine: 32K, 128K, 512K (TCP), 32K (UDP: the largest datagram size here)
#   (TCP 16K runs too, the tool runs tcp_bw at every size: printed, not judged, as a fit size)
# 5 configurations x 5 repeats x (7 tcp_bw + 5 udp_bw) = 300 runs of ~1.44 s (the second sweep: 275 runs, 397 s):
# ~87 s per configuration (timeout 100 s), ~435 s in all; one call <= 480 s; a configuration that would start after
# 375 s is skipped and says so in status.txt.
#   bash calibration/h200-transport-sizes3-2026-11-29/device_run.sh      (device machine, repository root, as root)
# Carried (ignored, not committed): .device-wheels (pydantic, simpy for the runner), .device/netbin (qperf 0.4.11,
# ethtool, ip, tc, taskset from Debian bookworm with their libraries; wrap/ runs each with its own libraries: used
# only where the machine lacks the tool). $OUT gets one tgz per configuration, status.txt, tools.txt, cpus.txt.
export PYTHONUNBUFFERED=1
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .device-wheels/*.whl \
  > $OUT/pip.log 2>&1 || { echo "pip failed"; tail -3 $OUT/pip.log; }
export PYTHONPATH=/tmp/site:$PWD
export PATH="$PATH:$PWD/.device/netbin/wrap"
for t in qperf ethtool ip tc taskset; do echo "$t: $(command -v $t)"; done | tee $OUT/tools.txt
nproc; uname -r

# The cores (a declared rule, not a choice after the fact): CLIENT = CPU 2 (CPU 0 takes the VM's housekeeping and most
# interrupts); SERVER = the lowest CPU above 2 in CPU 2's package that is not CPU 2's hyperthread sibling (another
# core, the same last-level cache); 3 when the topology files are absent.
CLIENT=2
SERVER=$(python3 - $CLIENT <<'PY'
import os, sys
def cpus(text):                      # "2,10" or "2-3" -> {2, 10} / {2, 3}
    out = set()
    for part in text.strip().split(","):
        a, _, b = part.partition("-")
        out |= set(range(int(a), int(b or a) + 1))
    return out
def topo(c, name):
    try:
        return open(f"/sys/devices/system/cpu/cpu{c}/topology/{name}").read().strip()
    except OSError:
        return None
client = int(sys.argv[1])
siblings, package = topo(client, "thread_siblings_list"), topo(client, "physical_package_id")
if siblings is None or package is None:
    print(client + 1)
else:
    print(next((c for c in range(client + 1, os.cpu_count()) if c not in cpus(siblings) and topo(c, "physical_package_id") == package),
               client + 1))
PY
)
{ echo "client CPU $CLIENT, server CPU $SERVER"
  for c in $CLIENT $SERVER; do
    echo "cpu$c: siblings $(cat /sys/devices/system/cpu/cpu$c/topology/thread_siblings_list 2>/dev/null)" \
         "package $(cat /sys/devices/system/cpu/cpu$c/topology/physical_package_id 2>/dev/null)" \
         "max kHz $(cat /sys/devices/system/cpu/cpu$c/cpufreq/cpuinfo_max_freq 2>/dev/null)"
  done
  lscpu 2>/dev/null | head -30
  lscpu -e 2>/dev/null
  grep -m1 "model name" /proc/cpuinfo; cat /proc/loadavg; } > $OUT/cpus.txt
head -3 $OUT/cpus.txt

common="--tools qperf-sizes --qperf-time 1 --qperf-repeat 5 --qperf-sizes 1K,2K,4K,16K,32K,128K,512K --pin-cpus $CLIENT,$SERVER"
run() {   # name, options...
  local name=$1; shift
  if [ $((SECONDS + 100)) -gt 475 ]; then echo "$name skipped: $SECONDS s used" | tee -a $OUT/status.txt; return; fi
  local t0=$SECONDS
  echo "$name load $(cut -d' ' -f1-3 /proc/loadavg)" >> $OUT/cpus.txt
  timeout 100 python3 -m simcluster collect $common "$@" --out /tmp/ts/$name > /tmp/ts-$name.log 2>&1
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
echo "total $SECONDS s" | tee -a $OUT/status.txt
