#!/bin/bash
# Issue 42 (udp7, session 33): the registered fourth qperf size sweep, UDP only; README.md beside this file registers the
# rule and the UDP sender's count model first (fit/udp_counts.py). The same five configurations and pinned cores as
# calibration/h200-transport-sizes2-2026-11-28 and -sizes3-2026-11-29 (loopback; the two-namespace lab at 100gbit tbf
# with offloads none and csum; unshaped with csum and with all; client on CPU 2, server on the next core of its
# package), 5 repeats interleaved, qperf -t 1, udp_bw only (--qperf-size-tests udp_bw). Sizes:
#   fitted  1K, 2K, 4K, 6K, 8K (1, 2, 3, 5, 6 IP fragments at MTU 1500)
#   held out, never measured before on any machine: 12K, 24K, 48K (9, 17, 34 fragments; 48K <= 65507 B, one datagram)
# 5 configurations x 5 repeats x 8 udp_bw = 200 runs of ~1.44 s (the third sweep: 300 runs, 431.8 s): ~58 s per
# configuration (timeout 68 s), ~295 s in all; one call <= 330 s; a configuration that would end after 325 s is
# skipped and says so in status.txt.
#   bash calibration/h200-transport-udp4-2026-11-29/device_run.sh      (device machine, repository root, as root)
# Carried (ignored, not committed): .device-wheels, .device/netbin (as the second sweep's). $OUT gets one tgz per
# configuration, status.txt, tools.txt, cpus.txt.
# It is the second sweep's registered script (the same pip, tools, core rule, cpus.txt and run loop) with three lines
# changed: the sizes and tests, the per-configuration timeout (68 s, was 100) and the skip rule (end after 325 s, was
# 480). PRINT_ONLY=1 prints the script that would run instead of running it (tests/test_udp_counts.py reads it so).
base=calibration/h200-transport-sizes2-2026-11-28/device_run.sh
script=$(sed -e 's/--qperf-sizes 1K,2K,4K,16K,64K,256K,1M/--qperf-sizes 1K,2K,4K,6K,8K,12K,24K,48K --qperf-size-tests udp_bw/' \
             -e 's/if \[ $((SECONDS + 100)) -gt 480 \]/if [ $((SECONDS + 68)) -gt 325 ]/' \
             -e 's/  timeout 100 python3 -m simcluster collect/  timeout 68 python3 -m simcluster collect/' \
             -e 's|^# Issue 42 (transport5): the registered second qperf size sweep, README.md beside this file|# Issue 42 (udp7): the fourth sweep, UDP only (calibration/h200-transport-udp4-2026-11-29) made from the second, its README.md|' "$base")
if ! grep -q -- "--qperf-sizes 1K,2K,4K,6K,8K,12K,24K,48K --qperf-size-tests udp_bw" <<<"$script" \
   || ! grep -q -- "-gt 325 ]" <<<"$script" || ! grep -q -- "timeout 68 python3" <<<"$script"; then
  echo "$base is not the registered script this one changes: not run"; exit 1
fi
if [ -n "$PRINT_ONLY" ]; then printf '%s\n' "$script"; exit 0; fi
exec bash -c "$script"
