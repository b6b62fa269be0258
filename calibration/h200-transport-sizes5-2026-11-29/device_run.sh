#!/bin/bash
# Issue 42 (tso, session 33): the registered fifth qperf size sweep; README.md beside this file registers the rule and
# the predictions first (fit/offload_counts.py, fit/udp_receiver_counts.py, read out by fit/offload_readout.py). Four
# configurations of the second sweep's five, each with its own sizes and test (--qperf-size-tests), 5 repeats
# interleaved, qperf -t 1, the same pinned cores (client CPU 2, server the next core of its package):
#   loopback-sizes            udp_bw  1K,2K,4K,7K,14K,20K,28K,40K,60K   (loopback sender's two skb regimes; receiver)
#   lab-sizes-all-noshaping   tcp_bw  1K,2K,4K,20K,40K,96K,160K,320K,640K   (TSO/GRO, unshaped, offloads all)
#   lab-sizes-csum-noshaping  udp_bw  1K,2K,4K,7K,14K,20K,28K,40K,60K   (the UDP receiver; the sender's count model)
#   lab-sizes-none            udp_bw  the same                          (100gbit tbf, offloads none)
# Fitted: TCP 1, 2, 4 KiB and 320, 640 KiB; UDP <= 8 KiB, the paged loopback sender also 20 and 60 KiB, the receiver
# also 60 KiB. Held out, never measured before on any machine: TCP 20, 40, 96, 160 KiB; UDP 14, 20, 28, 40 KiB (the
# lab sender: 14-60 KiB). 4 configurations x 5 repeats x 9 runs = 180 runs of ~1.44 s (the fourth sweep: 200 runs,
# 306.5 s): ~65 s per configuration (timeout 80 s), ~265 s in all; one call <= 420 s; a configuration that would end
# after 410 s is skipped and says so in status.txt.
#   bash calibration/h200-transport-sizes5-2026-11-29/device_run.sh      (device machine, repository root, as root)
# Carried (ignored, not committed): .device-wheels, .device/netbin (as the second sweep's). $OUT gets one tgz per
# configuration, status.txt, tools.txt, cpus.txt.
# It is the second sweep's registered script (the same pip, tools, core rule, cpus.txt and run loop) with these lines
# changed: the common options lose the sizes (each configuration names its own sizes and test), the per-configuration
# timeout (80 s, was 100) and skip rule (end after 410 s, was 480), and the five run lines become the four above.
# PRINT_ONLY=1 prints the script that would run instead of running it.
base=calibration/h200-transport-sizes2-2026-11-28/device_run.sh
udp="--qperf-sizes 1K,2K,4K,7K,14K,20K,28K,40K,60K --qperf-size-tests udp_bw"
tcp="--qperf-sizes 1K,2K,4K,20K,40K,96K,160K,320K,640K --qperf-size-tests tcp_bw"
script=$(sed -e 's/ --qperf-sizes 1K,2K,4K,16K,64K,256K,1M / /' \
             -e 's/if \[ $((SECONDS + 100)) -gt 480 \]/if [ $((SECONDS + 80)) -gt 410 ]/' \
             -e 's/  timeout 100 python3 -m simcluster collect/  timeout 80 python3 -m simcluster collect/' \
             -e "s/^run loopback-sizes\$/run loopback-sizes $udp/" \
             -e "s/^run lab-sizes-none --lab --lab-rate 100gbit --lab-offloads none\$/run lab-sizes-all-noshaping --lab --lab-rate none --lab-offloads all $tcp/" \
             -e "s/^run lab-sizes-csum --lab --lab-rate 100gbit --lab-offloads csum\$/run lab-sizes-csum-noshaping --lab --lab-rate none --lab-offloads csum $udp/" \
             -e "s/^run lab-sizes-csum-noshaping --lab --lab-rate none --lab-offloads csum\$/run lab-sizes-none --lab --lab-rate 100gbit --lab-offloads none $udp/" \
             -e '/^run lab-sizes-all-noshaping --lab --lab-rate none --lab-offloads all$/d' \
             -e 's|^# Issue 42 (transport5): the registered second qperf size sweep, README.md beside this file|# Issue 42 (tso): the fifth sweep (calibration/h200-transport-sizes5-2026-11-29) made from the second, its README.md|' "$base")
if ! grep -q -- "-gt 410 ]" <<<"$script" || ! grep -q -- "timeout 80 python3" <<<"$script" \
   || grep -q -- "1K,2K,4K,16K,64K,256K,1M" <<<"$script" || [ "$(grep -c '^run ' <<<"$script")" != 4 ] \
   || ! grep -q -- "^run lab-sizes-all-noshaping --lab --lab-rate none --lab-offloads all --qperf-sizes 1K,2K,4K,20K" <<<"$script"; then
  echo "$base is not the registered script this one changes: not run"; exit 1
fi
if [ -n "$PRINT_ONLY" ]; then printf '%s\n' "$script"; exit 0; fi
exec bash -c "$script"
