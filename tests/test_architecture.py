"""The stage boundaries: one settings object for the audit, one data check for a fit, light modules stay light."""

from __future__ import annotations

import subprocess
import sys

import pandas as pd
import pytest

from irtbayes.auditing.run import audit
from irtbayes.auditing.settings import AuditSettings
from irtbayes.core.errors import FitError, SpecError
from irtbayes.data.simulate import posterior_near_truth, simulate_responses
from irtbayes.fitting.result import Fit


@pytest.fixture(scope="module")
def small():
    data, truth = simulate_responses(30, 40, n_benchmarks=2, seed=11)
    return data, posterior_near_truth(data, truth, chains=2, draws=40, seed=12)


def test_audit_settings_object_and_keywords_give_the_same_audit(small) -> None:
    data, posterior = small
    settings = AuditSettings(bins=5, seed=3, max_draws=30, information_draws=20, top_k=4)
    by_object = audit(posterior, data, settings=settings)
    by_keywords = audit(posterior, data, bins=5, seed=3, max_draws=30, information_draws=20, top_k=4)
    for name, table in by_object.tables().items():
        pd.testing.assert_frame_equal(table, by_keywords.tables()[name], obj=name)
    assert by_object.settings["seed"] == 3 and by_object.settings["top_k"] == 4
    # keywords override the object
    overridden = audit(posterior, data, settings=settings, seed=4)
    assert overridden.settings["seed"] == 4 and overridden.settings["top_k"] == 4


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("top_k", 0, "top_k must be a whole number >= 1"),
        ("grid_points", 1, "grid_points must be a whole number >= 2"),
        ("group_threshold", 0.5, r"group_threshold must be in \(0.5, 1\]"),
        ("bins", 0, "the number of bins must be at least 1"),
        ("ci_prob", 1.0, "ci_prob must be strictly between 0 and 1"),
    ],
)
def test_audit_settings_refuse_out_of_range_values(field: str, value: object, message: str) -> None:
    with pytest.raises(SpecError, match=message):
        AuditSettings(**{field: value}).checked()


def test_a_fit_checks_its_data_by_checksum(small) -> None:
    data, posterior = small
    fit = Fit.from_posterior(posterior, data)
    fit.check_data(data)  # the same data: no error
    other, _ = simulate_responses(30, 40, n_benchmarks=2, seed=99)
    with pytest.raises(FitError, match=r"not the data the fit was made from \(checksum [0-9a-f]{12}"):
        fit.check_data(other)


@pytest.mark.parametrize(
    "module", ["irtbayes.model.spec", "irtbayes.core.irt", "irtbayes.core.summaries", "irtbayes.core.errors"]
)
def test_light_modules_do_not_import_pymc(module: str) -> None:
    code = f"import sys, {module}; print('pymc' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False", f"{module} pulls in PyMC"


def _import_graph() -> dict[str, set[str]]:
    """Module -> the irtbayes modules it imports anywhere (top level, under TYPE_CHECKING, inside functions).

    The package's face, ``irtbayes/__init__.py``, is left out: it re-exports, and modules take only
    ``__version__`` from it.
    """
    import ast
    from pathlib import Path

    root = Path(__file__).resolve().parent.parent / "irtbayes"
    modules = {}
    for path in root.rglob("*.py"):
        parts = path.relative_to(root.parent).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        modules[name] = path
    graph: dict[str, set[str]] = {}
    for name, path in modules.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        targets = set()
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                targets |= {a.name for a in node.names}
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    parents = package.split(".")[: len(package.split(".")) - node.level + 1]
                    base = ".".join([*parents, base]).strip(".")
                targets |= {f"{base}.{a.name}" if f"{base}.{a.name}" in modules else base for a in node.names}
        graph[name] = {t for t in targets if t in modules and t != "irtbayes" and t != name}
    graph.pop("irtbayes", None)
    return graph


def test_no_import_cycles_counting_type_only_and_function_level_imports() -> None:
    graph = _import_graph()
    assert (
        len(graph) > 50
        and "irtbayes.fitting.fit" in graph["irtbayes.auditing.run"] | graph["irtbayes.benchfill.target"]
    )
    state: dict[str, int] = {}
    cycles = []

    def visit(node: str, path: list[str]) -> None:
        state[node] = 1
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                cycles.append([*path[path.index(nxt) :], nxt])
            elif nxt not in state:
                visit(nxt, [*path, nxt])
        state[node] = 2

    for start in sorted(graph):
        if start not in state:
            visit(start, [start])
    assert not cycles, "import cycles: " + "; ".join(" -> ".join(c) for c in cycles[:5])


def _package_sources() -> dict[str, str]:
    from pathlib import Path

    root = Path(__file__).resolve().parent.parent / "irtbayes"
    return {str(path.relative_to(root.parent)): path.read_text() for path in sorted(root.rglob("*.py"))}


def test_no_module_over_700_lines_and_no_function_over_100() -> None:
    import ast

    sources = _package_sources()
    long_modules = {name: text.count("\n") for name, text in sources.items() if text.count("\n") > 700}
    long_functions = {
        f"{name}:{node.lineno} {node.name}": node.end_lineno - node.lineno + 1
        for name, text in sources.items()
        for node in ast.walk(ast.parse(text))
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.end_lineno - node.lineno + 1 > 100
    }
    assert len(sources) > 50 and not long_modules and not long_functions, (long_modules, long_functions)
