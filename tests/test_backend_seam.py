"""The seam between the backends and the rest, read from the source (AST).

Nothing outside `backends/` asks which backend it is talking to: what differs between
targets is said by the backend (`Backend.passes`, `generates_code`, `dump_name`) or its
executable (`Executable.bench`, `time_kernels`), so a new target is one file and one line. A
comparison (==, !=, in, is) with a registered backend's name, or an equality test on
something called `backend`, outside `xla_explorer/backends/` fails. And the runtime, which
the backends build on, imports nothing from them.
"""
from __future__ import annotations

import ast
from pathlib import Path

import pytest

from xla_explorer.backends import BACKENDS, DEVICE_BACKENDS

PACKAGE = Path(__file__).resolve().parents[1] / "xla_explorer"
NAMES = frozenset({*BACKENDS, *DEVICE_BACKENDS})
ASKS = (ast.Eq, ast.NotEq, ast.In, ast.NotIn, ast.Is, ast.IsNot)


def _names_in(node: ast.AST) -> set[str]:
    """Backend names written as a string, or as strings in a tuple, list or set."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return {node.value} & NAMES
    if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
        return {n for e in node.elts for n in _names_in(e)}
    return set()


def _is_backend(node: ast.AST) -> bool:
    return ((isinstance(node, ast.Attribute) and node.attr == "backend")
            or (isinstance(node, ast.Name) and node.id == "backend"))


def violations(source: str) -> list[tuple[int, str]]:
    """(line, text) of each comparison that asks which backend this is."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, ast.Compare):
            continue
        operands = [node.left, *node.comparators]
        for op, left, right in zip(node.ops, operands, operands[1:]):
            if not isinstance(op, ASKS):
                continue
            equality = isinstance(op, (ast.Eq, ast.NotEq)) and (_is_backend(left)
                                                                 or _is_backend(right))
            if _names_in(left) or _names_in(right) or equality:
                found.append((node.lineno, ast.unparse(node)))
    return found


def package_files() -> list[Path]:
    return [p for p in sorted(PACKAGE.rglob("*.py"))
            if (PACKAGE / "backends") not in p.parents]


def test_no_code_outside_backends_compares_a_backends_name():
    bad = [f"{p.relative_to(PACKAGE.parent)}:{line}: {text}"
           for p in package_files() for line, text in violations(p.read_text())]
    assert not bad, "ask the backend or its executable instead:\n" + "\n".join(bad)


@pytest.mark.parametrize("source", [
    'if self.backend == "cuda" and not self.autocluster:\n    pass',  # Exploration.bench was
    'if ex.backend == "interpreter":\n    pass',  # the Performance tab was
    'cpu = ex.backend == "cpu"',  # the dumps were
    'fast = name in ("cpu", "cuda")',
    'same = backend != other',
    'x = "cuda" is not target.name',
])
def test_the_walker_finds_each_way_of_asking(source):
    assert violations(source)


@pytest.mark.parametrize("source", [
    'known = args.backend not in BACKENDS',  # membership in the registry says nothing
    'ok = stage.name == "fusion"',
    'x = backend.generates_code == True',
    'y = "cpu" + suffix',
])
def test_the_walker_lets_the_rest_pass(source):
    assert not violations(source)


def backend_imports(source: str) -> list[int]:
    """Lines of a runtime module's imports that reach into `xla_explorer.backends`."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            package = ["xla_explorer", "runtime"][:3 - node.level] if node.level else []
            module = ".".join(package + ([node.module] if node.module else []))
            names = [module] + [f"{module}.{a.name}" for a in node.names]
        else:
            continue
        if any(n == "xla_explorer.backends" or n.startswith("xla_explorer.backends.")
               for n in names):
            found.append(node.lineno)
    return found


def test_the_runtime_imports_nothing_from_the_backends():
    bad = [f"{p.name}:{line}" for p in sorted((PACKAGE / "runtime").rglob("*.py"))
           for line in backend_imports(p.read_text())]
    assert not bad, bad


@pytest.mark.parametrize("source", ["from ..backends.base import Executable",
                                    "from .. import backends",
                                    "import xla_explorer.backends.cpu"])
def test_an_import_of_the_backends_is_seen(source):
    assert backend_imports(source) == [1]
    assert not backend_imports(source.replace("backends", "codegen"))
