"""The stage boundaries: layers without cycles, one import path per name, no private imports across modules, one
entry point; one settings object for the audit, one data check for a fit, light modules stay light.

The rules themselves are in ``architecture_rules.py``; each is also run on a small bad package made here, so a
rule that stopped finding anything would fail too."""

from __future__ import annotations

import ast
import importlib
import inspect
import re
import subprocess
import sys
import textwrap
from importlib import metadata
from pathlib import Path

import architecture_rules as rules
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


ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def package() -> dict[str, rules.Module]:
    return rules.modules(ROOT)


def test_the_folder_list_reads_as_the_pipeline() -> None:
    stages = sorted(p.name for p in (ROOT / "irtbayes").iterdir() if p.is_dir() and not p.name.startswith("_"))
    assert stages == sorted(
        [
            "core",
            "data",
            "model",
            "fitting",
            "checks",
            "auditing",
            "reporting",
            "benchfill",
            "robustness",
            "evaluating",
            "cli",
        ]
    )
    flat = sorted(p.name for p in (ROOT / "irtbayes").glob("*.py"))
    assert flat == ["__init__.py", "__main__.py", "examples.py"]


def test_no_import_cycles_counting_type_only_and_function_level_imports(package) -> None:
    graph = rules.import_graph(package)
    assert len(graph) > 50 and "irtbayes.fitting.fit" in graph["irtbayes.benchfill.calibration"]
    found = rules.cycles(graph)
    assert not found, "import cycles: " + "; ".join(" -> ".join(c) for c in found[:5])


def test_every_module_imports_only_from_its_layer_or_below(package) -> None:
    assert not rules.layer_violations(package)


def test_one_import_path_per_name_no_facades(package) -> None:
    others = rules.scripts(ROOT, ("tests", "scripts", "notebooks"))
    assert not rules.facade_violations(package, others)
    # subpackages hold only their docstring, except where the package itself defines its verbs
    for name, module in package.items():
        if module.path.name == "__init__.py" and name != "irtbayes":
            body = [n for n in module.tree.body if not isinstance(n, ast.Expr)]
            assert not body or module.defined, f"{name}/__init__.py holds statements but defines nothing"


def test_no_private_names_imported_across_modules(package) -> None:
    assert not rules.private_violations(package)


def test_no_function_over_100_lines(package) -> None:
    # modules are as long as their one concern needs (cohesion is the rule, not a line cap); functions stay readable
    long = {
        f"{m.name}:{node.lineno} {node.name}": node.end_lineno - node.lineno + 1
        for m in package.values()
        for node in ast.walk(m.tree)
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.end_lineno - node.lineno + 1 > 100
    }
    assert not long, long


def test_the_entry_point_gives_each_public_name_from_its_defining_module() -> None:
    import irtbayes

    public = irtbayes._PUBLIC
    assert sorted([*public, "__version__"]) == irtbayes.__all__ and 30 <= len(public) <= 55
    for name, module in public.items():
        value = getattr(irtbayes, name)
        assert value is getattr(importlib.import_module(module), name)
        if hasattr(value, "__module__") and (inspect.isclass(value) or inspect.isfunction(value)):
            assert value.__module__ == module, f"irtbayes.{name} is defined in {value.__module__}, not {module}"
    with pytest.raises(AttributeError, match="no attribute 'nonsense'"):
        _ = irtbayes.nonsense
    assert irtbayes.__version__ == metadata.version("irtbayes")


@pytest.mark.parametrize("name", ["AuditResult", "Scores", "LLMSource", "Exposure", "Tracking"])
def test_names_no_longer_at_the_top_level_still_resolve_with_a_warning_naming_their_module(name: str) -> None:
    import irtbayes

    module = irtbayes._MOVED[name]
    with pytest.warns(DeprecationWarning, match=rf"irtbayes\.{name} is deprecated: import it from {re.escape(module)}"):
        value = getattr(irtbayes, name)
    assert value is getattr(importlib.import_module(module), name)
    assert name not in irtbayes.__all__ and name not in dir(irtbayes) and name not in irtbayes._PUBLIC


def test_import_irtbayes_is_light() -> None:
    code = "import sys, irtbayes; print('pymc' in sys.modules, 'pytensor' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["False", "False"]


# ---------------------------------------------------------------------------------- the rules find what they should


def _bad_package(tmp_path: Path, files: dict[str, str]) -> dict[str, rules.Module]:
    for rel, text in {"irtbayes/__init__.py": "", **files}.items():
        path = tmp_path / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text))
    return rules.modules(tmp_path)


def test_the_rules_find_a_cycle_a_facade_a_private_import_and_an_upward_import(tmp_path: Path) -> None:
    mods = _bad_package(
        tmp_path,
        {
            "irtbayes/core/__init__.py": "",
            "irtbayes/core/a.py": "from irtbayes.core.b import f\ndef g(): pass\n",
            "irtbayes/core/b.py": "def f():\n    from irtbayes.core.a import g\n",
            "irtbayes/core/facade.py": "from irtbayes.core.b import f\n__all__ = ['f']\n",
            "irtbayes/core/user.py": "from irtbayes.core.facade import f\nimport irtbayes.core.b as b\nb._hidden\n",
            "irtbayes/core/private.py": "from irtbayes.core.b import _hidden\n",
            "irtbayes/data/__init__.py": "",
            "irtbayes/data/x.py": "def h(): pass\n",
            "irtbayes/core/up.py": "from irtbayes.data.x import h\nfrom irtbayes import h2\n",
        },
    )
    assert rules.cycles(rules.import_graph(mods)) == [["irtbayes.core.a", "irtbayes.core.b", "irtbayes.core.a"]]
    facades = rules.facade_violations(mods)
    assert any("irtbayes.core.facade re-exports f" in v for v in facades)
    assert any("imports f from irtbayes.core.facade, which does not define it" in v for v in facades)
    assert any("imports h2 from the top-level package" in v for v in facades)
    private = rules.private_violations(mods)
    assert any("imports irtbayes.core.b._hidden" in v for v in private)
    assert any("uses irtbayes.core.b._hidden" in v for v in private)
    assert rules.layer_violations(mods) == [
        "irtbayes.core.up (layer ('core',)) imports irtbayes.data.x (layer ('data',))"
    ]
