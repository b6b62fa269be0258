#!/bin/bash
# Shared by the device scripts of bundles made from session 38 on (older bundles keep their own copies: they are the
# record of what ran). Source it from a bundle's device_run.sh, on the device machine, at the repository root:
#   W=/tmp/NAME; . calibration/device_lib.sh     # sets B=$W/runs, records the machine (nvidia-smi, lscpu, torch) and
#                                                 # in runs/commit.txt MAIN_COMMIT, git HEAD, the sha256 of the calling
#                                                 # script, of the registered.yaml beside it and of each Python
#                                                 # script beside it (BUNDLE/*.py) or named in it that is a file here,
#                                                 # and last the code tree that ran: tree_hash's sha256 (below) where
#                                                 # a .git is present (the HEAD line names the copy's base commit only)
#   run NAME LIMIT_S COMMAND...                   # stdout -> $B/NAME.json, stderr -> $B/NAME.stderr.txt; a line in
#                                                 # $B/status.txt; $W/runs packed to $OUT/runs.tgz after every run
#   two=...                                       # "python3 -m torch.distributed.run --standalone --nproc-per-node 2"
#   guarded NAME LIMIT_S COMMAND...               # run, unless BUDGET_S (if set) seconds have passed since sourcing;
#                                                 # a run may start at BUDGET_S - 1 s and then take its own LIMIT_S:
#                                                 # a call's worst case is BUDGET_S + the largest LIMIT_S after it
# NVLink multicast stays off (NCCL_NVLS_ENABLE=0 and the symmetric-memory / NVSHMEM switches).
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1 NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
: "${W:?set W (the work folder) before sourcing calibration/device_lib.sh}"
: "${OUT:?OUT (the folder that comes back) is not set: run this on the device machine}"
B=$W/runs
mkdir -p "$B"
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv > "$B/nvidia-smi.txt" 2>&1
lscpu > "$B/lscpu.txt" 2>&1
python3 -c 'import torch; print(torch.__version__, torch.version.cuda, torch.cuda.device_count())' > "$B/torch.txt" 2>&1
tree_hash() {   # the sha256 of the sha256sum lines of simcluster/ and validation/'s files (tracked, or untracked and not
  # ignored), sorted by path: the same command at the repository root of a checkout gives the same hash for the same code;
  # a listed path that is no readable file (a tracked file deleted) is left out, as registration.checkout_tree_hash does
  git ls-files -z --cached --others --exclude-standard -- simcluster validation | LC_ALL=C sort -z -u \
    | xargs -0 sha256sum 2>/dev/null | sha256sum | cut -d' ' -f1
}
caller=${DEVICE_RUN_CALLER:-${BASH_SOURCE[1]:-}}   # the device script that sourced this file (or, as DEVICE_RUN_CALLER, the
# bundle's script that sourced another bundle's device_run.sh as its body: that body's sha256 is recorded after it)
{
  echo "${MAIN_COMMIT:-unknown} (main, as given by the caller); started $(date -u +%Y-%m-%dT%H:%M:%SZ)"
  if [ -e .git ]; then echo "$(git rev-parse HEAD 2>/dev/null || echo 'git rev-parse failed') (git rev-parse HEAD of the device copy: the checkout's base commit, not the tree that ran -- the tree_hash line is)"
  else echo "no .git (git rev-parse HEAD not taken)"; fi
  if [ -z "$caller" ]; then echo "no calling script (sourced from a shell)"
  else
    sha256sum "$caller"
    if [ -n "${DEVICE_RUN_CALLER:-}" ] && [ -n "${BASH_SOURCE[1]:-}" ]; then sha256sum "${BASH_SOURCE[1]}"; fi
    reg="$(dirname "$caller")/registered.yaml"
    if [ -f "$reg" ]; then sha256sum "$reg"; else echo "no registered.yaml beside the calling script"; fi
    pys=$( { ls "$(dirname "$caller")"/*.py 2>/dev/null; grep -o '[A-Za-z0-9_./-]*\.py\b' "$caller"; } | awk '!seen[$0]++')
    n_py=0
    for py in $pys; do if [ -f "$py" ]; then sha256sum "$py"; n_py=$((n_py + 1)); fi; done
    [ $n_py -eq 0 ] && echo "no Python script beside or named by the calling script"
  fi
  if [ -e .git ]; then echo "$(tree_hash) (tree_hash: simcluster/ and validation/ as they ran, tracked or not ignored)"
  else echo "no .git (tree_hash not taken)"; fi
} > "$B/commit.txt" 2>&1
two="python3 -m torch.distributed.run --standalone --nproc-per-node 2"
pack() { tar czf "$OUT/runs.tgz" -C "$W" runs; }
run() {   # NAME LIMIT_S COMMAND...
  local name=$1 limit=$2; shift 2
  local t0=$SECONDS
  timeout "$limit" "$@" > "$B/$name.json" 2> "$B/$name.stderr.txt"
  local rc=$?
  echo "$name exit $rc $((SECONDS - t0)) s" | tee -a "$B/status.txt"
  [ $rc -ne 0 ] && tail -15 "$B/$name.stderr.txt"
  pack
}
lib_start=$SECONDS
guarded() {   # NAME LIMIT_S COMMAND...: run unless the budget (BUDGET_S seconds from sourcing this file) is spent
  if [ -n "${BUDGET_S:-}" ] && [ $((SECONDS - lib_start)) -ge "$BUDGET_S" ]; then
    echo "$1 skipped: budget $BUDGET_S s spent" | tee -a "$B/status.txt"; return
  fi
  run "$@"
}
