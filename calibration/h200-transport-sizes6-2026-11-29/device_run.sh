#!/bin/bash
# Issue 42 (tsoack, session 34): the registered sixth qperf size sweep; README.md beside this file registers the rule
# and the predictions first (the push ACK rule, hardware/transport_counts.push_acks, in the batching rule's cost form,
# fit/offload_counts.fit_tso; read out by fit/offload_readout.py). One configuration of the second sweep's five, TCP
# with TSO/GRO (unshaped, offloads all), run twice in a row as two bundles (a replicate: the ACK count differed
# between earlier runs at neighbouring sizes), 5 repeats interleaved, qperf -t 1, the same pinned cores (client CPU 2,
# server the next core of its package):
#   lab-sizes-all-noshaping     tcp_bw  1K,2K,4K,10K,36K,56K,80K,112K,200K,320K,640K
#   lab-sizes-all-noshaping-2   the same, again
# Fitted: 1, 2, 4 KiB and 320, 640 KiB (the fifth sweep's fit sizes); held out, never measured before on any machine:
# 10, 36, 56, 80, 112, 200 KiB. 2 x 5 repeats x 11 sizes = 110 runs of ~1.5 s (the fifth sweep: 180 runs in 281.5 s):
# ~86 s per configuration (timeout 110 s), ~180 s in all; one call <= 300 s; a configuration that would end after
# 290 s is skipped and says so in status.txt. The runner records the server's and client's TcpExt counters beside
# Tcp InSegs / OutSegs (run.json packets: DelayedACKs, TCPHPHits, TCPPureAcks, TCPHPAcks, TCPBacklogCoalesce, ...):
# measurements, read by no judged rule.
#   bash calibration/h200-transport-sizes6-2026-11-29/device_run.sh      (device machine, repository root, as root)
# Carried (ignored, not committed): .device-wheels, .device/netbin (as the second and fifth sweeps'). $OUT gets one tgz
# per configuration, status.txt, tools.txt, cpus.txt.
# It is the second sweep's registered script (the same pip, tools, core rule, cpus.txt and run loop) with these lines
# changed: the common options lose the sizes (the run lines name theirs and the test), the per-configuration timeout
# (110 s, was 100) and skip rule (end after 290 s, was 480), and the five run lines become the two above.
# PRINT_ONLY=1 prints the script that would run instead of running it.
base=calibration/h200-transport-sizes2-2026-11-28/device_run.sh
tcp="--qperf-sizes 1K,2K,4K,10K,36K,56K,80K,112K,200K,320K,640K --qperf-size-tests tcp_bw"
lab="--lab --lab-rate none --lab-offloads all"
script=$(sed -e 's/ --qperf-sizes 1K,2K,4K,16K,64K,256K,1M / /' \
             -e 's/if \[ $((SECONDS + 100)) -gt 480 \]/if [ $((SECONDS + 110)) -gt 290 ]/' \
             -e 's/  timeout 100 python3 -m simcluster collect/  timeout 110 python3 -m simcluster collect/' \
             -e '/^run loopback-sizes$/d' -e '/^run lab-sizes-none --lab /d' -e '/^run lab-sizes-csum --lab /d' \
             -e '/^run lab-sizes-csum-noshaping --lab /d' \
             -e "s/^run lab-sizes-all-noshaping --lab --lab-rate none --lab-offloads all\$/run lab-sizes-all-noshaping $lab $tcp\nrun lab-sizes-all-noshaping-2 $lab $tcp/" \
             -e 's|^# Issue 42 (transport5): the registered second qperf size sweep, README.md beside this file|# Issue 42 (tsoack): the sixth sweep (calibration/h200-transport-sizes6-2026-11-29) made from the second, its README.md|' "$base")
if ! grep -q -- "-gt 290 ]" <<<"$script" || ! grep -q -- "timeout 110 python3" <<<"$script" \
   || grep -q -- "1K,2K,4K,16K,64K,256K,1M" <<<"$script" || [ "$(grep -c '^run ' <<<"$script")" != 2 ] \
   || [ "$(grep -c -- "^run lab-sizes-all-noshaping\(-2\)\? --lab --lab-rate none --lab-offloads all --qperf-sizes 1K,2K,4K,10K,36K" <<<"$script")" != 2 ]; then
  echo "$base is not the registered script this one changes: not run"; exit 1
fi
if [ -n "$PRINT_ONLY" ]; then printf '%s\n' "$script"; exit 0; fi
exec bash -c "$script"
