"""The layering of the package, read from its source (AST), not by importing it.

The code generator and the viewers read what the passes decided through small helper modules
(`passes/kinds.py`, `passes/dataflow.py`), never a pass's internals, nor any module's private
names; the scheduler asks the dataflow analysis, not buffer assignment; and no two modules
import each other at load time.
"""
from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[2] / "xla_explorer"

# What codegen and viz may import from `xla_explorer.passes`: modules with no pass logic,
# written to be read by other layers. `base` holds Note and Stage (what a pass records for the
# viewer), `kinds` the fusion decision record and the kernel-kind and row predicates,
# `dataflow` which buffers each value is made of, `names` how passes name instructions (a
# clone's traced name).
HELPER_MODULES = frozenset({"xla_explorer.passes.base", "xla_explorer.passes.dataflow",
                            "xla_explorer.passes.kinds", "xla_explorer.passes.names"})
# Buffer assignment's result, which the code generator lays its arena out from (as XLA's
# backends read a BufferAssignment): the result type, the buffer categories and buffer names.
# Nothing else of that pass.
PASS_RESULTS = {
    "xla_explorer.passes.buffer_assignment": frozenset({
        "BufferAssignment", "buffer_name", "PARAMETER", "CONSTANT", "OUTPUT", "TEMPORARY",
        "EAGER"}),
}


def module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}


def imports(path: Path, module_level_only: bool = False):
    """(imported module, imported name or None, line) for each import in the file; a relative
    import is resolved against the file's package. `from pkg import sub` names the submodule
    when `sub` is one."""
    tree = ast.parse(path.read_text(), str(path))
    here = module_name(path)
    package = here if path.name == "__init__.py" else here.rpartition(".")[0]
    nodes = tree.body if module_level_only else ast.walk(tree)
    for node in nodes:
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield alias.name, None, node.lineno
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[:len(package.split(".")) - node.level + 1]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            for alias in node.names:
                sub = f"{target}.{alias.name}"
                if sub in MODULES:
                    yield sub, None, node.lineno
                else:
                    yield target, alias.name, node.lineno


def files_under(*layers: str) -> list[Path]:
    return [p for layer in layers for p in sorted((PACKAGE / layer).rglob("*.py"))]


def rel(path: Path) -> str:
    return str(path.relative_to(PACKAGE.parent))


@pytest.mark.parametrize("path", files_under("codegen", "viz"), ids=rel)
def test_codegen_and_viz_import_no_pass_internals(path):
    bad = []
    for target, name, line in imports(path):
        if not target.startswith("xla_explorer.passes.") or target in HELPER_MODULES:
            continue
        if name is not None and name in PASS_RESULTS.get(target, ()):
            continue
        bad.append(f"{rel(path)}:{line} imports {name or '(the module)'} from {target}")
    assert not bad, "\n".join(bad)


@pytest.mark.parametrize("path", files_under("codegen", "viz"), ids=rel)
def test_codegen_and_viz_import_no_private_names(path):
    here = module_name(path)
    bad = [f"{rel(path)}:{line} imports {name} from {target}"
           for target, name, line in imports(path)
           if target.startswith("xla_explorer") and target != here
           and name is not None and name.startswith("_")]
    assert not bad, "\n".join(bad)


def test_schedule_asks_dataflow_not_buffer_assignment():
    targets = {t for t, _, _ in imports(PACKAGE / "passes" / "schedule.py")}
    assert "xla_explorer.passes.buffer_assignment" not in targets
    assert "xla_explorer.passes.dataflow" in targets


def test_helper_modules_import_no_pass():
    # Importing kinds or dataflow must not load a pass: that is what makes them safe to read
    # from codegen and viz.
    for helper in HELPER_MODULES:
        for target, _, _ in imports(MODULES[helper]):
            if target.startswith("xla_explorer.passes."):
                assert target in HELPER_MODULES, f"{helper} imports {target}"


def test_no_import_cycles_at_load_time():
    # Module-level imports only: an import inside a function runs after both modules loaded.
    graph = {m: {t for t, _, _ in imports(p, module_level_only=True) if t in MODULES}
             for m, p in MODULES.items()}
    state: dict[str, int] = {}  # 1 while on the stack, 2 when done

    def visit(m, stack):
        state[m] = 1
        stack.append(m)
        for t in sorted(graph[m]):
            if state.get(t) == 1:
                raise AssertionError("import cycle: " + " -> ".join(stack[stack.index(t):] + [t]))
            if t not in state:
                visit(t, stack)
        stack.pop()
        state[m] = 2

    for m in sorted(graph):
        if m not in state:
            visit(m, [])
