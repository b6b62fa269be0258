"""Every form of the MoE host term after the dispatcher sync that session moepub (s35) saw on the published MoE rows
before it kept one, reproduced on today's model (mendB item 2; llm/moe_sync.py; llm-findings.md, session moepub and
mendB). For each variant: c re-derived from the skills row 0's Nsight GPU idle (studies/moe_te_host.derive, under
the variant), then studies/moe_rows.py's two tables at that c.
  none         no term (c = 0): the model before df8be3e
  per-expert   the first form, never committed: each local expert's GEMM its own host call (moe_sync.kernel_list with
               an expert GEMM group split into its `batch` GEMMs); session moepub reported c = 57.4 us
  grouped      df8be3e as committed: an expert GEMM group one host call, the term also under moe_a2a_overlap
  deepep-x1.74 the /tmp experiment of 10aa4763, never committed: the grouped form with the `deepep` dispatcher's every
               dispatch / combine time x 1.74 (HybridEP's profiled communication over the model's EP), c re-derived;
               moepub reported c = 171.5 us. Whether it scaled the in-node (forward) part as well is not recorded: here
               comm.ep_dispatch_s's result is scaled whenever the dispatcher is deepep
  kept         mendB: the grouped form, no term under moe_a2a_overlap (moe_sync.applies)
    python studies/moe_sync_variants.py [variant ...]
"""

from __future__ import annotations

import contextlib
import sys
from pathlib import Path
from unittest import mock

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import moe_rows  # noqa: E402
import moe_te_host  # noqa: E402

from simcluster.llm import comm, moe_sync, ops  # noqa: E402

VARIANTS = ("none", "per-expert", "grouped", "deepep-x1.74", "kept")
DEEPEP_FACTOR = 1.74
_kernel_list, _applies, _ep_dispatch_s = moe_sync.kernel_list, moe_sync.applies, comm.ep_dispatch_s


def per_expert_kernel_list(gpu, op_list: list, dtype: str) -> np.ndarray:
    """The first form: an expert GEMM group (ops.GROUPED_GEMMS, `batch` local experts) as `batch` host calls."""
    out = []
    for o in op_list:
        n = max(1, round(o.count))
        if o.kind == "gemm" and o.name.removeprefix("recompute.").split(".")[0] in ops.GROUPED_GEMMS:
            n *= o.shape[3]
        out.append(np.full(n, ops.op_time_s(gpu, o, dtype) / n))
    return np.concatenate(out) if out else np.zeros(0)


def also_under_overlap(fw, par) -> bool:
    return fw.transformer_engine and fw.moe_host is None and fw.moe_sync_kernel_s > 0


def slower_deepep(model, par, net, group, nbytes):
    t = _ep_dispatch_s(model, par, net, group, nbytes)
    return t * DEEPEP_FACTOR if par.moe_dispatcher == "deepep" else t


@contextlib.contextmanager
def variant(name: str):
    patches = {"none": [], "kept": [], "grouped": [mock.patch.object(moe_sync, "applies", also_under_overlap)],
               "per-expert": [mock.patch.object(moe_sync, "applies", also_under_overlap),
                              mock.patch.object(moe_sync, "kernel_list", per_expert_kernel_list)],
               "deepep-x1.74": [mock.patch.object(moe_sync, "applies", also_under_overlap),
                                mock.patch.object(comm, "ep_dispatch_s", slower_deepep)]}[name]
    with contextlib.ExitStack() as stack:
        for p in patches:
            stack.enter_context(p)
        yield


def run(name: str) -> None:
    with variant(name):
        c = 0.0 if name == "none" else moe_te_host.derive()
        print(f"== variant {name}: c = {1e6 * c:.1f} us")
        moe_rows.summary(moe_rows.MOE_ROWS, "the 14 H100 MoE rows", c)
        moe_rows.summary(moe_rows.NEW_ROWS, "session moepub's new rows", c)


def main() -> None:
    for name in sys.argv[1:] or VARIANTS:
        if name not in VARIANTS:
            sys.exit(f"studies/moe_sync_variants.py: unknown variant {name!r} (one of {', '.join(VARIANTS)})")
        run(name)


if __name__ == "__main__":
    import study_args  # an unknown argument refused before the study runs
    study_args.check(names=VARIANTS)
    main()
