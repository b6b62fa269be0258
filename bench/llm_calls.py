"""The call structure of one LLM prediction (not a test): the second run_scenario of a scenario (imports done, the
process's models built) counted with sys.setprofile: calls between simcluster modules,
the llm.work <-> llm.comm ones and their distinct function pairs, card/YAML reads, calls into build.py from below.
    python bench/llm_calls.py scenarios/llm/llama405b-16k.yaml
"""
from __future__ import annotations

import collections
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from simcluster import build  # noqa: E402
from simcluster.scenario import load  # noqa: E402

calls, pairs, reads = collections.Counter(), set(), collections.Counter()
up = [0]


def prof(frame, event, arg):
    if event != "call" or frame.f_back is None:
        return
    callee, caller = frame.f_globals.get("__name__", ""), frame.f_back.f_globals.get("__name__", "")
    if not (callee.startswith("simcluster") and caller.startswith("simcluster")) or callee == caller:
        return
    calls[(caller, callee)] += 1
    if {caller, callee} == {"simcluster.llm.work", "simcluster.llm.comm"}:
        pairs.add((frame.f_back.f_code.co_name, frame.f_code.co_name))
    if frame.f_code.co_name.startswith("load") or callee in ("simcluster.cards",):
        reads[f"{callee}.{frame.f_code.co_name}"] += 1
    if callee == "simcluster.build" and not caller.startswith("simcluster.build"):
        up[0] += 1


def main() -> None:
    from simcluster.errors import SimclusterError
    from simcluster.script_args import check

    args = check(words=1, usage="SCENARIO.yaml")
    if not args:
        raise SystemExit("llm_calls.py: expected a scenario file (SCENARIO.yaml)")
    try:
        sc = load(args[0])
    except SimclusterError as exc:
        raise SystemExit(f"llm_calls.py: {exc}") from None
    build.run_scenario(sc)
    sys.setprofile(prof)
    build.run_scenario(sc)
    sys.setprofile(None)
    wc = calls[("simcluster.llm.work", "simcluster.llm.comm")] + calls[("simcluster.llm.comm", "simcluster.llm.work")]
    print(f"cross-module calls {sum(calls.values())}; llm.work<->llm.comm {wc} calls, {len(pairs)} distinct function pairs; "
          f"card/YAML reads {sum(reads.values())} {dict(reads)}; calls up into build.py {up[0]}")


if __name__ == "__main__":
    main()
