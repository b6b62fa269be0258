"""`simcluster validate --published llm --families`: the published LLM rows per issue-44 family (trust/regime.published_family),
held out, development and not compared apart (split out of results.py in session 46, mendA46)."""

from __future__ import annotations

from dataclasses import dataclass

from simcluster.errors import SimclusterError
from simcluster.results import ReferenceRow, ReferenceValidation


@dataclass(frozen=True)
class FamilyValidation:
    """`validate --published llm --families`: the published LLM rows per issue-44 family (trust/regime.published_family),
    held out and development apart: rows, sources (a `source_group` counted once), mean |error| and the share within
    the target; the issue's target per family is mean |error| <= target and >= FAMILY_SHARE of the held-out rows within it,
    judged only on held-out rows from >= MIN_SOURCES sources (a family of one source, one trainer and one team, is "not
    judged" even where its rows meet the numbers: cold review A47 item 8). Met must not rest on one source (issue 44,
    session 50; trust/thin): the numbers must also hold with each source weighing once, and >= MIN_OTHER_ROWS held-out
    rows must come from >= MIN_OTHER_SOURCES sources other than the largest (the sources since session 54, rule54);
    else the verdict is "thin: one source carries it", not met."""

    published: ReferenceValidation

    FAMILY_SHARE = 0.8   # issue 44: >= 80% of a family's held-out rows within 10%
    MIN_SOURCES = 2      # a target met on one source (a `source_group` counted once) is not judged met

    @staticmethod
    def check(published: str | None) -> None:
        """The one refusal of `--families`: it goes with `--published llm` (cli_validate.cmd_validate asks before any work)."""
        if published != "llm":
            raise SimclusterError("--families goes with --published llm", hint="simcluster validate --published llm --families")

    @property
    def skipped(self) -> list[str]:
        return self.published.skipped

    def families(self) -> list[dict]:
        from simcluster.trust.regime import PUBLISHED_FAMILIES

        rows = [r for r in self.published.rows if r.family]   # a row not compared: its family from what its file prints
        names = list(PUBLISHED_FAMILIES) + sorted({r.family for r in rows} - set(PUBLISHED_FAMILIES))
        return [{"family": name, "held_out": self._stats([r for r in rows if r.family == name and r.held_out]),
                 "development": self._stats([r for r in rows if r.family == name and not r.held_out]),
                 "development_for": sorted({r.development_for for r in rows if r.family == name and r.development_for})}
                for name in names]

    @staticmethod
    def no_held_out_since(family: dict) -> str:
        """Why a family has no held-out row left: every row its files hold out is development for an adopted term
        (ReferenceRow.development_for, e.g. MoE since the router term), else "" (its held-out line: not judged)."""
        s = family["held_out"]
        return "; ".join(family["development_for"]) if family["development_for"] and not s["rows"] + s["not_compared"] else ""

    def no_family(self) -> int:
        """Rows not compared whose file prints too little to name their family (reference/llm.printed_family)."""
        return sum(not r.family for r in self.published.rows)

    def _verdict(self, per_source: dict[str, list[float]], numbers: bool) -> tuple[dict, str, str]:
        """(source figures, thin_why, verdict) of rows that meet the numbers or not, by their sources' |error| %."""
        from simcluster.trust.thin import source_figures, thin_why

        target = 100 * self.published.target
        judged = len(per_source) >= self.MIN_SOURCES
        figures = source_figures(per_source, target)
        thin = thin_why(figures, target, self.FAMILY_SHARE) if numbers and judged else ""
        verdict = ("no rows" if not per_source else "not met" if not numbers else "not judged" if not judged
                   else "thin" if thin else "met")
        return figures, thin, verdict

    def _on_grouping(self, group: str, per_source: dict[str, list[float]], files: dict[str, list[float]], numbers: bool,
                     verdict: str) -> dict:
        """How the verdict reads with one source_group's files counted apart, {} where it reads the same: all its files
        apart at once ('verdict'), and (a group of 3+ files) each file apart with the rest still grouped
        ('one_file_apart'), since one file apart can flip a verdict that all apart do not (cold review C53 item 1: fp8,
        NeMo 25.04's page). Where it differs the verdict rests on that grouping (final read 52 item 9)."""
        rest = {k: v for k, v in per_source.items() if k != group}
        apart = self._verdict(rest | files, numbers)[2]
        singly = {}
        for name in files if len(files) > 2 else ():   # two files: one apart is all apart
            others = [e for n, x in files.items() if n != name for e in x]
            one = self._verdict(rest | {name: files[name], f"{group} without {name}": others}, numbers)[2]
            if one != verdict:
                singly[name] = one
        if apart == verdict and not singly:
            return {}
        return {"files": len(files), "verdict": apart if apart != verdict else None} | ({"one_file_apart": singly} if singly else {})

    def _stats(self, rows: list[ReferenceRow]) -> dict:
        compared = [r for r in rows if r.error is not None]
        errs = [abs(r.error) for r in compared]
        target = self.published.target
        within = sum(e <= target for e in errs)
        mean = sum(errs) / len(errs) if errs else None
        per_source: dict[str, list[float]] = {}
        files: dict[str, dict[str, list[float]]] = {}   # a source's rows by file
        for r in compared:
            per_source.setdefault(r.source_group or r.source, []).append(100 * abs(r.error))
            files.setdefault(r.source_group or r.source, {}).setdefault(r.source, []).append(100 * abs(r.error))
        sources = sorted(per_source)
        numbers = bool(errs) and mean <= target and within >= self.FAMILY_SHARE * len(errs)
        figures, thin, verdict = self._verdict(per_source, numbers)
        on_grouping = {g: d for g in sources if len(files[g]) > 1
                       if (d := self._on_grouping(g, per_source, files[g], numbers, verdict))}
        return {"rows": len(errs), "sources": sources, "largest_source_rows": max(map(len, per_source.values()), default=0),
                "source_rows": {x: len(per_source[x]) for x in sources},
                "mean_abs_error_pct": None if mean is None else mean * 100, "within_target": within,
                "within_share": within / len(errs) if errs else None,
                "each_source_once_mean_abs_error_pct": figures["each_source_once_mean"],
                "each_source_once_within_share": figures["each_source_once_share"],
                "rows_outside_largest_source": figures["rows_outside_largest"],
                "sources_outside_largest_source": figures["sources_outside_largest"],
                "meets_numbers": numbers, "judged": len(sources) >= self.MIN_SOURCES, "verdict": verdict,
                "thin_why": thin or None, "verdict_on_grouping": on_grouping,
                "meets_target": verdict == "met", "not_compared": len(rows) - len(compared)}

    def to_json(self) -> dict:
        from simcluster.trust.thin import MIN_OTHER_ROWS, MIN_OTHER_SOURCES

        return {"kind": "published llm families", "target_pct": self.published.target * 100,
                "family_share": self.FAMILY_SHARE, "min_sources": self.MIN_SOURCES, "min_rows_outside_largest_source": MIN_OTHER_ROWS,
                "min_sources_outside_largest_source": MIN_OTHER_SOURCES,
                "families": self.families(), "not_compared_no_family": self.no_family(),
                "skipped": self.skipped}
