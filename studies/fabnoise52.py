"""How far apart do published multi-node nccl-tests runs of one machine kind disagree? (issue 41, session 52, helper
fabnoise52). Measurement against measurement first (no model in part 1-2), then the model's held-out error beside it.

The rows: every row `simcluster validate --published nccl --held-out-systems` judges (calibration/published/nccl-*.yaml
with a scenario, out-of-scope files excluded; busbw at >= 64 MiB, or a peak over the source's range) that runs on 2 or
more nodes. Out-of-place busbw only: the in-place column is the same process a moment later, not a repeat of the run. One file
records the better of the two columns (its source's summary keeps max(out-of-place, in-place): BEST_OF_TWO, marked `+` in part 1;
mendB55, cold review B55 item 1); its rows have no partner today.

The matching rule (two rows are one configuration when ALL of these are equal):
    machine kind   the GPU system.gpu names (reference.source_gpu: A100, H100, H200, B200, GB200), the link across nodes
                   (machine_models.network_link of the file's scenario: rdma-ib, rdma-roce, rdma-efa, or one NVLink
                   domain's), the node's NIC bandwidth (the scenario's nic.per_node x the card's line rate, Gb/s; 0 in
                   one NVLink domain) and system.gpus_per_node;
    row            node count, collective (canonical op), the sizes (exact bytes; a peak row only matches a peak row over
                   the same sizes), the forced algorithm (none = NCCL's choice), the `nvls` flag and the forced protocol.
The scenario is read only for its stated machine (NIC count and rate, from the source or its provider's spec); nothing the model computes enters the
key. Relation of a pair: the same file (one source measured one configuration twice), the same source (source_group: one system, several files), or
different sources (independent measurements of the kind).

Spread of a pair: |a/b - 1| with a the larger busbw (the larger of the two orientations). Pairs of one file pair share their two clusters, so the
summaries also take each file pair once (its median over sizes). Median and 80th percentile (numpy linear interpolation). `*`: a file the held-out
check marks an outlier (its own cards miss its median row by more than 1.5x: a slow cluster of an issue thread); the summaries are printed with and
without the pairs that touch one.

Part 3, per source (its source_group's files): its rows with a partner of another source (no `*`) judged against the partners' mean |partner / row -
1|, or their median spread among themselves where smaller (partners of >= 2 other sources): the floor; its other rows, per machine kind, against the
p80 of the kind's cross-source file-pair medians, only where the kind has >= 2 file pairs from >= 3 sources and a pair of the row's nodes, op and
forced algorithm (the pairs: all_reduce at NCCL's choice, all but one at 2 nodes). Verdict (Verdict.verdict): outlier / slow cluster (every row `*`; a
source mixing `*` and other files: two parts, the `*` files' rows not judged, the others judged on their own rows and figure: mendB53, mendB55),
model miss (above a floor, outside 10%; inside: "within 10%, above its floor"), noise floor, partly told, not told (why); "on one file pair" where that
is all it rests on. Nothing is fitted.
Development, not registered: the matching rule set after a first listing of the records; the verdict rule revised after its first print: (1,
fabnoise52) unpaired rows judged against the kind's spread too (Voltage Park: noise floor -> model miss); (2, mendA52, cold review A52) the `*` class,
minimum pairs, shape / per-kind scope, within-target label (Voltage Park -> partly told, on one pair); (3, mendA54, cold review A54 item 2) the
partners' spread among themselves: the distance alone made a source far from agreeing peers read 'noise floor' by construction (the MGHPCC DGX H100
file: noise floor -> model miss; 4 sources within 10% -> above their floor); (4, mendF54, final read 54 item 6) with partners from one other source
only, a model at or under that distance is not told (one partner: the distance is the floor; Voltage Park: partly told -> not told); (5, mendB55, cold
review B55 item 3) a mixed source printed as two parts with their own figures (before: the verdict of its other rows beside the whole source's figure:
MIT ORCD's H100 x1 rows 'not told' at the B200 files' 118.4%). Part 4 keeps the distance. Rows and pairs: studies/fabnoise52_rows.py.

    python studies/fabnoise52.py          (its print: studies/fabnoise52.txt)
"""

import dataclasses
import sys
from collections import defaultdict
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "studies"))
from fabnoise52_rows import Pair, Row, collect, family_of, kind_label, pairs_of  # noqa: E402,F401  (rows and pairs: studies/fabnoise52_rows.py)

TARGET_PCT = 10.0
BEST_OF_TWO = ("nccl-h100-ib-x2-g1-mit-engaging-dgx",)   # busbw = max(out-of-place, in-place) (orcd-benchmarks dgx-nodes/analyze-nccl.py)


def stats(values: list[float]) -> str:
    if not values:
        return "n 0"
    v = np.array(values)
    return f"n {len(v):3d}  median {np.median(v):5.1f}%  p80 {np.percentile(v, 80):5.1f}%  max {v.max():6.1f}%"


def file_pair_medians(pairs: list[Pair]) -> dict[tuple, float]:
    """Each file pair once: the median of its rows' spreads."""
    by = defaultdict(list)
    for p in pairs:
        by[tuple(sorted((p.a.file, p.b.file)))].append(p.spread_pct)
    return {k: float(np.median(v)) for k, v in by.items()}


def floor_of(source: str, rows: list[Row], pairs: list[Pair], peers: bool = False) -> dict[tuple, float]:
    """(file, run) -> the partners' mean |partner / row - 1| % for each of `source`'s rows with a cross-source partner (partners marked * left out). peers
    (part 3's verdict, mendA54): where the partners come from >= 2 other sources, the smaller of that and their median spread among themselves, the source
    left out (a row far from agreeing peers is not at a floor; one wild partner of two does not lift a row that agrees with the other)."""
    partners = defaultdict(list)
    for p in (q for q in pairs if q.relation == "different sources"):
        for mine, other in ((p.a, p.b), (p.b, p.a)):
            if mine.source == source and not other.outlier:
                partners[(mine.file, mine.run)].append((other, mine.busbw_GBps))
    out = {}
    for k, v in partners.items():
        among = [q.spread_pct for q in pairs if q.relation == "different sources" and {id(q.a), id(q.b)} <= {id(o) for o, _ in v}]
        own = float(np.mean([abs(o.busbw_GBps / m - 1) for o, m in v])) * 100
        out[k] = min(own, float(np.median(among))) if peers and len({o.source for o, _ in v}) >= 2 and among else own
    return out


REVISED = {"nccl-voltagepark-h100-x4": "; first print: noise floor, revision 1: model miss (its other rows against the "
           "2-node kind spread), 2 (mendA52): partly told, on one pair, 4 (mendF54): this",   # the docstring's revisions
           "chris-nccl-notes [other files]": "; before revision 3 (mendA54): noise floor (the DGX file's own distance from its peers)"}
MIN_KIND_PAIRS, MIN_KIND_SOURCES = 2, 3   # a kind's spread judges unpaired rows only from this many file pairs / sources


def shape_of(row: Row) -> tuple:
    """The part of a row's configuration a kind's spread is measured on: node count, collective, forced algorithm."""
    return (row.key[0], row.key[1], row.key[4])


@dataclasses.dataclass(frozen=True)
class KindFloor:
    """A kind's cross-source spread (no *): p80 of its file-pair medians, its file pairs, sources, shapes (shape_of)."""
    p80_pct: float | None
    file_pairs: int
    sources: int
    shapes: frozenset

    @property
    def enough(self) -> bool:
        return self.file_pairs >= MIN_KIND_PAIRS and self.sources >= MIN_KIND_SOURCES


def kind_floors(rows: list[Row], pairs: list[Pair]) -> dict[tuple, KindFloor]:
    cross = [p for p in pairs if p.relation == "different sources" and not p.outlier]
    out = {}
    for kind in {r.kind for r in rows}:
        mine = [p for p in cross if p.a.kind == kind]
        medians = list(file_pair_medians(mine).values())
        out[kind] = KindFloor(float(np.percentile(medians, 80)) if medians else None, len(medians),
                              len({r.source for p in mine for r in (p.a, p.b)}), frozenset(shape_of(p.a) for p in mine))
    return out


@dataclasses.dataclass(frozen=True)
class Verdict:
    source: str
    kind: str
    rows: int
    held_out_pct: float          # the held-out check's figure for the source (all its rows, single-node ones included)
    paired: int                  # its rows with a cross-source partner
    floor_pct: float | None      # the partners' mean |error| on those rows
    model_paired_pct: float | None
    rest: int                    # its other multi-node rows
    model_rest_pct: float | None  # the model's mean |error| on the judged ones (judged_rest)
    kind_p80_pct: float | None   # p80 of their kind's cross-source file-pair medians (two kinds: the mean, shown only)
    judged_rest: int = 0         # rest rows of a shape their kind's pairs cover (shape_of), where the kind has enough
    rest_parts: tuple = ()       # per kind of the judged rest rows: 'floor' (model <= its kind80) or 'miss'
    floor_pairs: int = 0         # file pairs behind floor_pct (with the kinds', behind the verdict: one_pair)
    kind_pairs: int = 0
    outlier: bool = False        # every row in a file the held-out check marks * (a known slow cluster)
    why_untold: str = "no other source of its kind"
    partner_sources: int = 2     # other sources among the paired rows' partners (revision 4: one cannot tell a floor)
    part: str = ""               # a source mixing * files and others: ' [* files]' / ' [other files]', each its own rows and figure (mendB55)

    @property
    def name(self) -> str:
        return self.source + self.part

    @property
    def parts(self) -> list[str]:
        """Each judged part: 'floor' or 'miss'; 'untold' for rows no partner or kind spread can judge."""
        at = "floor" if self.partner_sources >= 2 else "one partner"   # revision 4: one partner's distance is no floor
        return (([at if self.model_paired_pct <= self.floor_pct else "miss"] if self.paired else [])
                + list(self.rest_parts) + (["untold"] if self.rest > self.judged_rest else []))

    @property
    def one_pair(self) -> bool:
        """The judged parts rest on one file pair in all."""
        return bool(self.paired or self.judged_rest) and (self.floor_pairs if self.paired else 0) + (
            self.kind_pairs if self.judged_rest else 0) <= 1

    @property
    def verdict(self) -> str:
        """outlier / slow cluster: every row in a * file, not judged; model miss: a judged part above its floor and the source outside the target (within
        it: above its floor, not a miss); noise floor: every part judged and at it; partly told: the judged rows at their floor, the others not judged; not
        told: no row judged (and why)."""
        parts = self.parts
        if self.outlier:
            return "outlier / slow cluster (held-out *): not judged"
        if "miss" in parts:
            label = "model miss" if self.held_out_pct > TARGET_PCT else f"within {TARGET_PCT:.0f}%, above its floor"
        elif "floor" in parts:
            label = "noise floor" if set(parts) == {"floor"} else "partly told (judged rows at the floor)"
        elif "one partner" in parts:
            return "not told: one partner source (its distance is the floor)"
        else:
            return f"not told: {self.why_untold}"
        untold = self.rest - self.judged_rest
        return (label + ("; on one file pair" if self.one_pair else "")
                + (f"; {untold} row{'s' * (untold != 1)} not judged" if "miss" in parts and untold else ""))


def _mean(xs: list[float]) -> float | None:
    return float(np.mean(xs)) if xs else None

def classify(rows: list[Row], pairs: list[Pair], held_out: dict[str, tuple[int, float]]) -> list[Verdict]:
    """One Verdict per source with multi-node rows (module docstring, part 3); its unpaired rows judged per machine kind (a source may span two), only where
    the kind's spread rests on enough pairs and covers the row's shape."""
    floors_by_kind, out = kind_floors(rows, pairs), []
    for source, (n, pct), every, part in _parts(rows, held_out):
        mine, floors = every, floor_of(source, rows, pairs, peers=True)
        paired = [r for r in mine if (r.file, r.run) in floors]
        rest = [r for r in mine if (r.file, r.run) not in floors]
        judged = [r for r in rest if floors_by_kind[r.kind].enough and shape_of(r) in floors_by_kind[r.kind].shapes]
        kinds = list(dict.fromkeys(r.kind for r in mine))
        used = {r.kind: floors_by_kind[r.kind] for r in judged}
        parts = tuple("floor" if _mean([abs(r.model_pct) for r in judged if r.kind == k]) <= f.p80_pct else "miss"
                      for k, f in used.items())
        cross = [p for p in pairs if p.relation == "different sources" and not p.outlier and (p.a.source == source) != (p.b.source == source)]
        partner_files = {tuple(sorted((p.a.file, p.b.file))) for p in cross}
        why = ("no other source of its kind" if not any(floors_by_kind[k].file_pairs for k in kinds) else
               f"too few pairs of its kind (fewer than {MIN_KIND_PAIRS} file pairs from {MIN_KIND_SOURCES} sources)"
               if not any(floors_by_kind[k].enough for k in kinds) else "no pair of its rows' shape (nodes, op)")
        out.append(Verdict(source, " / ".join(kind_label(k) for k in kinds), n, pct, len(paired), _mean([floors[(r.file, r.run)] for r in paired]),
                           _mean([abs(r.model_pct) for r in paired]), len(rest), _mean([abs(r.model_pct) for r in judged]),
                           _mean([f.p80_pct for f in used.values()]), len(judged), parts, len(partner_files),
                           sum(f.file_pairs for f in used.values()), all(r.outlier for r in every), why,
                           len({p.b.source if p.a.source == source else p.a.source for p in cross}), part))
    return out


def _parts(rows: list[Row], held_out: dict[str, tuple[int, float]]):
    """(source, (rows, held-out %), its multi-node rows, part) per source; a source mixing * files and others (mendB53; mendB55, review B55 item 3) is two
    parts, each with its own rows and their mean |error| (multi-node rows only), so that a * part's figure never labels the other part's verdict."""
    for source, (n, pct) in held_out.items():
        every = [r for r in rows if r.source == source]
        split = [[r for r in every if r.outlier], [r for r in every if not r.outlier]]
        for part, mine in (zip((" [* files]", " [other files]"), split, strict=True) if all(split) else [("", every)] if every else []):
            yield source, (len(mine), _mean([abs(r.model_pct) for r in mine])) if part else (n, pct), mine, part


def file_label(r: Row) -> str:
    """A row's file as part 1 prints it: * outlier (the held-out check's), ~ approximate, + busbw the best of two columns."""
    return r.file + ("*" if r.outlier else "") + ("~" if r.approximate else "") + ("+" if r.file in BEST_OF_TWO else "")


def _f(x: float | None) -> str:
    return "    -" if x is None else f"{x:5.1f}"


def main() -> None:
    from simcluster.reference.nccl_held_out import held_out_systems, sources

    pairs = pairs_of(rows := collect())
    print("# Published multi-node nccl-tests rows of one machine kind measured more than once (studies/fabnoise52.py)")
    print(f"# {len(rows)} multi-node rows, {len({r.file for r in rows})} files, {len({r.source for r in rows})} sources; "
          f"{len(pairs)} pairs of one configuration (the module's matching rule)")
    print("\n## 1. Every pair (spread = larger / smaller busbw - 1; * a file the held-out check marks outlier; ~ approximate row; "
          "+ best of out-of-place / in-place)")
    print(f"{'machine kind':34s} {'nodes':>5s} {'op':10s} {'size':>9s} {'alg':5s} {'relation':17s} {'file a':38s} "
          f"{'GB/s':>7s} {'file b':38s} {'GB/s':>7s} {'spread':>7s}")
    for p in sorted(pairs, key=lambda p: (p.relation, kind_label(p.a.kind), p.a.key[0], p.a.key[1], p.a.key[3], p.a.file, p.b.file)):
        nodes, op, peak, sizes, forced = p.a.key[:5]
        size = "peak" if peak else (f"{sizes[0] >> 20}MiB" if len(sizes) == 1 else f"{len(sizes)} sizes")
        name = [file_label(r)[:38] for r in (p.a, p.b)]
        print(f"{kind_label(p.a.kind)[:34]:34s} {nodes:5d} {op:10s} {size:>9s} {(forced or '-')[:5]:5s} {p.relation:17s} "
              f"{name[0]:38s} {p.a.busbw_GBps:7.2f} {name[1]:38s} {p.b.busbw_GBps:7.2f} {p.spread_pct:6.1f}%")

    print("\n## 2. The spread (measurement against measurement; no model)")
    for label, keep in (("all pairs", lambda p: True), ("without pairs touching a * file", lambda p: not p.outlier)):
        chosen = [p for p in pairs if keep(p)]
        print(f"### {label}")
        for relation in ("same file", "same source", "different sources"):
            these = [p for p in chosen if p.relation == relation]
            print(f"  {relation:17s} rows:       {stats([p.spread_pct for p in these])}")
            print(f"  {relation:17s} file pairs: {stats(list(file_pair_medians(these).values()))}")
    print("### different sources, without * files, by NIC family / GPU (rows; file pairs once)")
    cross = [p for p in pairs if p.relation == "different sources" and not p.outlier]
    for fam in sorted({family_of(p.a.kind) for p in cross}):
        these = [p for p in cross if family_of(p.a.kind) == fam]
        print(f"  {fam:18s} rows: {stats([p.spread_pct for p in these])}   file pairs: {stats(list(file_pair_medians(these).values()))}")
    print("### every file pair of different sources (median over its sizes)")
    for (fa, fb), m in sorted(file_pair_medians([p for p in pairs if p.relation == "different sources"]).items()):
        n = sum(1 for p in pairs if tuple(sorted((p.a.file, p.b.file))) == (fa, fb))
        print(f"  {fa:44s} {fb:44s} {n:3d} rows  median {m:5.1f}%")

    print("\n## 3. The model's held-out error beside the floor, per source (held-out: validate --published nccl --held-out-systems)")
    held = {s.source: (s.rows, s.held_out_pct) for s in sources(held_out_systems())}
    table = classify(rows, pairs, held)
    print(f"{'source':44s} {'machine kind':30s} {'rows':>4s} {'held':>5s} {'pair':>4s} {'floor':>5s} {'model':>5s} "
          f"{'rest':>4s} {'judg':>4s} {'model':>5s} {'kind80':>6s}  verdict")
    for v in table:
        print(f"{v.name[:44]:44s} {v.kind[:30]:30s} {v.rows:4d} {v.held_out_pct:5.1f} {v.paired:4d} {_f(v.floor_pct)} "
              f"{_f(v.model_paired_pct)} {v.rest:4d} {v.judged_rest:4d} {_f(v.model_rest_pct)} {_f(v.kind_p80_pct)}   "
              f"{v.verdict}")
    print("  held: the source's held-out mean |error| %; pair: its rows with a partner row of another source (not *); floor: the partners' mean |error| % "
          "on them, or their median spread among themselves where smaller; model: the model's mean |error| % on them; rest: its other multi-node rows; judg: "
          f"those judged (a kind with >= {MIN_KIND_PAIRS} cross-source file pairs from >= {MIN_KIND_SOURCES} sources, and a pair of the row's nodes, op and "
          "forced algorithm), the model's mean |error| % on them against kind80, the 80th percentile of their kind's cross-source file-pair medians; a source "
          "spanning two kinds is judged per kind. The pairs are all_reduce at NCCL's choice, all but one at 2 nodes: only such rows are judged. A source "
          "mixing * files and others is two parts (' [* files]', ' [other files]'), each with its own multi-node rows and their held-out mean |error| %")
    outside = [v for v in table if v.held_out_pct > TARGET_PCT]
    single = sorted(s for s in set(held) - {v.source for v in table} if held[s][1] > TARGET_PCT)
    print(f"\n### the {len(outside) + len(single)} sources (a mixed source's parts apart) outside {TARGET_PCT:.0f}% (held-out), by verdict")
    base = {v.name: v.verdict.split(";")[0] for v in table}     # the verdict's class; its qualifiers beside the name
    for verdict in sorted({base[v.name] for v in outside}):
        names = [f"{v.name} ({v.held_out_pct:.1f}%{v.verdict[len(verdict):]}{REVISED.get(v.name, '')})"
                 for v in outside if base[v.name] == verdict]
        print(f"  {verdict} ({len(names)}): {', '.join(names)}")
    if single:
        print(f"  not told: one node only ({len(single)}): {', '.join(single)}")
    medians = list(file_pair_medians([p for p in pairs if p.relation == "different sources" and not p.outlier]).values())
    p80, top = float(np.percentile(medians, 80)), max(medians)
    untold = [v for v in outside if v.verdict.startswith("not told")]
    print(f"  the {len(untold)} not told against every kind's cross-source spread (2-node all_reduce file pairs without *: "
          f"p80 {p80:.1f}%, max {top:.1f}%), an assumption that their kinds and shapes spread as those do: "
          f"{sum(v.held_out_pct > top for v in untold)} above the max, {sum(v.held_out_pct > p80 for v in untold)} above the p80")
    within = [v for v in table if v.held_out_pct <= TARGET_PCT]
    print(f"### the {len(within)} multi-node sources (parts) within {TARGET_PCT:.0f}%: "
          + ", ".join(f"{c} {sum(base[v.name] == c for v in within)}" for c in sorted({base[v.name] for v in within})))
    print_regimes(rows, pairs)


def print_regimes(rows: list[Row], pairs: list[Pair]) -> None:
    """Part 4: by the error-band table's regime, the multi-node rows of files not marked * (a slow cluster's rows would carry its distance from the class as
    a floor), those with a cross-source partner (not *): the partners' mean |error| (the floor) and the model's held-out mean |error| on the same rows,
    beside all the regime's rows (* files' too)."""
    floors = {k: f for source in sorted({r.source for r in rows}) for k, f in floor_of(source, rows, pairs).items()}
    print("\n## 4. By error-band regime (the rows' regime in validate --published nccl; the model's error here is the "
          "held-out check's)")
    print(f"{'regime':78s} {'rows':>4s} {'model':>5s} {'pair':>4s} {'floor':>5s} {'model':>5s}")
    for regime in sorted({r.regime for r in rows}):
        mine = [r for r in rows if r.regime == regime]
        paired = [r for r in mine if (r.file, r.run) in floors and not r.outlier]
        print(f"{regime[:78]:78s} {len(mine):4d} {_mean([abs(r.model_pct) for r in mine]):5.1f} {len(paired):4d} "
              f"{_f(_mean([floors[(r.file, r.run)] for r in paired]))} {_f(_mean([abs(r.model_pct) for r in paired]))}")
    print("  rows / model: the regime's multi-node rows and the model's held-out mean |error| % on them; pair: those of a "
          "file not * with a partner of another source; floor / model: the partners' / the model's mean |error| % on them")

if __name__ == "__main__":
    import study_args  # an unknown argument refused before the study runs
    study_args.check()
    raise SystemExit(main())
