#!/bin/bash
# Issue 44, session 49, helper x2set49 (REGISTERED before this ran: registered.yaml beside this script,
# validation/x2set49.py, the Z3 candidate FrameworkSpec.zero3_bf16_weights in simcluster/llm/fsdp2_zero2.py). Three
# parts on one lease, 13 processes, interleaved in three rounds (the third round's processes are the ones a guard
# drops first):
#   Z3  FSDP2 zero 3 (FSDP2's default full shard), 4 micro-batches reduce-scattered each: 8b 2464:1 and 3b 3040:2, 3 each
#   C   FSDP2 + whole-model torch.compile, compck2's variant with full checkpointing (1b 2464:2, 3 processes) and
#       without checkpointing (1b 3040:2, 2 processes); 3 warm-up steps (the first holds the compilation), 5 timed
#   G   FSDP2 zero 2 (reshard_after_forward false, FSDP2's default reshard after backward: the product's zero 2),
#       4 micro-batches: 2b 3040:2, 2 processes
# Budget (from earlier calls' runs/status.txt): zero-2 / zero-3 8b processes 19-23 s (zero2f, zero2g), 3b 16-20 s, a 2b
# shape of 0.75 s steps about 15 s; compiled FSDP2 processes 24-35 s (compck2). About 285 s expected (3 x 21 + 3 x 18 +
# 2 x 15 + 5 x 27). A budget guard stops launching runs after BUDGET_S s; each eager run at most 45 s, each compiled run
# 60 s: worst case BUDGET_S + 60 s = 415 s.
#   MAIN_COMMIT=<main> bash calibration/h200x2-x2set49-2026-12-01/device_run.sh   (nvidia-h200-x2)
W=/tmp/x2set49
BUDGET_S=${BUDGET_S:-355}   # device_lib's guarded: no run launched after BUDGET_S s
. calibration/device_lib.sh
eager="$two -m simcluster.runner.llm_step --warmup 2 --steps 3 --profile 0 --mode fsdp --grad-accum 4"
comp="$two -m simcluster.runner.llm_step --warmup 3 --steps 5 --profile 0 --mode fsdp --compile --compile-scope model"
z3() { guarded "$1-${2/:/x}-zero3-r$3" 45 $eager --preset "$1" --shapes "$2"; }   # PRESET SHAPE PROCESS_NUMBER
g2() { guarded "2b-3040x2-zero2-r$1" 45 $eager --reshard-after-forward false --preset 2b --shapes 3040:2; }
ck() { guarded "1b-2464x2-fsdp-r$1" 60 $comp --ac-mode full --preset 1b --shapes 2464:2; }
nock() { guarded "1b-3040x2-fsdpnock-r$1" 60 $comp --preset 1b --shapes 3040:2; }
z3 8b 2464:1 1; ck 1; g2 1; z3 3b 3040:2 1; nock 1
nock 2; z3 3b 3040:2 2; g2 2; ck 2; z3 8b 2464:1 2
z3 8b 2464:1 3; ck 3; z3 3b 3040:2 3
echo "total $((SECONDS - lib_start)) s" | tee -a "$B/status.txt"
pack
