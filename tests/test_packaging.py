"""The sdist and the wheel carry every package, the data sets in data/ and the licence files; an installed wheel
finds its embedded data sets, and IRTBAYES_DATA_DIR still serves the external ones.

The distributions are built from a copy of the sources (so the checkout gets no build/ folder) with the
environment's setuptools: sdist first, then the wheel from the sdist, as pip does with a package from an index.
"""

from __future__ import annotations

import json
import os
import shutil
import site
import subprocess
import sys
import tarfile
import textwrap
import tomllib
import zipfile
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[1]
PROJECT = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
VERSION = PROJECT["version"]
SOURCES = ("pyproject.toml", "README.md", "LICENSE", "irtbayes", "data")
DATA_FILES = sorted(
    p.relative_to(REPO / "data").as_posix()
    for p in (REPO / "data").rglob("*")
    if p.is_file() and "__pycache__" not in p.parts and not p.name.startswith(".")
)
MANIFESTS = {p.parent.name: json.loads(p.read_text()) for p in sorted((REPO / "data").glob("*/dataset.json"))}
EMBEDDED = sorted(name for name, m in MANIFESTS.items() if m.get("storage", "embedded") == "embedded")


def _run(args: list[str], *, cwd: Path, env: dict[str, str] | None = None) -> str:
    done = subprocess.run(args, cwd=cwd, env=env, capture_output=True, text=True, timeout=180)
    assert done.returncode == 0, f"{' '.join(args)} failed ({done.returncode}):\n{done.stdout}\n{done.stderr}"
    return done.stdout


@pytest.fixture(scope="module")
def dists(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("packaging")
    src, out = root / "src", root / "dist"
    src.mkdir()
    for name in SOURCES:
        path = REPO / name
        if path.is_dir():
            shutil.copytree(path, src / name, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
        else:
            shutil.copy2(path, src / name)
    sdist = _run(
        [sys.executable, "-c", f"from setuptools import build_meta; print(build_meta.build_sdist({str(out)!r}))"],
        cwd=src,
    ).splitlines()[-1]
    _run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q", "-w", str(out), sdist],
        cwd=out,
    )
    (wheel,) = out.glob("irtbayes-*.whl")
    unpacked = root / "unpacked"
    zipfile.ZipFile(wheel).extractall(unpacked)
    return {"sdist": out / sdist, "wheel": wheel, "unpacked": unpacked, "root": root}


def _wheel_files(dists: dict[str, Path]) -> dict[str, bytes]:
    with zipfile.ZipFile(dists["wheel"]) as z:
        return {n: z.read(n) for n in z.namelist() if not n.endswith("/")}


def test_the_wheel_carries_every_data_file_unchanged(dists: dict[str, Path]) -> None:
    files = _wheel_files(dists)
    shipped = sorted(n.removeprefix("irtbayes/_data/") for n in files if n.startswith("irtbayes/_data/"))
    assert shipped == DATA_FILES, f"in data/ but not in the wheel: {sorted(set(DATA_FILES) - set(shipped))}"
    for rel in DATA_FILES:
        assert files[f"irtbayes/_data/{rel}"] == (REPO / "data" / rel).read_bytes(), rel
    assert len(MANIFESTS) >= 10 and EMBEDDED == ["lsat6", "lsat7", "mmlu_pro"], (list(MANIFESTS), EMBEDDED)
    for name in EMBEDDED:
        needed = [*MANIFESTS[name]["files"].values(), "dataset.json", "SOURCE.md", "LICENSE.md", "LICENSE.txt"]
        missing = [f for f in needed if f"irtbayes/_data/{name}/{f}" not in files]
        assert not missing, f"{name}: {missing} not in the wheel"


def test_the_wheel_carries_every_module_and_nothing_else_at_the_top(dists: dict[str, Path]) -> None:
    files = _wheel_files(dists)
    modules = sorted(p.relative_to(REPO).as_posix() for p in (REPO / "irtbayes").rglob("*.py"))
    missing = [m for m in modules if m not in files]
    assert not missing, f"modules not in the wheel (is their package in pyproject's packages list?): {missing}"
    assert {n.split("/")[0] for n in files} == {"irtbayes", f"irtbayes-{VERSION}.dist-info"}


def test_the_wheel_metadata_names_the_licences_and_the_one_version(dists: dict[str, Path]) -> None:
    files = _wheel_files(dists)
    info = f"irtbayes-{VERSION}.dist-info"
    metadata = files[f"{info}/METADATA"].decode()
    assert f"\nVersion: {VERSION}\n" in metadata
    assert "\nLicense-Expression: Apache-2.0\n" in metadata
    assert files[f"{info}/licenses/LICENSE"] == (REPO / "LICENSE").read_bytes()
    assert b"Apache License" in files[f"{info}/licenses/LICENSE"]
    for name in EMBEDDED:
        assert f"\nLicense-File: data/{name}/LICENSE.md\n" in metadata, name
        assert f"{info}/licenses/data/{name}/LICENSE.txt" in files, name
    assert (f"irtbayes-{VERSION}.tar.gz", f"irtbayes-{VERSION}-py3-none-any.whl") == (
        dists["sdist"].name,
        dists["wheel"].name,
    )


def test_the_sdist_carries_the_data_folder_and_the_licence(dists: dict[str, Path]) -> None:
    prefix = f"irtbayes-{VERSION}/"
    with tarfile.open(dists["sdist"]) as tar:
        names = {m.name.removeprefix(prefix) for m in tar.getmembers() if m.isfile()}
    missing = [f"data/{rel}" for rel in DATA_FILES if f"data/{rel}" not in names]
    assert not missing, f"not in the sdist: {missing}"
    assert {"LICENSE", "README.md", "pyproject.toml", "irtbayes/data/registry.py"} <= names


def _in_unpacked_wheel(dists: dict[str, Path], code: str, *, env: dict[str, str]) -> Any:
    """Run ``code`` with the unpacked wheel first on sys.path, no site (-S: the editable install's finder is never
    registered) and -I; the dependencies come from this environment's site-packages, after the wheel."""
    dependencies = [p for p in site.getsitepackages() if Path(p).is_dir()]
    prelude = f"import sys; sys.path[:0] = [{str(dists['unpacked'])!r}]; sys.path += {dependencies!r}\n"
    out = _run([sys.executable, "-I", "-S", "-c", prelude + textwrap.dedent(code)], cwd=dists["root"], env=env)
    return json.loads(out.splitlines()[-1])


def test_an_installed_wheel_finds_its_data_and_the_external_folder(dists: dict[str, Path]) -> None:
    # a converted external data set, as scripts/convert_data.py writes it: the data files and a copy of the manifest
    external = dists["root"] / "external"
    science = external / "science"
    science.mkdir(parents=True)
    (science / "responses.csv").write_text("subject,q1,q2\ns1,1,0\ns2,0,\ns3,1,1\n")
    (science / "items.csv").write_text("item,benchmark\nq1,science\nq2,science\n")
    (science / "subjects.csv").write_text("subject\ns1\ns2\ns3\n")
    (science / "dataset.json").write_text(json.dumps({**MANIFESTS["science"], "n_subjects": 3, "n_items": 2}))
    env = {k: v for k, v in os.environ.items() if not k.startswith("IRTBAYES_")}
    code = """
        import json
        import irtbayes
        from irtbayes.core.errors import DataError
        from irtbayes.data.registry import data_root, default_data_path, list_datasets, load_dataset
        lsat7, mmlu = load_dataset("lsat7"), load_dataset("mmlu_pro")
        try:
            load_dataset("xstest")
            error = ""
        except DataError as exc:
            error = str(exc)
        import os
        os.environ["IRTBAYES_DATA_DIR"] = {external!r}
        science = load_dataset("science")
        print(json.dumps({{
            "package": irtbayes.__file__, "version": irtbayes.__version__, "root": str(data_root()),
            "default": str(default_data_path()), "names": list(list_datasets().index),
            "lsat7": [lsat7.n_subjects, lsat7.n_items, lsat7.n_responses],
            "mmlu_pro": [mmlu.n_subjects, mmlu.n_items], "xstest": error,
            "science": [science.n_subjects, science.n_items, science.n_responses],
        }}))
    """
    found = _in_unpacked_wheel(dists, code.format(external=str(external)), env=env)
    unpacked = dists["unpacked"].resolve()
    assert Path(found["package"]).resolve() == unpacked / "irtbayes" / "__init__.py", found["package"]
    assert found["version"] == VERSION
    assert Path(found["root"]) == unpacked / "irtbayes" / "_data", found["root"]
    assert Path(found["default"]) == unpacked / "irtbayes" / "_data" / "mmlu_pro"
    assert sorted(found["names"]) == sorted(MANIFESTS)
    assert found["lsat7"] == [1000, 5, 5000]
    assert found["mmlu_pro"] == [MANIFESTS["mmlu_pro"]["n_subjects"], MANIFESTS["mmlu_pro"]["n_items"]]
    assert "not shipped with irtbayes and IRTBAYES_DATA_DIR is not set" in found["xstest"], found["xstest"]
    assert found["science"] == [3, 2, 5]


def test_the_checkout_reads_the_top_level_data_folder() -> None:
    from irtbayes.data.registry import data_root

    assert data_root() == REPO / "data"
