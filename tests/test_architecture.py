"""The package's shape, checked statically: no import cycle, imports point down, no
reaching into another object's private state, and the heavy dependencies stay lazy.

The layers (docs/architecture.md), lowest first; a module may import its own layer's
package and any layer below, never above:

    base        errors, results, spatial, utils, _validate, _version, _jit, _kcache, _pickling
    model, sns  the robot description; the numerical core (never Pinocchio or coal)
    tasks, constraints, robots
    engine, analytic
    ik
    solver
    control, reach, viz
    cli
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PKG = ROOT / "python" / "stackik"

LAYERS = {
    "errors": 0,
    "results": 0,
    "spatial": 0,
    "utils": 0,
    "_validate": 0,
    "_version": 0,
    "_jit": 0,
    "_kcache": 0,
    "_pickling": 0,
    "geometry": 1,
    "_pose_kernel": 1,
    "sns": 1,
    "model": 2,
    "tasks": 3,
    "constraints": 3,
    "robots": 3,
    "engine": 4,
    "analytic": 4,
    "ik": 5,
    "solver": 6,
    "control": 7,
    "reach": 7,
    "viz": 7,
    "warmups": 7,
    "cli": 8,
}

#: Third-party modules a room may never import.
FORBIDDEN = {
    "sns": {"pinocchio", "coal"},
    "geometry": {"pinocchio"},
    "tasks": {"quadprog"},
    "constraints": {"quadprog"},
}

#: Optional dependencies: imported inside the function that needs them, never at module
#: level (``import stackik`` must not pull them in).
LAZY = {"ray", "zarr", "trimesh", "matplotlib", "viser", "typer", "rich", "tqdm", "numba"}


def _modules() -> dict[str, Path]:
    out = {}
    for path in sorted(PKG.rglob("*.py")):
        rel = path.relative_to(PKG.parent).with_suffix("")
        parts = list(rel.parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        out[".".join(parts)] = path
    return out


MODULES = _modules()


def _resolve(module: str, node: ast.ImportFrom, is_package: bool) -> str:
    if node.level == 0:
        return node.module or ""
    base = module.split(".")
    if not is_package:
        base = base[:-1]
    base = base[: len(base) - (node.level - 1)]
    return ".".join(base + ([node.module] if node.module else []))


def _type_checking_nodes(tree: ast.Module) -> set[int]:
    skip = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            for sub in ast.walk(node):
                skip.add(id(sub))
    return skip


def _imports(module: str, path: Path) -> list[tuple[str, int, bool]]:
    """``(imported module, line, at module level)`` for every import outside TYPE_CHECKING."""
    tree = ast.parse(path.read_text())
    skip = _type_checking_nodes(tree)
    top = {id(n) for n in tree.body}
    out = []
    for node in ast.walk(tree):
        if id(node) in skip:
            continue
        if isinstance(node, ast.Import):
            out.extend((a.name, node.lineno, id(node) in top) for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            target = _resolve(module, node, path.name == "__init__.py")
            for a in node.names:  # ``from . import x`` imports the submodule x
                sub = f"{target}.{a.name}"
                out.append((sub if sub in MODULES else target, node.lineno, id(node) in top))
    return out


def _internal(name: str) -> str | None:
    """The package module an import names (its longest known prefix), or None."""
    parts = name.split(".")
    while parts:
        candidate = ".".join(parts)
        if candidate in MODULES and candidate.startswith("stackik"):
            return candidate
        parts.pop()
    return None


def _room(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


GRAPH = {
    m: sorted({t for name, _, _ in _imports(m, p) if (t := _internal(name)) and t != m})
    for m, p in MODULES.items()
}


def test_every_module_has_a_layer():
    rooms = {_room(m) for m in MODULES} - {"__init__"}
    assert rooms <= set(LAYERS), (
        f"place these in LAYERS and docs/architecture.md: {rooms - set(LAYERS)}"
    )


def test_no_import_cycle():
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(m: str) -> None:
        state[m] = 1
        stack.append(m)
        for t in GRAPH[m]:
            if t.startswith(m + ".") or m == "stackik" or t == "stackik":
                continue  # a package importing its own submodules is not a cycle
            if state.get(t) == 1:
                cycle = [*stack[stack.index(t) :], t]
                pytest.fail("import cycle: " + " -> ".join(cycle))
            if state.get(t) is None:
                visit(t)
        stack.pop()
        state[m] = 2

    for m in GRAPH:
        if state.get(m) is None:
            visit(m)


def test_imports_point_down():
    bad = []
    for m, targets in GRAPH.items():
        room = _room(m)
        if room == "__init__":
            continue
        for t in targets:
            other = _room(t)
            if other == "__init__" or LAYERS[other] > LAYERS[room]:
                bad.append(f"{m} imports {t} (layer {other} is above {room})")
            elif LAYERS[other] == LAYERS[room] and other != room and LAYERS[room] > 0:
                bad.append(f"{m} imports {t} (peer rooms {room} and {other} are independent)")
    assert not bad, "\n".join(bad)


#: Rooms that nothing in the package imports (only their entry points load them) may
#: import their own optional dependencies at module level.
TOP_LEVEL_OK = {"cli": {"typer", "rich"}}

#: Modules that are themselves imported only where used (checked below) and may import
#: these at module level: the collision step's compiled record, made once kernels run
#: compiled.
LAZY_MODULES_OK = {"stackik.constraints._collision_ws": {"numba"}}


def _imported_at_module_level(target: str) -> list[str]:
    """``module:line`` of every module-level import of ``target`` in the package."""
    out = []
    for m, path in MODULES.items():
        for name, line, top in _imports(m, path):
            if top and name == target:
                out.append(f"{m}:{line}")
    return out


def test_forbidden_and_lazy_dependencies():
    bad = []
    for m, path in MODULES.items():
        room = _room(m)
        for name, line, top in _imports(m, path):
            root = name.split(".")[0]
            if root in FORBIDDEN.get(room, set()):
                bad.append(f"{m}:{line} imports {name}, which {room}/ must never use")
            allowed = TOP_LEVEL_OK.get(room, set()) | LAZY_MODULES_OK.get(m, set())
            if root in LAZY and top and root not in allowed:
                bad.append(f"{m}:{line} imports {name} at module level; import it where used")
    for m in LAZY_MODULES_OK:
        bad += [f"{where} imports {m} at module level" for where in _imported_at_module_level(m)]
    assert not bad, "\n".join(bad)


def _own_private_names(tree: ast.Module) -> set[str]:
    """Private attributes that this module's own classes define (``self._x = ...``)."""
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store):
            if isinstance(node.value, ast.Name) and node.value.id == "self":
                names.add(node.attr)
    return names


def _private_accesses(path: Path) -> list[str]:
    """``x._name`` where ``x`` is not ``self``/``cls`` and the module's classes do not own it.

    A module may use the private state of its own classes on other instances (a class
    and its helpers in one file); never another module's.
    """
    tree = ast.parse(path.read_text())
    own = _own_private_names(tree)
    out = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Attribute):
            continue
        attr = node.attr
        if not attr.startswith("_") or attr.startswith("__"):
            continue
        owner = node.value
        if isinstance(owner, ast.Name) and owner.id in ("self", "cls"):
            continue
        if isinstance(owner, ast.Call) and ast.unparse(owner.func) == "super":
            continue
        if attr in own:
            continue
        out.append(f"{path.relative_to(ROOT)}:{node.lineno} {ast.unparse(node)}")
    return out


def test_no_private_state_of_other_objects():
    bad = []
    for path in MODULES.values():
        bad.extend(_private_accesses(path))
    assert not bad, "reads another object's private names:\n" + "\n".join(bad)


def test_no_private_names_imported_across_packages():
    bad = []
    for m, path in MODULES.items():
        tree = ast.parse(path.read_text())
        for node in ast.walk(tree):
            if not isinstance(node, ast.ImportFrom):
                continue
            target = _resolve(m, node, path.name == "__init__.py")
            if not target.startswith("stackik") or _room(target) == _room(m):
                continue
            for a in node.names:
                shared = f"{target}.{a.name}" in MODULES and target == "stackik"
                if a.name.startswith("_") and not a.name.startswith("__") and not shared:
                    bad.append(f"{m}:{node.lineno} imports {target}.{a.name}")
    assert not bad, "\n".join(bad)


def test_import_stackik_pulls_in_no_heavy_dependency():
    code = (
        "import sys, stackik; heavy = sorted(m for m in "
        f"{sorted(LAZY)!r} if m in sys.modules); print(','.join(heavy))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code],
        check=True,
        capture_output=True,
        text=True,
        env={"PYTHONPATH": str(ROOT / "python"), "PATH": ""},
    )
    assert out.stdout.strip() == ""
