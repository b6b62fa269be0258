"""The results store: a folder of Parquet part files, one row per sweep point, plus `_sweep.json` (the manifest).

    RESULTS/_sweep.json                what was swept (scenario, keys, mode, plan section), simcluster's version
    RESULTS/part-<time>-<pid>-<n>.parquet   rows as points finish, one file per batch

Each part is written to a temporary name beside it, fsynced and renamed (files.atomic_write) while the sweep
holds the folder's lock, so a part is whole or absent: a sweep killed with kill -9 loses at most the points of
the batch in memory, and a second run computes exactly the points whose hash no part holds. Reading dedupes by
hash (first part in name order wins), so even a part written twice cannot count a point twice.

Columns: `point_hash`, `status` (ok | invalid | failed), `error`, `simcluster_version`, `param.<dotted key>`,
`machine.*` (GPUs, nodes, card names, NIC and switch counts), and every number the job results' to_json() hold,
flattened as `jobs[i].<key>[.<key>...]` (numbers as float64, so the same column has one type in every part).
Read it as it is: pyarrow.parquet.read_table(RESULTS) or pandas.read_parquet(RESULTS) when every point ran the
same job kinds; DuckDB: SELECT * FROM read_parquet('RESULTS/*.parquet', union_by_name=true); `read()` here
unifies any mix.
"""

from __future__ import annotations

import io
import json
import os
import time
from pathlib import Path

from simcluster import documents, strict
from simcluster.errors import SimclusterError
from simcluster.files import OutputError, atomic_write

MANIFEST = "_sweep.json"   # a leading _ : Parquet readers of the folder skip it
PART_GLOB = "part-*.parquet"


class StoreError(SimclusterError):
    """A results folder that cannot be read as a sweep store."""


def flatten(doc, prefix: str = "", out: dict | None = None) -> dict:
    """Nested JSON -> {dotted key: scalar}; lists of mappings by index, lists of scalars as JSON text."""
    out = {} if out is None else out
    if isinstance(doc, dict):
        for k, v in doc.items():
            flatten(v, f"{prefix}.{k}" if prefix else str(k), out)
    elif isinstance(doc, list):
        if all(not isinstance(v, (dict, list)) for v in doc):
            out[prefix] = json.dumps(doc)
        else:
            for i, v in enumerate(doc):
                flatten(v, f"{prefix}[{i}]", out)
    elif isinstance(doc, bool) or doc is None or isinstance(doc, str):
        out[prefix] = doc
    elif isinstance(doc, (int, float)):
        out[prefix] = float(doc)
    else:
        out[prefix] = str(doc)
    return out


def write_part(folder: Path, rows: list[dict], param_types: dict[str, str], seq: int) -> Path:
    """One batch of rows as a new part file (atomic); the caller holds the folder's lock."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    columns: dict[str, list] = {}
    for i, row in enumerate(rows):
        for k in row:
            if k not in columns:
                columns[k] = [None] * i
        for k, col in columns.items():
            col.append(row.get(k))
    arrays, names = [], []
    for k, values in columns.items():
        arrays.append(pa.array(values, type=_type(k, values, param_types)))
        names.append(k)
    table = pa.Table.from_arrays(arrays, names=names)
    buf = io.BytesIO()
    pq.write_table(table, buf, compression="zstd")
    name = f"part-{time.time_ns():020d}-{os.getpid()}-{seq:06d}.parquet"
    return atomic_write(folder / name, buf.getvalue())


def _type(key: str, values: list, param_types: dict[str, str]):
    import pyarrow as pa

    if key in param_types:
        return {"int": pa.int64(), "float": pa.float64(), "bool": pa.bool_()}.get(param_types[key], pa.string())
    kinds = {type(v) for v in values if v is not None}
    if kinds == {bool}:
        return pa.bool_()
    if kinds == {int}:
        return pa.int64()
    if kinds and kinds <= {float, int}:
        return pa.float64()
    if not kinds:
        return pa.float64() if key.startswith("jobs[") else pa.string()
    return pa.string()


def param_types(keys) -> dict[str, str]:
    """One Parquet type per swept key, from all its values (so every part agrees)."""
    out = {}
    for key, values in keys:
        kinds = {type(v) for v in values}
        name = f"param.{key}"
        if kinds == {bool}:
            out[name] = "bool"
        elif kinds == {int}:
            out[name] = "int"
        elif kinds <= {int, float} and bool not in kinds:
            out[name] = "float"
        else:
            out[name] = "str"
    return out


def param_value(value, kind: str):
    if kind == "str":
        return value if isinstance(value, str) else json.dumps(value, sort_keys=True)
    if kind == "float":
        return float(value)
    return value


def parts(folder: str | Path) -> list[Path]:
    return sorted(Path(folder).glob(PART_GLOB))


def stored_hashes(folder: str | Path) -> set[str]:
    """The hashes every complete part holds (the points a resumed sweep skips)."""
    import pyarrow.parquet as pq

    out: set[str] = set()
    for part in parts(folder):
        try:
            out.update(pq.read_table(part, columns=["point_hash"]).column("point_hash").to_pylist())
        except Exception as exc:  # a part that is not Parquet was not written by the sweep (parts are atomic)
            raise StoreError(f"not a Parquet part: {exc}", where=str(part)) from None
    return out


def read(folder: str | Path):
    """Every stored row as one pyarrow Table (schemas unified), each point once (first part wins)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    folder = Path(folder)
    if not folder.is_dir():
        raise StoreError("no such results folder", where=str(folder))
    files = parts(folder)
    if not files:
        raise StoreError("no results in this folder (no part-*.parquet)", where=str(folder))
    tables = []
    for part in files:
        try:
            tables.append(pq.read_table(part))
        except Exception as exc:
            raise StoreError(f"not a Parquet part: {exc}", where=str(part)) from None
    table = pa.concat_tables(tables, promote_options="permissive")
    hashes = table.column("point_hash").to_pylist()
    seen, keep = set(), []
    for i, h in enumerate(hashes):
        if h not in seen:
            seen.add(h)
            keep.append(i)
    return table.take(pa.array(keep, type=pa.int64())) if len(keep) < len(hashes) else table


def rows(folder: str | Path) -> list[dict]:
    return read(folder).to_pylist()


def configuration_key(row: dict) -> tuple:
    """A row's swept configuration as a sort key, for breaking ties between rows whose numbers are equal: its
    `param.*` values in the order of their column names (sorted), a number compared as a number (so nodes 2 comes
    before 16), any other value as its text, a missing value last. It reads only what the point configures, never
    `point_hash` (which carries simcluster's code digest), so the same scenario ties the same way in every version."""
    def value(v):
        if v is None:
            return (2, 0.0, "")
        if isinstance(v, (int, float)):
            return (0, float(v), "")
        return (1, 0.0, v if isinstance(v, str) else json.dumps(v, sort_keys=True))

    return tuple((k, value(row[k])) for k in sorted(row) if k.startswith("param."))


def write_manifest(folder: Path, manifest: dict) -> None:
    atomic_write(folder / MANIFEST, json.dumps(manifest, indent=1, sort_keys=True) + "\n")


def read_manifest(folder: str | Path) -> dict:
    path = Path(folder) / MANIFEST
    if not path.is_file():
        return {}
    doc = strict.load_json(path, StoreError, "results store manifest", schema=documents.STORE_MANIFEST)
    if not isinstance(doc, dict):
        raise StoreError(f"the manifest is a JSON {type(doc).__name__}, not an object", where=str(path))
    return doc


def check_folder(folder: Path) -> None:
    if folder.exists() and not folder.is_dir():
        raise OutputError("a file is in the way of the results folder", where=str(folder))
