"""No import cycles: the `import` and `from ... import` statements of a package's modules,
read from their source (those inside functions too: a lazy import only defers a cycle), make a
graph that must have none.

Imports under `if TYPE_CHECKING:` are for annotations only and never run, so they are not
edges. An edge goes to the module a statement names (`from .registry import lowers` to
`registry`, `from . import numpy` to the subpackage), and to the packages Python runs on the way
there, except those that hold the importing module: it is already inside them, and otherwise
every package whose `__init__` imports its own modules would be a cycle.
"""
from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

PACKAGES = ["xla_explorer"]

def package_modules(package: str, root: Path = ROOT) -> dict[str, Path]:
    """Dotted module name -> source file, for every module in `package` (packages by their
    __init__)."""
    modules = {}
    for path in sorted(root.joinpath(*package.split(".")).rglob("*.py")):
        parts = path.relative_to(root).with_suffix("").parts
        if parts[-1] == "__init__":
            parts = parts[:-1]
        modules[".".join(parts)] = path
    return modules


def _absolute(module: str, is_package: bool, node: ast.ImportFrom) -> str:
    """The module a `from ... import` names, relative levels resolved against `module`."""
    if not node.level:
        return node.module or ""
    parts = module.split(".") if is_package else module.split(".")[:-1]
    parts = parts[:len(parts) - (node.level - 1)]
    return ".".join(parts + ([node.module] if node.module else []))


def _is_type_checking(node: ast.AST) -> bool:
    """`if TYPE_CHECKING:` or `if typing.TYPE_CHECKING:`."""
    if not isinstance(node, ast.If):
        return False
    test = node.test
    return ((isinstance(test, ast.Name) and test.id == "TYPE_CHECKING")
            or (isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"))


def imported_modules(module: str, path: Path, known: set[str]) -> set[str]:
    """The modules of `known` that `module`'s source imports, anywhere in the file."""
    found = set()
    tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    type_only = {id(n) for block in ast.walk(tree) if _is_type_checking(block)
                 for stmt in block.body for n in ast.walk(stmt)}
    for node in ast.walk(tree):
        if id(node) in type_only:
            continue
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = _absolute(module, path.name == "__init__.py", node)
            submodules = {f"{base}.{alias.name}" for alias in node.names} & known
            found.update(submodules)
            if len(submodules) < len(node.names):  # some names are the base's attributes
                found.add(base)
    return ((found | _outer_packages(found, module)) & known) - {module}


def _outer_packages(names: set[str], module: str) -> set[str]:
    """The packages Python runs on the way to `names` that do not hold `module` (those it is
    already inside): importing `..trace.numpy.eager_calls` from `runtime.reference` first runs
    `trace/__init__.py`, which imports every lowering."""
    inside = {".".join(module.split(".")[:i]) for i in range(1, module.count(".") + 2)}
    return {".".join(name.split(".")[:i]) for name in names
            for i in range(1, name.count(".") + 1)} - inside


def import_graph(package: str, root: Path = ROOT) -> dict[str, set[str]]:
    modules = package_modules(package, root)
    return {name: imported_modules(name, path, set(modules)) for name, path in modules.items()}


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """One cycle (a path back to its start) per strongly connected group of modules."""
    return [_cycle_in(graph, group) for group in strongly_connected(graph)]


def strongly_connected(graph: dict[str, set[str]]) -> list[set[str]]:
    """The groups of two or more modules each of which imports every other, maybe through
    others."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    groups: list[set[str]] = []

    def visit(v: str) -> None:  # Tarjan's algorithm
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = set()
            while True:
                w = stack.pop()
                group.add(w)
                if w == v:
                    break
            if len(group) > 1:
                groups.append(group)

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return groups


def _cycle_in(graph: dict[str, set[str]], group: set[str]) -> list[str]:
    """A path from the group's first module back to itself, inside the group."""
    start = min(group)
    paths = {start: [start]}
    frontier = [start]
    while frontier:
        nxt = []
        for v in frontier:
            for w in sorted(graph[v] & group):
                if w == start:
                    return paths[v] + [start]
                if w not in paths:
                    paths[w] = paths[v] + [w]
                    nxt.append(w)
        frontier = nxt
    raise AssertionError("a strongly connected group without a cycle")


@pytest.mark.parametrize("package", PACKAGES)
def test_no_import_cycles(package):
    graph = import_graph(package)
    found = strongly_connected(graph)
    assert not found, "import cycles:\n" + "\n".join(" -> ".join(_cycle_in(graph, g))
                                                      for g in found)


# -- the checker itself ------------------------------------------------------------------------


def test_cycles_finds_a_cycle_and_nothing_else():
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}, "e": set()}
    assert cycles(graph) == [["a", "b", "c", "a"]]
    assert cycles({"a": {"b"}, "b": set()}) == []


def test_the_walker_sees_imports_inside_functions(tmp_path):
    pkg = tmp_path / "pkg"
    (pkg / "sub").mkdir(parents=True)
    (pkg / "__init__.py").write_text("from . import sub\n")
    (pkg / "sub" / "__init__.py").write_text("from .low import f\n")
    (pkg / "sub" / "low.py").write_text("from ..top import g\n\ndef f():\n    pass\n")
    (pkg / "top.py").write_text("def g():\n    from .sub import low\n    return low\n")
    graph = import_graph("pkg", tmp_path)
    assert graph == {"pkg": {"pkg.sub"}, "pkg.sub": {"pkg.sub.low"},
                     "pkg.sub.low": {"pkg.top"}, "pkg.top": {"pkg.sub", "pkg.sub.low"}}
    assert cycles(graph) == [["pkg.sub", "pkg.sub.low", "pkg.top", "pkg.sub"]]


def test_an_import_runs_the_packages_on_its_way(tmp_path):
    # low imports lib.helpers, and so runs lib/__init__.py, which imports high, which imports
    # low: a cycle, though no module imports another that imports it back by name.
    pkg = tmp_path / "pkg"
    (pkg / "lib").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "lib" / "__init__.py").write_text("from .high import h\n")
    (pkg / "lib" / "helpers.py").write_text("")
    (pkg / "lib" / "high.py").write_text("from ..low import f\n\ndef h():\n    pass\n")
    (pkg / "low.py").write_text("def f():\n    from .lib.helpers import x\n")
    graph = import_graph("pkg", tmp_path)
    assert graph["pkg.low"] == {"pkg.lib", "pkg.lib.helpers"}
    assert graph["pkg.lib.high"] == {"pkg.low"}  # pkg.lib holds it: not an edge
    assert cycles(graph) == [["pkg.lib", "pkg.lib.high", "pkg.low", "pkg.lib"]]


def test_an_import_for_annotations_only_is_not_an_edge(tmp_path):
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "a.py").write_text("def f():\n    from .b import g\n")
    (pkg / "b.py").write_text("from typing import TYPE_CHECKING\n\nif TYPE_CHECKING:\n"
                              "    from .a import f\n")
    assert import_graph("pkg", tmp_path) == {"pkg": set(), "pkg.a": {"pkg.b"},
                                             "pkg.b": set()}


@pytest.mark.parametrize("package", PACKAGES)
def test_no_module_imports_another_modules_private_names(package):
    """A name starting with `_` is its module's own business: another module that needs it
    needs a public helper."""
    modules = package_modules(package)
    found = []
    for name, path in modules.items():
        tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.module != "__future__":
                base = _absolute(name, path.name == "__init__.py", node)
                if base.split(".")[0] != package.split(".")[0]:
                    continue  # another package's (NumPy's, Numba's) business
                found += [f"{name}: {alias.name} from {base}" for alias in node.names
                          if alias.name.startswith("_") and not alias.name.startswith("__")]
    assert not found, "private names imported:\n" + "\n".join(found)


def test_importing_the_package_leaves_numba_unloaded():
    # Numba takes most of a second to import: only compiling for a target should pay it.
    import subprocess
    import sys

    code = "import sys, xla_explorer; print('numba' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout.strip()
    assert out == "False"


def test_the_cpu_backend_starts_numba_without_scipy_unless_a_compile_thread_may_be():
    # What `%load_ext xla_explorer` runs while the kernel is idle: Numba imported and its
    # NumPy implementations loaded, SciPy's linear algebra left out (codegen/numba_start.py);
    # nothing while a thread of ours (a tiered compile) may be importing Numba itself.
    import subprocess
    import sys

    code = ("import sys, threading, xla_explorer\n"
            "from xla_explorer.backends import get_backend\n"
            "busy = threading.Event()\n"
            "t = threading.Thread(target=busy.wait, name='xla-explorer: compiling f')\n"
            "t.start()\n"
            "get_backend('cpu').start()\n"
            "print('numba' in sys.modules)\n"
            "busy.set(); t.join()\n"
            "get_backend('cpu').start()\n"
            "print('numba.np.arraymath' in sys.modules, 'scipy.linalg' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout.split()
    assert out == ["False", "True", "False"]
