"""The package map in docs/architecture.md holds: roles import downward only, no import
cycle among modules, and the judging table and verdicts load without Spark.

Run as a script, it prints the house's measures: every import cycle among the product's
modules and every module over 400 lines (``.venv/bin/python tests/unit/test_architecture.py``).
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("verifier", "producers", "streaming")
#: a module is one idea: past this many lines it is usually two (docs/STYLE, DESIGN)
LONG_MODULE = 400


def _lint_imports(contract: str) -> subprocess.CompletedProcess:
    lint = Path(sys.executable).with_name("lint-imports")
    return subprocess.run([str(lint), "--no-cache", "--contract", contract], cwd=ROOT,
                          capture_output=True, text=True, timeout=120)


def module_cycles() -> list[list[str]]:
    """Every import cycle among the product's modules: the strongly connected components
    of more than one module in the graph of direct imports (imports inside functions
    included), whether between siblings or between a package and its own modules."""
    import grimp

    graph = grimp.build_graph(*PACKAGES, cache_dir=None)
    edges = {m: sorted(graph.find_modules_directly_imported_by(m) & graph.modules)
             for m in graph.modules}
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    cycles: list[list[str]] = []
    for root in sorted(edges):  # Tarjan's algorithm, iterative (no recursion limit)
        if root in index:
            continue
        work = [(root, iter(edges[root]))]
        index[root] = low[root] = len(index)
        stack.append(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is None:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    component = []
                    while True:
                        member = stack.pop()
                        component.append(member)
                        if member == node:
                            break
                    if len(component) > 1:
                        cycles.append(sorted(component))
            elif child not in index:
                index[child] = low[child] = len(index)
                stack.append(child)
                work.append((child, iter(edges[child])))
            elif child in stack:
                low[node] = min(low[node], index[child])
    return sorted(cycles)


def long_modules(limit: int = LONG_MODULE) -> list[tuple[int, str]]:
    """(lines, path) of every product module over ``limit`` lines, longest first."""
    sizes = [(len(p.read_text().splitlines()), str(p.relative_to(ROOT)))
             for package in PACKAGES for p in (ROOT / package).rglob("*.py")]
    return sorted((s for s in sizes if s[0] > limit), reverse=True)


def test_packages_import_downward_only():
    # the contracts live in pyproject.toml ([tool.importlinter])
    proc = _lint_imports("layers")
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
    assert "Roles import downward only KEPT" in proc.stdout


def test_no_import_cycle_among_sibling_modules():
    proc = _lint_imports("acyclic")
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
    assert "No import cycles among sibling modules KEPT" in proc.stdout


def test_no_import_cycle_among_modules():
    # the contract above does not see a package importing its own module that imports it
    assert module_cycles() == []


def test_the_cycle_count_sees_a_cycle(tmp_path, monkeypatch):
    # the measure itself can fail: a planted three-module package is one cycle
    pkg = tmp_path / "planted"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "a.py").write_text("from planted import b\n")
    (pkg / "b.py").write_text("def f():\n    from planted import c\n")
    (pkg / "c.py").write_text("import planted.a\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setattr(sys.modules[__name__], "PACKAGES", ("planted",))
    assert module_cycles() == [["planted.a", "planted.b", "planted.c"]]


def test_expectation_table_and_verdicts_load_without_spark():
    code = ("import sys, verifier.judge.expectations, verifier.judge.verdict, verifier.rundata; "
            "bad = sorted(m for m in sys.modules if m.split('.')[0] in ('pyspark', 'py4j')); "
            "print(bad); sys.exit(1 if bad else 0)")
    proc = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True,
                          timeout=60)
    assert proc.returncode == 0, proc.stdout + proc.stderr


if __name__ == "__main__":
    # run as a script, this folder comes first on the path, and its producers/ (tests)
    # would shadow the product's
    sys.path.insert(0, str(ROOT))
    cycles = module_cycles()
    for cycle in cycles:
        print("cycle:", " ".join(cycle))
    print(f"{len(cycles)} import cycles among the product's modules")
    long = long_modules()
    for lines, path in long:
        print(f"long: {lines} {path}")
    print(f"{len(long)} modules over {LONG_MODULE} lines")
