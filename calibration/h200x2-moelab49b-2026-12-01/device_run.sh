#!/bin/bash
# Issue 44 (session 49, helper moelab49b; REGISTERED before this ran: registered.yaml and README.md's rule beside this
# script, validation/moelab49b.py with validation/moelab49.py): is the MoE router term's ROUTER piece real? Four
# Megatron-Core local-spec MoE layers no set has run (studies/megatron_moe/register.py SET49B), 2 x H200, moelab49's flow
# run as its body: calibration/h200x2-moelab49-2026-12-01/device_run.sh with MOELAB_SET=moelab49b (moe3's arm B through
# studies/megatron_moe/device.py, each configuration launched twice: in order into runs/ with both ranks' traces, then in
# reverse into runs/launch2/). device_lib.sh records this script's, registered.yaml's and that body's sha256s.
# Expected ~230 s (moelab49's 8 launches took 225 s; these steps are 116-252 ms, as moelab49's 70-197 ms: the launch is
# mostly start-up). device_lib's guard: no run launched after BUDGET_S = 230 s, each cut at 50 s: worst case 280 s. If
# the guard skips, it skips launch 2 of the first configurations; the read-out uses the launches that ran.
#   MAIN_COMMIT=<main> bash calibration/h200x2-moelab49b-2026-12-01/device_run.sh   (nvidia-h200-x2, carry .device/wheels)
export MOELAB_SET=moelab49b DEVICE_RUN_CALLER=${BASH_SOURCE[0]} MOELAB49_WORK=${MOELAB49B_WORK:-/tmp/moelab49b}
export BUDGET_S=${BUDGET_S:-230}
. calibration/h200x2-moelab49-2026-12-01/device_run.sh
