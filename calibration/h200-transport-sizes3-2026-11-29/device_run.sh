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
# It is the second sweep's registered script (the same pip, tools, core rule, cpus.txt and run loop) with two lines
# changed: the sizes, and a configuration is skipped when it would end after 475 s (was 480). PRINT_ONLY=1 prints the
# script that would run instead of running it (tests/test_host_stack_readout.py reads it so).
base=calibration/h200-transport-sizes2-2026-11-28/device_run.sh
script=$(sed -e 's/--qperf-sizes 1K,2K,4K,16K,64K,256K,1M/--qperf-sizes 1K,2K,4K,16K,32K,128K,512K/' \
             -e 's/if \[ $((SECONDS + 100)) -gt 480 \]/if [ $((SECONDS + 100)) -gt 475 ]/' \
             -e 's|^# Issue 42 (transport5): the registered second qperf size sweep, README.md beside this file|# Issue 42 (transport6): the third sweep (calibration/h200-transport-sizes3-2026-11-29) made from the second, its README.md|' "$base")
if ! grep -q -- "--qperf-sizes 1K,2K,4K,16K,32K,128K,512K" <<<"$script" || ! grep -q -- "-gt 475 ]" <<<"$script"; then
  echo "$base is not the registered script this one changes: not run"; exit 1
fi
if [ -n "$PRINT_ONLY" ]; then printf '%s\n' "$script"; exit 0; fi
exec bash -c "$script"
