"""The compile set's registered read (issue 44, cold read B; not a test): calibration/h200x1-llm-compile-2026-11-29's
read-out as its rule ran it at the run's own commit, written once into the set's folder.

    git archive c0bd808 | tar x -C /tmp/compile-c0bd808
    python validation/llm_compile_registered_read.py /tmp/compile-c0bd808

The set's rule predicts each check/ run with host costs fitted on the same call's host/ runs (hidden 128, never the
judged shapes); predictions.json, written before the run, holds PLACEHOLDER host costs instead (its README says so).
This runs the OLD tree's `validation/llm_compile.py <set>` (the model as it stood when the run came back, c0bd808) with
the old tree's own package and writes its whole output to readout-registered.txt, and its predicted columns at full
precision (the same tree's rows_from_runs) with the rule's verdict line to readout-registered.json. Both files are
written once (heldout/registration.write_registration). The run's data: the old tree's folder if it has host/ and
check/, else this tree's (copied into it first)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from simcluster.errors import SimclusterError  # noqa: E402
from simcluster.heldout.registration import refuse_existing, write_registration  # noqa: E402
from simcluster.script_args import check  # noqa: E402

SET = "calibration/h200x1-llm-compile-2026-11-29"
COMMIT = "c0bd808"
KEYS = ("preset", "seq", "micro_batch", "compiled", "pred_s", "pred_bytes")
ROWS = f"""
import json, os, sys
sys.path.insert(0, "validation")
import llm_compile as c
import simcluster
from simcluster.llm import eager
assert simcluster.__file__.startswith(os.getcwd()), simcluster.__file__
rows = c.rows_from_runs(c.SET, eager.fit_modes(c.SET / "host"), c.load_gpu(c.CARD)[0])
fits = {{m: list(v[:2]) for m, v in eager.fit_modes(c.SET / "host").items() if m in ("single", "compile")}}
print(json.dumps({{"host_fit": fits, "rows": [{{k: r[k] for k in {KEYS!r}}} for r in rows]}}))
"""


def _run(tree: Path, args: list[str]) -> str:
    env = dict(os.environ, PYTHONPATH=str(tree))
    done = subprocess.run([sys.executable, *args], cwd=tree, env=env, capture_output=True, text=True)
    if done.returncode:
        raise SimclusterError(f"{' '.join(args[:2])} failed (exit {done.returncode}): {done.stderr.strip()[-300:]}", where=str(tree))
    return done.stdout


def main(argv: list[str]) -> int:
    check(words=1, usage=f"TREE (a git archive {COMMIT} tree)", argv=argv)
    if len(argv) != 1 or not (Path(argv[0]) / "validation/llm_compile.py").is_file():
        print(f"usage: python validation/llm_compile_registered_read.py TREE (a `git archive {COMMIT}` tree)", file=sys.stderr)
        return 2
    tree = Path(argv[0]).resolve()
    try:
        text_out, json_out = (refuse_existing(ROOT / SET / f"readout-registered.{ext}") for ext in ("txt", "json"))
        for sub in ("host", "check"):
            if not (tree / SET / sub).is_dir():
                shutil.copytree(ROOT / SET / sub, tree / SET / sub)
        text = _run(tree, ["validation/llm_compile.py", SET])
        doc = json.loads(_run(tree, ["-c", ROWS]))
    except SimclusterError as exc:
        print(f"llm_compile_registered_read: {exc}", file=sys.stderr)
        return 2
    verdict = next((line for line in text.splitlines() if line.startswith("rule")), None)
    if verdict is None:
        print(f"llm_compile_registered_read: {tree}: the read-out printed no `rule` line", file=sys.stderr)
        return 2
    doc = {"commit": COMMIT, "command": f"python validation/llm_compile.py {SET}", "rule": verdict,
           "verdict": verdict.rsplit(": ", 1)[1], **doc}
    write_registration(text_out, text)
    write_registration(json_out, json.dumps(doc, indent=1) + "\n")
    print(text, end="")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
