"""No import circles among simcluster's modules, imports inside functions counted (grimp reads every import
statement of a module, wherever it stands). The layers themselves are import-linter's contracts in pyproject.toml
(`lint-imports`); this is the module-level check those contracts cannot make across packages."""

from __future__ import annotations

import grimp
import networkx as nx


def circles(package: str) -> list[list[str]]:
    """Each set of modules of `package` that import each other in a loop, sorted, largest first."""
    graph = grimp.build_graph(package, cache_dir=None)
    g = nx.DiGraph()
    for module in graph.modules:
        g.add_node(module)
        for imported in graph.find_modules_directly_imported_by(module):
            g.add_edge(module, imported)
    found = [sorted(c) for c in nx.strongly_connected_components(g) if len(c) > 1]
    return sorted(found, key=lambda c: (-len(c), c))


def test_simcluster_has_no_import_circle():
    found = circles("simcluster")
    assert not found, "import circles: " + "; ".join(" <-> ".join(c) for c in found)


def test_a_circle_through_a_function_level_import_is_found(tmp_path, monkeypatch):
    pkg = tmp_path / "circlepkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "low.py").write_text("def f():\n    from circlepkg.high import g\n    return g\n")
    (pkg / "high.py").write_text("from circlepkg import low\n\ndef g():\n    return low\n")
    (pkg / "apart.py").write_text("from circlepkg.low import f\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    assert circles("circlepkg") == [["circlepkg.high", "circlepkg.low"]]
