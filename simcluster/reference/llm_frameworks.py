"""Which training code (llm/framework.FRAMEWORKS) a published LLM file's rows ran: its `simcluster.framework`,
`framework_by_model` and `framework_by_run` keys checked (reference/llm.py's framework_of reads them)."""

from __future__ import annotations

from dataclasses import dataclass

from simcluster.errors import SimclusterError
from simcluster.llm import moe_router_term
from simcluster.published import Published, checked, one_of
from simcluster.strict import short


def framework_choice(ref: Published) -> tuple[str, dict]:
    """(the file's `simcluster.framework`, default megatron; `simcluster.framework_by_model`: model name -> framework),
    every name one of llm/framework.FRAMEWORKS and every model name some run's model.name (a typo is one line naming it)."""
    from simcluster.llm.framework import FRAMEWORKS

    where = f"{ref.path}: simcluster"
    default = "megatron" if ref.usage.get("framework") is None else checked(ref.usage, "framework", where, one_of(tuple(FRAMEWORKS)))
    by_model = ref.usage.get("framework_by_model") or {}
    if not isinstance(by_model, dict):
        raise SimclusterError("simcluster.framework_by_model: expected a mapping of model name -> framework", where=str(ref.path))
    names = sorted({str(r["model"].get("name")) for r in ref.runs if isinstance(r.get("model"), dict)})
    for name, framework in by_model.items():
        at = f"{where}.framework_by_model[{str(name)[:40]!r}]"
        if name not in names:
            raise SimclusterError("no run's model.name is this name", where=at, hint=f"the runs' models: {', '.join(names)}")
        if not isinstance(framework, str) or framework not in FRAMEWORKS:
            raise SimclusterError(f"{short(framework)} is not one of {', '.join(FRAMEWORKS)}", where=at)
    return default, by_model


def framework_by_run(ref: Published) -> dict[int, str]:
    """`simcluster.framework_by_run`: run index -> framework, over framework_by_model (one run of a model that ran
    differently: KempnerForge's row 7 without torch.compile, its other 13B rows compiled; session 47); a bad index or
    name is one line naming it."""
    from simcluster.llm.framework import FRAMEWORKS

    by_run = ref.usage.get("framework_by_run") or {}
    if not isinstance(by_run, dict):
        raise SimclusterError("simcluster.framework_by_run: expected a mapping of run index -> framework", where=str(ref.path))
    for i, framework in by_run.items():
        at = f"{ref.path}: simcluster.framework_by_run[{str(i)[:10]!r}]"
        if not isinstance(i, int) or isinstance(i, bool) or not 0 <= i < len(ref.runs):
            raise SimclusterError(f"expected a run index from 0 to {len(ref.runs) - 1}", where=at)
        if not isinstance(framework, str) or framework not in FRAMEWORKS:
            raise SimclusterError(f"{short(framework)} is not one of {', '.join(FRAMEWORKS)}", where=at)
    return by_run


@dataclass(frozen=True)
class FileFrameworks:
    """A file's framework keys, checked once (file_frameworks): `framework` (default megatron), `framework_by_model`
    (model name -> framework), `framework_by_run` (run index -> framework)."""

    default: str
    by_model: dict
    by_run: dict

    def name(self, ref: Published, run: dict | None, index: int | None) -> str:
        """The framework a run is priced with: by_run[index], else by_model[its model.name], else the file's default.
        Without an index the run is looked up by identity in ref.runs; a copy of a run of a file with framework_by_run
        is refused (cold review B47 item 10)."""
        if index is None and run is not None:
            index = next((i for i, r in enumerate(ref.runs) if r is run), None)
            if index is None and self.by_run:
                raise SimclusterError("framework_by_run: the run is not one of the file's runs; pass its index", where=str(ref.path))
        model = (run or {}).get("model")
        return self.by_run.get(index) or (self.by_model.get(model.get("name")) if isinstance(model, dict) else None) or self.default


def file_frameworks(ref: Published) -> FileFrameworks:
    """The file's framework keys, every one checked (framework_choice, framework_by_run): once per file, by
    reference/llm.llm_usage (LlmUsage.frameworks), not once per row."""
    return FileFrameworks(*framework_choice(ref), framework_by_run(ref))


def framework_name(ref: Published, run: dict | None, index: int | None,
                   frameworks: FileFrameworks | None = None) -> str:
    """The framework a run is priced with (FileFrameworks.name), from the file's keys checked once where the caller holds
    them (`frameworks`), else checked now."""
    return (frameworks or file_frameworks(ref)).name(ref, run, index)


def row_label(ref: Published, run: dict | None, index: int, family: str, frameworks: FileFrameworks | None = None) -> dict:
    """A published LLM row's label, ReferenceRow's held_out and development_for: held out as its file says, unless a
    term adopted on the rows' own errors makes it development (llm/moe_router_term.development_why: the MoE rows of the
    frameworks in the router term's scope in the files its rule priced, since session 49's adopt49)."""
    held = ref.held_out(index)
    why = (moe_router_term.development_why(framework_name(ref, run, index, frameworks), family, ref.path.name)
           if held and family == "MoE" else "")
    return {"held_out": held and not why, "development_for": why}
