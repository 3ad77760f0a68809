"""The package's structural rules, as functions of a source tree, so they can be tested on bad trees too.

- **Layers.** The stage subpackages are ordered; a module imports only from its own layer or the layers below
  (type-only and function-level imports count).
- **No cycles** between modules.
- **One import path per name.** ``from irtbayes.M import n`` names a module ``M`` that defines ``n`` (or a submodule
  ``M.n``); a module's ``__all__`` lists only names it defines. The top-level ``irtbayes`` is the one entry point
  that re-exports, and nothing inside the package imports from it.
- **No private imports** across modules: neither ``from irtbayes.M import _x`` nor ``module._x`` on an imported
  irtbayes module, inside the package.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field
from pathlib import Path

#: The layers, lowest first: a module may import modules of its own layer or any layer before it.
LAYERS: tuple[tuple[str, ...], ...] = (
    ("core",),
    ("data",),
    ("model",),
    ("fitting",),
    ("checks",),
    ("auditing",),
    ("benchfill", "robustness", "evaluating"),
    ("reporting",),
    ("cli", "examples", "__main__"),
)


@dataclass
class Module:
    name: str
    path: Path
    tree: ast.Module
    defined: set[str] = field(default_factory=set)
    exported: list[str] = field(default_factory=list)


def modules(root: Path, package: str = "irtbayes") -> dict[str, Module]:
    """Every module of the package under ``root`` (the folder holding the package), parsed."""
    out = {}
    for path in sorted((root / package).rglob("*.py")):
        parts = path.relative_to(root).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        tree = ast.parse(path.read_text(encoding="utf-8"))
        module = Module(name, path, tree)
        for node in _top_level(tree.body):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                module.defined.add(node.name)
            elif isinstance(node, ast.TypeAlias):  # type X = ... defines X
                module.defined.add(node.name.id)
            elif isinstance(node, (ast.Assign, ast.AnnAssign)):
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                for target in targets:
                    module.defined |= {n.id for n in ast.walk(target) if isinstance(n, ast.Name)}
                    if isinstance(target, ast.Name) and target.id == "__all__" and node.value is not None:
                        module.exported = [
                            e.value for e in getattr(node.value, "elts", []) if isinstance(e, ast.Constant)
                        ]
        out[name] = module
    return out


def _top_level(body: list[ast.stmt]):
    for node in body:
        yield node
        if isinstance(node, ast.If):
            yield from _top_level(node.body)
            yield from _top_level(node.orelse)
        elif isinstance(node, ast.Try):
            yield from _top_level(node.body)
            for handler in node.handlers:
                yield from _top_level(handler.body)
            yield from _top_level(node.orelse)
            yield from _top_level(node.finalbody)


def _imports(module: Module, package: str):
    """(imported module, imported name or None, node) for every import of the package, anywhere in ``module``."""
    own = module.name if module.path.name == "__init__.py" else module.name.rpartition(".")[0]
    for node in ast.walk(module.tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name == package or alias.name.startswith(package + "."):
                    yield alias.name, None, node
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parents = own.split(".")[: len(own.split(".")) - node.level + 1]
                base = ".".join([*parents, base]).strip(".")
            if base == package or base.startswith(package + "."):
                for alias in node.names:
                    yield base, alias.name, node


def import_graph(mods: dict[str, Module], package: str = "irtbayes") -> dict[str, set[str]]:
    """Module -> the package's modules it imports (the top-level package left out)."""
    graph: dict[str, set[str]] = {}
    for name, module in mods.items():
        targets = set()
        for base, imported, _ in _imports(module, package):
            full = f"{base}.{imported}" if imported else base
            targets.add(full if full in mods else base)
        graph[name] = {t for t in targets if t in mods and t not in {package, name}}
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    state: dict[str, int] = {}
    found: list[list[str]] = []

    def visit(node: str, path: list[str]) -> None:
        state[node] = 1
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                found.append([*path[path.index(nxt) :], nxt])
            elif nxt not in state:
                visit(nxt, [*path, nxt])
        state[node] = 2

    for start in sorted(graph):
        if start not in state:
            visit(start, [start])
    return found


def layer_of(name: str, package: str = "irtbayes") -> int | None:
    rest = name[len(package) + 1 :]
    best: tuple[int, int] | None = None
    for index, prefixes in enumerate(LAYERS):
        for prefix in prefixes:
            if rest == prefix or rest.startswith(prefix + "."):
                if best is None or len(prefix) > best[1]:
                    best = (index, len(prefix))
    return None if best is None else best[0]


def layer_violations(mods: dict[str, Module], package: str = "irtbayes") -> list[str]:
    graph = import_graph(mods, package)
    out = []
    for name, targets in sorted(graph.items()):
        if name == package:
            continue
        own = layer_of(name, package)
        if own is None:
            out.append(f"{name} belongs to no layer")
            continue
        for target in sorted(targets):
            theirs = layer_of(target, package)
            if theirs is not None and theirs > own:
                out.append(f"{name} (layer {LAYERS[own]}) imports {target} (layer {LAYERS[theirs]})")
    return out


def facade_violations(
    mods: dict[str, Module], extra: dict[str, Module] | None = None, package: str = "irtbayes"
) -> list[str]:
    """Re-exports: ``__all__`` names not defined in the module, and imports of a name from a module that does not
    define it (in the package and in ``extra`` modules such as tests and scripts)."""
    out = []
    for name, module in mods.items():
        if name == package:
            continue
        for exported in module.exported:
            if exported not in module.defined:
                out.append(f"{name} re-exports {exported} in __all__")
    for name, module in {**mods, **(extra or {})}.items():
        for base, imported, node in _imports(module, package):
            if imported is None:
                continue
            if imported == "*":
                out.append(f"{module.path}:{node.lineno} star import from {base}")
                continue
            if base == package:
                if (
                    name in mods
                    and name != package
                    and f"{package}.{imported}" not in mods
                    and imported != "__version__"
                ):
                    out.append(f"{module.path}:{node.lineno} imports {imported} from the top-level package")
                continue
            if base not in mods:
                out.append(f"{module.path}:{node.lineno} imports from {base}, which is no module")
                continue
            if f"{base}.{imported}" in mods or imported in mods[base].defined:
                continue
            out.append(f"{module.path}:{node.lineno} imports {imported} from {base}, which does not define it")
    return out


def private_violations(mods: dict[str, Module], package: str = "irtbayes") -> list[str]:
    out = []
    for name, module in mods.items():
        aliases: dict[str, str] = {}
        for base, imported, node in _imports(module, package):
            if imported and imported.startswith("_") and not imported.startswith("__"):
                if base != name:
                    out.append(f"{module.path}:{node.lineno} imports {base}.{imported}")
            if imported and f"{base}.{imported}" in mods:
                local = next((a.asname or a.name for a in node.names if a.name == imported), imported)
                aliases[local] = f"{base}.{imported}"
            if imported is None and isinstance(node, ast.Import):
                for alias in node.names:
                    if alias.asname:
                        aliases[alias.asname] = alias.name
        for node in ast.walk(module.tree):
            if (
                isinstance(node, ast.Attribute)
                and isinstance(node.value, ast.Name)
                and node.value.id in aliases
                and node.attr.startswith("_")
                and not node.attr.startswith("__")
                and aliases[node.value.id] != name
            ):
                out.append(f"{module.path}:{node.lineno} uses {aliases[node.value.id]}.{node.attr}")
    return out


def scripts(root: Path, folders: tuple[str, ...]) -> dict[str, Module]:
    """Test, script and notebook files as modules, to check what they import."""
    out = {}
    for folder in folders:
        for path in sorted((root / folder).rglob("*.py")):
            out[str(path.relative_to(root))] = Module(str(path), path, ast.parse(path.read_text(encoding="utf-8")))
    return out
